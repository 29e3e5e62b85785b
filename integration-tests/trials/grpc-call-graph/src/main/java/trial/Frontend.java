package trial;

import io.grpc.Channel;
import io.grpc.ClientInterceptors;
import io.grpc.Context;
import io.grpc.Server;
import io.grpc.ServerBuilder;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.grpc.stub.StreamObserver;
import io.spillway.grpc.SpillwayBalancedChannel;
import io.spillway.grpc.SpillwayGrpc;
import io.spillway.grpc.SpillwayGrpcServer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Iterator;
import java.util.concurrent.TimeUnit;
import trial.proto.BackendGrpc;
import trial.proto.FrontendGrpc;
import trial.proto.Result;
import trial.proto.Work;

/** args: port sloMs backends(host:p,host:p) frontWorkMicros */
public final class Frontend extends FrontendGrpc.FrontendImplBase {
  final Channel backends; final long workMicros; final Stats stats;

  Frontend(Channel backends, long workMicros, Stats stats) { this.backends = backends; this.workMicros = workMicros; this.stats = stats; }

  Result stamp(Result r, long dl, long bud) {
    return r.toBuilder().setFrontendDeadlineNs(dl).setFrontendBudgetNs(bud).build();
  }

  @Override public void handle(Work w, StreamObserver<Result> out) {
    stats.handlerStarts.increment();
    try {
      long dl = Backend.deadlineNs(), bud = Backend.budgetNs();
      Cpu.work(workMicros);
      if (w.getFrontHoldMs() > 0) {
        try { Thread.sleep(w.getFrontHoldMs()); } catch (InterruptedException e) { Thread.currentThread().interrupt(); }
      }
      stats.backendCalls.increment();
      Result r;
      try {
        r = BackendGrpc.newBlockingStub(backends).compute(w);
        stats.backendStatus.computeIfAbsent("OK", k -> new java.util.concurrent.atomic.LongAdder()).increment();
      } catch (StatusRuntimeException e) {
        stats.backendStatus.computeIfAbsent(e.getStatus().getCode().name(), k -> new java.util.concurrent.atomic.LongAdder()).increment();
        out.onError(e); // pass the backend's answer on, as a team would
        return;
      } finally { stats.backendCallEnds.increment(); }
      out.onNext(stamp(r, dl, bud));
      out.onCompleted();
    } finally { stats.handlerEnds.increment(); }
  }

  @Override public void handleStream(Work w, StreamObserver<Result> out) {
    stats.handlerStarts.increment();
    try {
      long dl = Backend.deadlineNs(), bud = Backend.budgetNs();
      Cpu.work(workMicros);
      stats.backendCalls.increment();
      try {
        Iterator<Result> it = BackendGrpc.newBlockingStub(backends).computeStream(w);
        while (it.hasNext()) out.onNext(stamp(it.next(), dl, bud));
        out.onCompleted();
      } catch (StatusRuntimeException e) {
        stats.backendStatus.computeIfAbsent("stream-" + e.getStatus().getCode().name(), k -> new java.util.concurrent.atomic.LongAdder()).increment();
        out.onError(e);
      } finally { stats.backendCallEnds.increment(); }
    } finally { stats.handlerEnds.increment(); }
  }

  @Override public StreamObserver<Work> chat(StreamObserver<Result> out) {
    stats.handlerStarts.increment();
    stats.backendCalls.increment();
    java.util.concurrent.atomic.AtomicBoolean ended = new java.util.concurrent.atomic.AtomicBoolean();
    Runnable end = () -> { if (ended.compareAndSet(false, true)) { stats.backendCallEnds.increment(); stats.handlerEnds.increment(); } };
    StreamObserver<Work> toBackend = BackendGrpc.newStub(backends).chat(new StreamObserver<Result>() {
      @Override public void onNext(Result r) { synchronized (out) { out.onNext(r); } }
      @Override public void onError(Throwable t) {
        stats.backendStatus.computeIfAbsent("chat-" + io.grpc.Status.fromThrowable(t).getCode().name(), k -> new java.util.concurrent.atomic.LongAdder()).increment();
        try { synchronized (out) { out.onError(t); } } catch (RuntimeException ignored) { }
        end.run();
      }
      @Override public void onCompleted() { synchronized (out) { out.onCompleted(); } end.run(); }
    });
    return new StreamObserver<>() {
      @Override public void onNext(Work w) { Cpu.work(workMicros); toBackend.onNext(w); }
      @Override public void onError(Throwable t) { toBackend.onError(t); end.run(); }
      @Override public void onCompleted() { toBackend.onCompleted(); }
    };
  }

  public static void main(String[] args) throws Exception {
    int port = Integer.parseInt(args[0]); long sloMs = Long.parseLong(args[1]);
    String targets = args[2]; long work = Long.parseLong(args[3]);
    Cpu.calibrate();
    Stats stats = new Stats();
    // several backends: one session per backend (overload-grpc/README.md, "Clients")
    SpillwayBalancedChannel balanced = SpillwayGrpc.balanced().slo(Duration.ofMillis(sloMs)).target(targets).build();
    Channel base = balanced;
    if (Boolean.getBoolean("plainBackends")) { // a plain round_robin channel, no sessions
      base = io.grpc.ManagedChannelBuilder.forTarget(targets.split(",")[0]).usePlaintext().build();
    }
    // inside a service that calls other services: downstream() on the channels to the callees
    Channel toBackends = ClientInterceptors.intercept(base, SpillwayGrpc.downstream().build());
    ServerBuilder<?> builder = ServerBuilder.forPort(port).addService(new Frontend(toBackends, work, stats));
    SpillwayGrpcServer spillway = SpillwayGrpc.server().slo(Duration.ofMillis(sloMs)).metrics(stats).install(builder);
    Server server = builder.build().start();
    stats.writeEvery(Path.of(System.getProperty("stats", System.getProperty("trial.run", "run") + "/frontend.stats")));
    Thread.ofPlatform().daemon().start(() -> {
      while (true) {
        try {
          StringBuilder b = new StringBuilder();
          balanced.sessions().forEach(s -> b.append(" session ").append(s.sessionId()).append(" queued=").append(s.queued()));
          java.nio.file.Files.writeString(Path.of(System.getProperty("trial.run", "run") + "/frontend.sessions"), "calls=" + balanced.calls() + " retries=" + balanced.retries() + b + "\n");
          Thread.sleep(100);
        } catch (Exception e) { return; }
      }
    });
    System.out.println("frontend listening on " + server.getPort() + " workers=" + spillway.workers());
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      spillway.stopCreditStreams(); server.shutdown();
      try { server.awaitTermination(5, TimeUnit.SECONDS); } catch (InterruptedException e) { }
      spillway.close(); balanced.close();
    }));
    server.awaitTermination();
  }
}
