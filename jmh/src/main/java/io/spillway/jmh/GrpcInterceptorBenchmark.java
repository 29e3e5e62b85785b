package io.spillway.jmh;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptors;
import io.grpc.ConnectivityState;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.NoControl;
import io.spillway.api.OverloadScheme;
import io.spillway.credit.Breakwater;
import io.spillway.credit.BreakwaterConfig;
import io.spillway.grpc.InterfaceRegistry;
import io.spillway.grpc.SpillwayClientInterceptor;
import io.spillway.grpc.SpillwayContext;
import io.spillway.grpc.SpillwayGrpc;
import io.spillway.grpc.SpillwayGrpcServer;
import io.spillway.grpc.SpillwayMetadata;
import io.spillway.price.Rajomon;
import io.spillway.price.RajomonConfig;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Deque;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The latency Spillway's gRPC interceptors add per hop at low load: one unary echo of 16
 * bytes at a time, over a real loopback gRPC connection (grpc-netty-shaded, plaintext, one server,
 * one channel, direct executors on both ends), the JMH thread blocking on each answer. SampleTime
 * mode, so the output has the p0.50 / p0.99 of single calls. Wirings, all in the same run:
 *
 * <ul>
 *   <li>{@code plain}: no interceptors, the baseline;
 *   <li>{@code none}: {@link SpillwayGrpc#server} and {@link SpillwayGrpc#client} with
 *       {@link NoControl}, so the cost of the interceptors and the metadata plumbing alone;
 *   <li>{@code breakwater}: the same with Breakwater (credits, the control service bound, the
 *       session's {@code spillway.Control/Credits} stream open);
 *   <li>{@code breakwater-perbackend}: Breakwater with the client channel built as a
 *       load-balancing channel ({@code dns:///} target, one backend here) and
 *       {@link io.spillway.grpc.PerBackendSessions} installed: the cost of choosing the backend
 *       before the session and routing the call to its subchannel;
 *   <li>{@code rajomon}: the same with Rajomon (tokens and prices);
 *   <li>{@code plain-2hop}: client → A → B, A's handler forwarding the request to B over its own
 *       channel, no interceptors: the two-hop baseline;
 *   <li>{@code rajomon-2hop}: the same graph with Rajomon at A and B and
 *       {@link SpillwayGrpc#downstream()} on A's channel to B (tokens passed on, B's price
 *       reported to A's gate).
 * </ul>
 *
 * <p>The SLO is 10 ms, far above a loopback round trip, so no scheme has a reason to reject or
 * queue a call at one call at a time. The setup checks that this holds and that the wiring is what
 * it claims to be. It connects the channels, warms up until 500 calls in a row return OK (only
 * Breakwater's cold-start expiry in the client queue is tolerated there, counted and printed; see
 * {@link #warmUp}), then makes 200 calls on the measured channel and fails unless every one
 * returns OK with the payload echoed, the server handlers (A's and B's) run inside a
 * {@link SpillwayContext} exactly when Spillway is wired (with the client's session id where a
 * client session sent the call), and the answers carry {@code spillway-status: 0} exactly then.
 * A measured call that does not return OK throws, which fails the benchmark.
 *
 * <p>Run: {@code ./spillway jmh GrpcInterceptorBenchmark -f 2 -wi 5 -i 5 -w 2s -r 2s}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 5, time = 2)
@Measurement(iterations = 5, time = 2)
// Native access for grpc-netty-shaded's epoll library, whatever JVM launched JMH: without it the
// fork warns, and where native access is denied (--illegal-native-access=deny) gRPC falls back to
// NIO, a different transport from the one these numbers are for.
@Fork(value = 2, jvmArgsAppend = {"-Xms512m", "-Xmx512m", "--enable-native-access=ALL-UNNAMED"})
public class GrpcInterceptorBenchmark {

  static final long SLO_NANOS = 10_000_000;
  static final long RTT_NANOS = 100_000;
  static final int PAYLOAD_BYTES = 16;
  static final int CHECK_CALLS = 200;
  static final int WARM_CALLS = 500;
  static final long SESSION_ID = 1;

  /** A byte[] passed through as is: no protobuf. */
  static final MethodDescriptor.Marshaller<byte[]> BYTES = new MethodDescriptor.Marshaller<>() {
    @Override
    public InputStream stream(byte[] value) {
      return new ByteArrayInputStream(value);
    }

    @Override
    public byte[] parse(InputStream stream) {
      try {
        return stream.readAllBytes();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  };

  /** B's method (the only server in one-hop wirings): echo the request. */
  static final MethodDescriptor<byte[], byte[]> ECHO = unary("spillway.bench.Echo", "Echo");
  /** A's method in two-hop wirings: forward the request to B, answer with B's answer. */
  static final MethodDescriptor<byte[], byte[]> FRONT = unary("spillway.bench.Front", "Call");

  @Param({"plain", "none", "breakwater", "breakwater-perbackend", "rajomon", "plain-2hop",
      "rajomon-2hop"})
  String wiring;

  private Channel channel;
  private MethodDescriptor<byte[], byte[]> method;
  private final byte[] payload = new byte[PAYLOAD_BYTES];
  /** Everything to close, last opened first. */
  private final Deque<AutoCloseable> closers = new ArrayDeque<>();

  // Only during the setup's check calls.
  private volatile boolean checking;
  private boolean spillwayWired;
  /** The client's sessions are generated (per backend): any session id but 0 is right. */
  private boolean anySession;
  private final Queue<String> problems = new ConcurrentLinkedQueue<>();

  @Setup(Level.Trial)
  public void setUp() throws Exception {
    Arrays.fill(payload, (byte) 7);
    OverloadScheme scheme = switch (wiring) {
      case "plain", "plain-2hop" -> null;
      case "none" -> NoControl.INSTANCE;
      case "breakwater", "breakwater-perbackend" ->
          Breakwater.of(BreakwaterConfig.forSlo(SLO_NANOS, RTT_NANOS));
      case "rajomon", "rajomon-2hop" -> Rajomon.of(RajomonConfig.forSlo(SLO_NANOS, RTT_NANOS));
      default -> throw new IllegalArgumentException("unknown wiring " + wiring);
    };
    spillwayWired = scheme != null;
    boolean twoHops = wiring.endsWith("-2hop");

    // B: the echo server.
    ServerServiceDefinition echo = ServerServiceDefinition.builder(ECHO.getServiceName())
        .addMethod(ECHO, ServerCalls.asyncUnaryCall(this::echo)).build();
    int portB = startServer(scheme, echo);

    int port = portB;
    method = ECHO;
    if (twoHops) {
      // A: forwards every call to B over its own channel.
      Channel toB = openChannel(portB);
      if (scheme != null) {
        toB = ClientInterceptors.intercept(toB, SpillwayGrpc.downstream()
            .callees(InterfaceRegistry.of(ECHO.getFullMethodName())).build());
      }
      Channel downstream = toB;
      ServerServiceDefinition front = ServerServiceDefinition.builder(FRONT.getServiceName())
          .addMethod(FRONT, ServerCalls.asyncUnaryCall(
              (byte[] req, StreamObserver<byte[]> out) -> forward(downstream, req, out)))
          .build();
      port = startServer(scheme, front);
      method = FRONT;
    }

    if (wiring.equals("breakwater-perbackend")) {
      NettyChannelBuilder builder = NettyChannelBuilder
          .forTarget("dns:///" + InetAddress.getLoopbackAddress().getHostAddress() + ":" + port)
          .usePlaintext().directExecutor();
      io.spillway.grpc.PerBackendSessions sessions = SpillwayGrpc.perBackend(scheme)
          .slo(java.time.Duration.ofNanos(SLO_NANOS)).build().install(builder);
      ManagedChannel ch = sessions.closeOnShutdown(builder.build());
      closers.push(() -> {
        ch.shutdownNow();
        ch.awaitTermination(5, TimeUnit.SECONDS);
      });
      closers.push(sessions);
      awaitReady(ch);
      channel = ch;
      anySession = true;
      warmUp();
      check();
      return;
    }
    channel = openChannel(port);
    if (scheme != null) {
      SpillwayClientInterceptor session =
          SpillwayGrpc.client(scheme).sessionId(SESSION_ID).sloNanos(SLO_NANOS).build();
      closers.push(session);
      channel = ClientInterceptors.intercept(channel, session);
    }
    warmUp();
    check();
  }

  @TearDown(Level.Trial)
  public void tearDown() throws Exception {
    while (!closers.isEmpty()) {
      closers.pop().close();
    }
  }

  @Benchmark
  public byte[] unaryCall() {
    return ClientCalls.blockingUnaryCall(channel, method, CallOptions.DEFAULT, payload);
  }

  // ---- servers ----

  private void echo(byte[] request, StreamObserver<byte[]> out) {
    if (checking) {
      expectContext("B", !wiring.endsWith("-2hop"));
    }
    out.onNext(request);
    out.onCompleted();
  }

  private void forward(Channel toB, byte[] request, StreamObserver<byte[]> out) {
    if (checking) {
      expectContext("A", true);
    }
    // Started in the handler's gRPC context, where the downstream interceptor finds the inbound
    // call's Spillway fields.
    ClientCall<byte[], byte[]> call = toB.newCall(ECHO, CallOptions.DEFAULT);
    call.start(new ClientCall.Listener<>() {
      private byte[] answer;

      @Override
      public void onMessage(byte[] message) {
        answer = message;
      }

      @Override
      public void onClose(Status status, Metadata trailers) {
        if (checking) {
          expectStatusTrailer("B's answer to A", trailers);
        }
        if (status.isOk() && answer != null) {
          out.onNext(answer);
          out.onCompleted();
        } else {
          out.onError(status.augmentDescription("A -> B").asRuntimeException());
        }
      }
    }, new Metadata());
    call.request(1);
    call.sendMessage(request);
    call.halfClose();
  }

  /** Starts a server on loopback with {@code service}, behind Spillway if {@code scheme} is set. */
  private int startServer(OverloadScheme scheme, ServerServiceDefinition service)
      throws IOException {
    NettyServerBuilder builder = NettyServerBuilder
        .forAddress(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
        .directExecutor();
    if (scheme == null) {
      builder.addService(service);
    } else {
      SpillwayGrpcServer spillway =
          SpillwayGrpc.server(scheme).queueDelay(QueueDelaySignal.NONE).build();
      closers.push(spillway);
      builder.addService(spillway.intercept(service)).addService(spillway.controlService());
    }
    Server server = builder.build().start();
    closers.push(() -> {
      server.shutdownNow();
      server.awaitTermination(5, TimeUnit.SECONDS);
    });
    return server.getPort();
  }

  private ManagedChannel openChannel(int port) throws InterruptedException {
    ManagedChannel ch = NettyChannelBuilder
        .forAddress(new InetSocketAddress(InetAddress.getLoopbackAddress(), port))
        .usePlaintext().directExecutor().build();
    closers.push(() -> {
      ch.shutdownNow();
      ch.awaitTermination(5, TimeUnit.SECONDS);
    });
    awaitReady(ch);
    return ch;
  }

  /**
   * Connects {@code ch} before any call. A channel connects lazily, on its first call; Breakwater's
   * client holds that call until its credit stream is acknowledged and expires it after half the
   * SLO (5 ms), which a cold connection plus class loading can exceed.
   */
  private static void awaitReady(ManagedChannel ch) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    ConnectivityState state;
    while ((state = ch.getState(true)) != ConnectivityState.READY) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("channel not ready after 10 s: " + state);
      }
      Thread.sleep(1);
    }
  }

  // ---- the setup's check ----

  /**
   * Warms the JVM and the session up until {@link #WARM_CALLS} calls in a row return OK. On a cold
   * JVM Breakwater's client expires its first calls: the session holds them until its credit
   * stream is acknowledged, and the first acknowledgement, all of it interpreted code, takes
   * longer than the client queue timeout (SLO / 2 = 5 ms). Only that failure is tolerated here; it
   * is counted and printed. Anything else fails the trial.
   */
  private void warmUp() throws Exception {
    int ok = 0;
    int expired = 0;
    int calls = 0;
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (ok < WARM_CALLS) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException(wiring + ": no " + WARM_CALLS + " OK calls in a row after "
            + calls + " calls in 30 s (" + expired + " expired in the client queue)");
      }
      calls++;
      try {
        callOnce();
        ok++;
      } catch (StatusRuntimeException e) {
        String description = e.getStatus().getDescription();
        if (e.getStatus().getCode() != Status.Code.RESOURCE_EXHAUSTED || description == null
            || !description.contains("expired in the client queue")) {
          throw new IllegalStateException(wiring + ": warm-up call " + calls + " failed", e);
        }
        expired++;
        ok = 0;
      }
    }
    System.out.println("# " + wiring + ": warm-up made " + calls + " calls, " + expired
        + " expired in the client queue");
  }

  /** Fails the trial unless the wiring answers every call OK and is wired as it claims. */
  private void check() throws Exception {
    checking = true;
    try {
      for (int i = 0; i < CHECK_CALLS; i++) {
        Metadata trailers;
        try {
          trailers = callOnce();
        } catch (StatusRuntimeException e) {
          throw new IllegalStateException(wiring + ": check call " + i + " did not return OK", e);
        }
        expectStatusTrailer("the answer to the client", trailers);
      }
    } finally {
      checking = false;
    }
    if (!problems.isEmpty()) {
      throw new IllegalStateException(wiring + ": wired wrong: " + problems.size()
          + " problems, the first: " + problems.peek());
    }
  }

  /**
   * One call on the measured channel, with a deadline; returns the trailers the application sees.
   *
   * @throws StatusRuntimeException if the call does not return OK
   */
  private Metadata callOnce() throws Exception {
    CompletableFuture<Metadata> done = new CompletableFuture<>();
    byte[][] answer = new byte[1][];
    ClientCall<byte[], byte[]> call = channel.newCall(method,
        CallOptions.DEFAULT.withDeadlineAfter(5, TimeUnit.SECONDS));
    call.start(new ClientCall.Listener<>() {
      @Override
      public void onMessage(byte[] message) {
        answer[0] = message;
      }

      @Override
      public void onClose(Status status, Metadata trailers) {
        if (status.isOk()) {
          done.complete(trailers);
        } else {
          done.completeExceptionally(status.asRuntimeException(trailers));
        }
      }
    }, new Metadata());
    call.request(1);
    call.sendMessage(payload);
    call.halfClose();
    Metadata trailers;
    try {
      trailers = done.get(10, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof StatusRuntimeException sre) {
        throw sre;
      }
      throw e;
    }
    if (!Arrays.equals(answer[0], payload)) {
      problems.add("the answer is not the payload echoed");
    }
    return trailers;
  }

  /** In a handler: a Spillway context exactly when Spillway is wired. */
  private void expectContext(String server, boolean fromClientSession) {
    SpillwayContext context = SpillwayContext.current();
    if (!spillwayWired) {
      if (context != null) {
        problems.add(server + " runs in a Spillway context in a plain wiring");
      }
    } else if (context == null) {
      problems.add(server + " runs outside a Spillway context: no server interceptor?");
    } else if (fromClientSession && (anySession ? context.sessionId() == 0
        : context.sessionId() != SESSION_ID)) {
      problems.add(server + " sees session " + context.sessionId() + ", not " + SESSION_ID);
    }
  }

  /** {@code spillway-status: 0} exactly when Spillway is wired. */
  private void expectStatusTrailer(String what, Metadata trailers) {
    String status = trailers.get(SpillwayMetadata.STATUS);
    if (spillwayWired ? !"0".equals(status) : status != null) {
      problems.add(what + " has spillway-status " + status);
    }
  }

  private static MethodDescriptor<byte[], byte[]> unary(String service, String name) {
    return MethodDescriptor.<byte[], byte[]>newBuilder()
        .setType(MethodDescriptor.MethodType.UNARY)
        .setFullMethodName(MethodDescriptor.generateFullMethodName(service, name))
        .setRequestMarshaller(BYTES)
        .setResponseMarshaller(BYTES)
        .build();
  }
}
