package trial;

import io.grpc.Context;
import io.grpc.Deadline;
import io.grpc.Server;
import io.grpc.ServerBuilder;
import io.grpc.stub.StreamObserver;
import io.spillway.api.RequestBudget;
import io.spillway.grpc.SpillwayGrpc;
import io.spillway.grpc.SpillwayGrpcServer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import trial.proto.BackendGrpc;
import trial.proto.Result;
import trial.proto.Work;

/** args: name port workMicros sloMs */
public final class Backend extends BackendGrpc.BackendImplBase {
  final String name; final long workMicros; final Stats stats;

  Backend(String name, long workMicros, Stats stats) { this.name = name; this.workMicros = workMicros; this.stats = stats; }

  static long deadlineNs() {
    Deadline d = Context.current().getDeadline();
    return d == null ? -1 : d.timeRemaining(TimeUnit.NANOSECONDS);
  }

  static long budgetNs() {
    RequestBudget b = RequestBudget.currentOrNull();
    return b == null ? -1 : b.remainingNanos();
  }

  Result one(Work w, long dl, long bud) {
    long v = Cpu.work(workMicros + w.getExtraNs() / 1000);
    if (w.getHoldMs() > 0) {
      try { Thread.sleep(w.getHoldMs()); } catch (InterruptedException e) { Thread.currentThread().interrupt(); }
    }
    return Result.newBuilder().setValue(v).setBackend(name).setBackendDeadlineNs(dl).setBackendBudgetNs(bud).build();
  }

  @Override public void compute(Work w, StreamObserver<Result> out) {
    stats.handlerStarts.increment();
    try {
      Result r = one(w, deadlineNs(), budgetNs());
      out.onNext(r);
      out.onCompleted();
    } finally { stats.handlerEnds.increment(); }
  }

  @Override public void computeStream(Work w, StreamObserver<Result> out) {
    stats.handlerStarts.increment();
    try {
      long dl = deadlineNs(), bud = budgetNs();
      for (int i = 0; i < Math.max(1, w.getCount()); i++) {
        if (Context.current().isCancelled()) { return; }
        out.onNext(one(w, dl, bud));
      }
      out.onCompleted();
    } finally { stats.handlerEnds.increment(); }
  }

  @Override public StreamObserver<Work> chat(StreamObserver<Result> out) {
    stats.handlerStarts.increment();
    return new StreamObserver<>() {
      @Override public void onNext(Work w) { out.onNext(one(w, deadlineNs(), budgetNs())); }
      @Override public void onError(Throwable t) { stats.handlerEnds.increment(); }
      @Override public void onCompleted() { out.onCompleted(); stats.handlerEnds.increment(); }
    };
  }

  public static void main(String[] args) throws Exception {
    String name = args[0]; int port = Integer.parseInt(args[1]); long work = Long.parseLong(args[2]);
    long sloMs = Long.parseLong(args[3]);
    Cpu.calibrate();
    Stats stats = new Stats();
    // the README's quick start, with the team's service and the gate's metrics
    ServerBuilder<?> builder = ServerBuilder.forPort(port).addService(new Backend(name, work, stats));
    SpillwayGrpcServer spillway = SpillwayGrpc.server().slo(Duration.ofMillis(sloMs)).metrics(stats).install(builder);
    Server server = builder.build().start();
    stats.writeEvery(Path.of(System.getProperty("stats", System.getProperty("trial.run", "run") + "/" + name + ".stats")));
    System.out.println(name + " listening on " + server.getPort() + " workers=" + spillway.workers());
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      spillway.stopCreditStreams(); server.shutdown();
      try { server.awaitTermination(5, TimeUnit.SECONDS); } catch (InterruptedException e) { }
      spillway.close();
    }));
    server.awaitTermination();
  }
}
