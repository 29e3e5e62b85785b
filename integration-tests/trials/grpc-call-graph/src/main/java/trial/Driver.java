package trial;

import io.grpc.CallOptions;
import io.grpc.ClientStreamTracer;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.grpc.stub.StreamObserver;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import trial.proto.FrontendGrpc;
import trial.proto.Result;
import trial.proto.Work;

public final class Driver {
  static String stats(String name) throws Exception {
    return Files.readString(Path.of(System.getProperty("trial.run", "run") + "/" + name + ".stats")).strip();
  }
  static void dump(String when) throws Exception {
    System.out.println("-- " + when);
    for (String n : new String[] {"frontend", "b1", "b2"}) {
      Path p = Path.of(System.getProperty("trial.run", "run") + "/" + n + ".stats");
      if (Files.exists(p)) System.out.println("   " + n + ": " + stats(n));
    }
    Path s = Path.of(System.getProperty("trial.run", "run") + "/frontend.sessions");
    if (Files.exists(s)) System.out.println("   sessions: " + Files.readString(s).strip());
  }

  static String trailers(Metadata t) {
    if (t == null) return "{}";
    StringBuilder b = new StringBuilder("{");
    for (String k : t.keys()) {
      if (k.endsWith("-bin")) continue;
      List<String> vs = new ArrayList<>();
      t.getAll(Metadata.Key.of(k, Metadata.ASCII_STRING_MARSHALLER)).forEach(vs::add);
      b.append(k).append('=').append(vs).append(' ');
    }
    return b.append('}').toString();
  }

  public static void main(String[] args) throws Exception {
    String mode = args[0];
    int port = Integer.parseInt(System.getProperty("port", "7000"));
    ManagedChannelBuilder<?> cb = ManagedChannelBuilder.forAddress("localhost", port).usePlaintext();
    if (Boolean.getBoolean("retry")) {
      Map<String, Object> policy = Map.of("maxAttempts", 3.0, "initialBackoff", "0.01s", "maxBackoff", "0.1s",
          "backoffMultiplier", 2.0, "retryableStatusCodes", List.of("RESOURCE_EXHAUSTED"));
      Map<String, Object> config = Map.of("methodConfig", List.of(Map.of(
          "name", List.of(Map.of("service", "trial.Frontend")), "retryPolicy", policy)));
      cb.defaultServiceConfig(config).enableRetry();
    }
    ManagedChannel ch = cb.build();
    var blocking = FrontendGrpc.newBlockingStub(ch);
    var async = FrontendGrpc.newStub(ch);
    Cpu.calibrate();
    for (int i = 0; i < Integer.getInteger("warm", 300); i++) {
      try { blocking.handle(Work.getDefaultInstance()); } catch (StatusRuntimeException e) { }
    }
    switch (mode) {
      case "probe" -> { // deadlineMs frontHoldMs backHoldMs n
        long dl = Long.parseLong(args[1]); long hold = Long.parseLong(args[2]); long bhold = Long.parseLong(args[3]); int n = Integer.parseInt(args[4]);
        dump("before");
        for (int i = 0; i < n; i++) {
          Metadata[] tr = new Metadata[1];
          AtomicInteger attempts = new AtomicInteger();
          List<Long> starts = new ArrayList<>();
          long t0 = System.nanoTime();
          ClientStreamTracer.Factory tracer = new ClientStreamTracer.Factory() {
            @Override public ClientStreamTracer newClientStreamTracer(ClientStreamTracer.StreamInfo info, Metadata h) {
              attempts.incrementAndGet(); synchronized (starts) { starts.add((System.nanoTime() - t0) / 1000); }
              return new ClientStreamTracer() { };
            }
          };
          var stub = blocking.withInterceptors(new io.grpc.ClientInterceptor() {
            @Override public <Q, R> io.grpc.ClientCall<Q, R> interceptCall(io.grpc.MethodDescriptor<Q, R> m, CallOptions o, io.grpc.Channel next) {
              return next.newCall(m, o.withStreamTracerFactory(tracer));
            }
          });
          if (dl > 0) stub = stub.withDeadlineAfter(dl, TimeUnit.MILLISECONDS);
          try {
            Result r = stub.handle(Work.newBuilder().setFrontHoldMs(hold).setHoldMs(bhold).build());
            System.out.printf("OK %d us attempts=%d at=%s frontend{deadline=%d us budget=%d us} backend %s {deadline=%d us budget=%d us}%n",
                (System.nanoTime() - t0) / 1000, attempts.get(), starts,
                r.getFrontendDeadlineNs() / 1000, r.getFrontendBudgetNs() / 1000, r.getBackend(), r.getBackendDeadlineNs() / 1000, r.getBackendBudgetNs() / 1000);
          } catch (StatusRuntimeException e) {
            System.out.printf("%s %d us attempts=%d at=%s \"%s\" trailers=%s%n", e.getStatus().getCode(), (System.nanoTime() - t0) / 1000,
                attempts.get(), starts, e.getStatus().getDescription(), trailers(e.getTrailers()));
          }
        }
        Thread.sleep(300);
        dump("after");
      }
      case "cancel" -> { // n afterMs holdMs [method]
        int n = Integer.parseInt(args[1]); long after = Long.parseLong(args[2]); long hold = Long.parseLong(args[3]);
        String method = args.length > 4 ? args[4] : "unary";
        dump("before");
        CountDownLatch done = new CountDownLatch(n);
        Map<String, LongAdder> codes = new ConcurrentHashMap<>();
        List<ClientCallStreamObserver<?>> calls = new ArrayList<>();
        for (int i = 0; i < n; i++) {
          Work w = Work.newBuilder().setHoldMs(hold).setCount(1000).build();
          ClientResponseObserver<Work, Result> obs = new ClientResponseObserver<>() {
            @Override public void beforeStart(ClientCallStreamObserver<Work> s) { synchronized (calls) { calls.add(s); } }
            @Override public void onNext(Result r) { }
            @Override public void onError(Throwable t) { codes.computeIfAbsent(Status.fromThrowable(t).getCode().name(), k -> new LongAdder()).increment(); done.countDown(); }
            @Override public void onCompleted() { codes.computeIfAbsent("OK", k -> new LongAdder()).increment(); done.countDown(); }
          };
          switch (method) {
            case "unary" -> async.handle(w, obs);
            case "stream" -> async.handleStream(w, obs);
            default -> { var req = async.chat(obs); req.onNext(w); }
          }
        }
        Thread.sleep(after);
        dump("at cancel");
        synchronized (calls) { for (var c : calls) c.cancel("driver cancels", null); }
        done.await(10, TimeUnit.SECONDS);
        System.out.println("codes " + codes);
        Thread.sleep(Long.getLong("settle", 2000));
        dump("after settle");
      }
      case "stream" -> { // count holdMs pauseMs  (server stream observed while it runs)
        int count = Integer.parseInt(args[1]); long hold = Long.parseLong(args[2]);
        dump("before");
        var it = blocking.handleStream(Work.newBuilder().setCount(count).setHoldMs(hold).build());
        int got = 0;
        while (it.hasNext()) { it.next(); got++; if (got == count / 2) dump("mid-stream after " + got); }
        Thread.sleep(300);
        dump("after " + got + " messages");
      }
      case "chat" -> { // messages pauseMs
        int n = Integer.parseInt(args[1]); long pause = Long.parseLong(args[2]);
        dump("before");
        CountDownLatch done = new CountDownLatch(1);
        AtomicInteger got = new AtomicInteger();
        StreamObserver<Work> req = async.chat(new StreamObserver<>() {
          @Override public void onNext(Result r) { got.incrementAndGet(); }
          @Override public void onError(Throwable t) { System.out.println("chat error " + Status.fromThrowable(t)); done.countDown(); }
          @Override public void onCompleted() { done.countDown(); }
        });
        for (int i = 0; i < n; i++) {
          req.onNext(Work.getDefaultInstance());
          Thread.sleep(pause);
          if (i == n / 2) dump("mid-chat after " + got.get() + " replies");
        }
        req.onCompleted();
        done.await(10, TimeUnit.SECONDS);
        Thread.sleep(300);
        dump("after chat, " + got.get() + " replies");
      }
      case "hold" -> { // streams kind(stream|chat) unaryCalls : K long streams open, then unary calls beside them
        int k = Integer.parseInt(args[1]); String kind = args[2]; int m = Integer.parseInt(args[3]);
        dump("before");
        List<ClientCallStreamObserver<?>> calls = new ArrayList<>();
        Map<String, LongAdder> streamCodes = new ConcurrentHashMap<>();
        AtomicInteger msgs = new AtomicInteger();
        for (int i = 0; i < k; i++) {
          ClientResponseObserver<Work, Result> obs = new ClientResponseObserver<>() {
            @Override public void beforeStart(ClientCallStreamObserver<Work> s) { synchronized (calls) { calls.add(s); } }
            @Override public void onNext(Result r) { msgs.incrementAndGet(); }
            @Override public void onError(Throwable t) { streamCodes.computeIfAbsent(Status.fromThrowable(t).getCode().name() + " " + Status.fromThrowable(t).getDescription(), x -> new LongAdder()).increment(); }
            @Override public void onCompleted() { streamCodes.computeIfAbsent("OK", x -> new LongAdder()).increment(); }
          };
          Thread.sleep(Long.getLong("spacing", 0));
          if (kind.equals("stream")) async.handleStream(Work.newBuilder().setCount(400).setHoldMs(20).build(), obs);
          else { var req = async.chat(obs); req.onNext(Work.getDefaultInstance()); }
        }
        Thread.sleep(500);
        dump("streams open, " + msgs.get() + " stream messages so far");
        Map<String, LongAdder> codes = new TreeMap<>();
        long t0 = System.nanoTime();
        for (int i = 0; i < m; i++) {
          try { blocking.withDeadlineAfter(1, TimeUnit.SECONDS).handle(Work.getDefaultInstance()); codes.computeIfAbsent("OK", x -> new LongAdder()).increment(); }
          catch (StatusRuntimeException e) { codes.computeIfAbsent(e.getStatus().getCode() + " " + e.getStatus().getDescription(), x -> new LongAdder()).increment(); }
        }
        System.out.printf("unary beside %d open %s: %s in %d ms%n", k, kind, codes, (System.nanoTime() - t0) / 1_000_000);
        dump("after unary calls");
        synchronized (calls) { for (var c : calls) c.cancel("done", null); }
        Thread.sleep(1000);
        System.out.println("streams: " + streamCodes);
        dump("after cancelling the streams");
      }
      default -> throw new IllegalArgumentException(mode);
    }
    ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
  }
}
