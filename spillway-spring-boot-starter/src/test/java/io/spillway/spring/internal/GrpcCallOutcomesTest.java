package io.spillway.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.stub.ServerCalls;
import io.spillway.api.Outcome;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.Status;
import io.spillway.api.testing.VirtualClock;
import io.spillway.grpc.SpillwayGrpc;
import io.spillway.grpc.SpillwayGrpcServer;
import io.spillway.spring.GateStats;
import io.spillway.spring.GrpcServerStats;
import io.spillway.spring.StringMethods;
import java.util.ArrayDeque;
import java.util.Queue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A gRPC server's counters by method add up to its gate's, also for a call that ends before its
 * handler could start: cancelled by its client, or past its deadline, while its start waits for a
 * worker, or past its deadline as it arrives. The server is wired as the auto-configuration wires
 * it ({@code GrpcWiring#install}), but with workers that are a queue the test runs by hand and a
 * gRPC deadline clock the test moves, so nothing waits.
 */
class GrpcCallOutcomesTest {

  private static final String PING = "test.Ping/Ping";
  private static final long SECOND = 1_000_000_000L;

  private final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 100 * SECOND);
  private final Queue<Runnable> workers = new ArrayDeque<>();
  /** gRPC's deadline clock, moved by {@link #deadlineStep} at each reading as well. */
  private final AtomicLong deadlineNow = new AtomicLong();
  private volatile long deadlineStep;
  private final GrpcServerStats stats = new GrpcServerStats(new GateStats("grpc"), () -> 0);
  private Server server;
  private ManagedChannel channel;
  private SpillwayGrpcServer spillway;

  @BeforeEach
  void start() throws Exception {
    String name = InProcessServerBuilder.generateName();
    InProcessServerBuilder builder = InProcessServerBuilder.forName(name)
        .deadlineTicker(new io.grpc.Deadline.Ticker() {
          @Override
          public long nanoTime() {
            return deadlineNow.addAndGet(deadlineStep);
          }
        });
    builder.addService(ServerServiceDefinition.builder("test.Ping")
        .addMethod(StringMethods.unary(PING), ServerCalls.asyncUnaryCall((request, out) -> {
          out.onNext("ok:" + request);
          out.onCompleted();
        })).build());
    spillway = SpillwayGrpc.server().sloMillis(1_000).ticker(clock).scheduler(clock).parallelism(1)
        .executor(workers::add, QueueDelaySignal.NONE).metrics(stats.gate()).install(builder);
    builder.intercept(new GrpcCallOutcomes(stats, null));
    server = builder.build().start();
    channel = InProcessChannelBuilder.forName(name).directExecutor().build();
  }

  @AfterEach
  void stop() throws Exception {
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    spillway.close();
  }

  @Test
  void aCallItsClientCancelsWhileItWaitsForAWorkerIsCountedUnderItsMethodAsTheGateCountsIt() {
    ClientCall<String, String> call = start(CallOptions.DEFAULT);
    assertThat(workers).as("its start waits for the worker").hasSize(1);
    call.cancel("the client gives up", null);
    runWorkers();

    GateStats ping = stats.method(PING);
    assertThat(ping.admitted()).isEqualTo(1);
    assertThat(ping.completions(Outcome.FAILED)).isEqualTo(1);
    assertAddsUp();
  }

  @Test
  void aCallWhoseDeadlinePassesWhileItWaitsForAWorkerIsCountedTimedOutNotRefused() {
    ClientCall<String, String> call =
        start(CallOptions.DEFAULT.withDeadlineAfter(10, TimeUnit.SECONDS));
    assertThat(workers).as("its start waits for the worker").hasSize(1);
    deadlineNow.addAndGet(11 * SECOND);
    call.cancel("deadline passed", null); // as its client does at its deadline
    runWorkers();

    GateStats ping = stats.method(PING);
    assertThat(ping.admitted()).as("admitted under its method").isEqualTo(1);
    assertThat(ping.completions(Outcome.TIMED_OUT)).isEqualTo(1);
    assertThat(ping.decisions(Status.REJECTED_BUDGET)).isZero();
    assertAddsUp();
  }

  /** gRPC's clock moves a minute at each reading: the call's 10 s deadline is past on arrival. */
  @Test
  void aCallWhoseDeadlineHasPassedAsItArrivesIsCountedRefusedOnce() {
    deadlineStep = 60 * SECOND;
    start(CallOptions.DEFAULT.withDeadlineAfter(10, TimeUnit.SECONDS));
    assertThat(workers).as("a refusal is answered where it arrived").isEmpty();

    GateStats ping = stats.method(PING);
    assertThat(ping.decisions(Status.REJECTED_BUDGET)).isEqualTo(1);
    assertThat(ping.completions(Outcome.DROPPED)).isEqualTo(1);
    assertAddsUp();
  }

  /**
   * The method's counters are the gate's (one method was called), and every decision has ended:
   * admitted and refused together equal the completions.
   */
  private void assertAddsUp() {
    GateStats gate = stats.gate();
    GateStats ping = stats.method(PING);
    long decided = 0;
    for (Status s : Status.values()) {
      assertThat(ping.decisions(s)).as("decided %s: the method's count against the gate's", s)
          .isEqualTo(gate.decisions(s));
      decided += gate.decisions(s);
    }
    long ended = 0;
    for (Outcome o : Outcome.values()) {
      assertThat(ping.completions(o)).as("ended %s: the method's count against the gate's", o)
          .isEqualTo(gate.completions(o));
      ended += gate.completions(o);
    }
    assertThat(ended).as("every decision ended once").isEqualTo(decided);
  }

  /** Starts a unary call to {@link #PING} and sends its request. */
  private ClientCall<String, String> start(CallOptions options) {
    ClientCall<String, String> call = channel.newCall(StringMethods.unary(PING), options);
    call.start(new ClientCall.Listener<>() { }, new Metadata());
    call.request(1);
    call.sendMessage("x");
    call.halfClose();
    return call;
  }

  private void runWorkers() {
    Runnable task;
    while ((task = workers.poll()) != null) {
      task.run();
    }
  }
}
