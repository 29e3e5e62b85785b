package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ClientInterceptors;
import io.grpc.ForwardingServerCall;
import io.grpc.ForwardingServerCallListener;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.spillway.api.Outcome;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.OverloadScheme;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.Status;
import io.spillway.api.testing.VirtualClock;
import java.util.ArrayDeque;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A call that ends while its start still waits for a worker (its client cancels it, or its
 * deadline passes): its cancellation listener ends its permit, and gRPC still starts it once a
 * worker is free, through every interceptor, and only then tells them of the cancel. The gate
 * decides on it once, its permit ends once, and an interceptor outside Spillway's sees it as the
 * gate did: admitted and cancelled, or refused, never both nor twice (the starter's per-method
 * counters are such an interceptor).
 *
 * <p>The workers are a queue the test runs by hand and gRPC's deadlines read a clock the test
 * moves, so nothing waits: in-process, a call starts, is cancelled and is closed on the thread that
 * does it.
 */
class CancelledWhileQueuedTest {

  private static final long SECOND = 1_000_000_000L;

  private final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 100 * SECOND);
  /** The workers: tasks wait here until {@link #runWorkers}. */
  private final Queue<Runnable> workers = new ArrayDeque<>();
  /** gRPC's deadline clock, moved by {@link #deadlineStep} at each reading as well. */
  private final AtomicLong deadlineNow = new AtomicLong();
  private volatile long deadlineStep;
  private final ScriptedGate gate = new ScriptedGate();
  private final List<Status> refusals = new CopyOnWriteArrayList<>();
  private final List<Outcome> refusalEnds = new CopyOnWriteArrayList<>();
  /** What an interceptor outside Spillway's sees of each call. */
  private final List<String> outside = new CopyOnWriteArrayList<>();
  private Server server;
  private ManagedChannel channel;
  private SpillwayGrpcServer spillway;

  @BeforeEach
  void start() throws Exception {
    OverloadScheme scheme = gate.scheme();
    OverloadMetrics metrics = new OverloadMetrics() { // only the interceptor's own refusals report
      @Override
      public void onAdmission(Status decision) {
        refusals.add(decision);
      }

      @Override
      public void onCompletion(Outcome outcome) {
        refusalEnds.add(outcome);
      }
    };
    String name = InProcessServerBuilder.generateName();
    InProcessServerBuilder builder = InProcessServerBuilder.forName(name)
        .deadlineTicker(new io.grpc.Deadline.Ticker() {
          @Override
          public long nanoTime() {
            return deadlineNow.addAndGet(deadlineStep);
          }
        });
    builder.addService(Echo.service(Echo.ECHO));
    spillway = SpillwayGrpc.server(scheme).ticker(clock).scheduler(clock).parallelism(1)
        .executor(workers::add, QueueDelaySignal.NONE).metrics(metrics).install(builder);
    builder.intercept(new Outside()); // added after Spillway's: runs before it
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
  void aCallItsClientCancelsWhileItWaitsForAWorkerIsDecidedOnceAndEndsOnce() {
    Calls.Handle call = Calls.unary(channel, Echo.UNARY, "x");
    assertEquals(1, workers.size(), "its start waits for the worker");
    call.call().cancel("the client gives up", null);
    assertEquals(List.of(Outcome.FAILED), gate.outcomes, "its cancellation ended its permit");

    runWorkers();
    assertEquals(io.grpc.Status.Code.CANCELLED, call.await().status().getCode());
    assertEquals(1, gate.requests.size(), "the gate decided on it once");
    assertEquals(List.of(Outcome.FAILED), gate.outcomes, "its permit ended once");
    assertEquals(List.of("admitted", "cancelled"), outside);
    assertEquals(List.of(), refusals);
    assertEquals(0, spillway.interceptor().undecidedCalls());
  }

  /**
   * Its client gives up at its deadline, which gRPC's clock has passed: the permit ends timed out,
   * and its start, later, is no refusal for a deadline it can no longer meet.
   */
  @Test
  void aCallWhoseDeadlinePassesWhileItWaitsForAWorkerEndsTimedOutUnrefused() {
    Calls.Handle call = Calls.start(withDeadlineSeconds(channel, 10), Echo.UNARY, new Metadata(),
        true, "x");
    assertEquals(1, workers.size(), "its start waits for the worker");
    deadlineNow.addAndGet(11 * SECOND);
    call.call().cancel("deadline passed", null);
    assertEquals(List.of(Outcome.TIMED_OUT), gate.outcomes, "its cancellation ended its permit");

    runWorkers();
    call.await();
    assertEquals(1, gate.requests.size(), "the gate decided on it once");
    assertEquals(List.of(Outcome.TIMED_OUT), gate.outcomes, "its permit ended once");
    assertEquals(List.of(), refusals, "it was admitted, and is not refused as it starts");
    assertEquals(List.of(), refusalEnds);
    assertEquals(List.of("admitted", "cancelled"), outside);
  }

  /**
   * gRPC's clock moves a minute at each reading, so a call's 10 s deadline has passed by the time
   * gRPC makes its context, which is cancelled as it is made: the interceptor refuses it as it
   * arrives, and counts that refusal once, though the cancellation takes its decision back.
   */
  @Test
  void aCallWhoseDeadlineHasPassedAsItArrivesIsRefusedOnce() {
    deadlineStep = 60 * SECOND;
    Calls.Reply reply = Calls.start(withDeadlineSeconds(channel, 10), Echo.UNARY, new Metadata(),
        true, "x").await();
    assertTrue(workers.isEmpty(), "a refusal is answered where it arrived");
    assertEquals(io.grpc.Status.Code.RESOURCE_EXHAUSTED, reply.status().getCode(),
        reply.toString());
    assertEquals(List.of(), gate.requests, "refused before the gate");
    assertEquals(List.of(Status.REJECTED_BUDGET), refusals, "refused once");
    assertEquals(List.of(Outcome.DROPPED), refusalEnds, "and ended once");
    assertEquals(List.of("refused"), outside);
  }

  private void runWorkers() {
    Runnable task;
    while ((task = workers.poll()) != null) {
      task.run();
    }
  }

  private static Channel withDeadlineSeconds(Channel channel, long seconds) {
    return ClientInterceptors.intercept(channel, new ClientInterceptor() {
      @Override
      public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method,
          CallOptions options, Channel next) {
        return next.newCall(method, options.withDeadlineAfter(seconds, TimeUnit.SECONDS));
      }
    });
  }

  /**
   * Records each call as an interceptor outside Spillway's tells them apart: closed while it
   * starts, refused; else admitted, then cancelled or closed.
   */
  private final class Outside implements ServerInterceptor {
    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
        ServerCallHandler<Q, R> next) {
      boolean[] started = {false};
      boolean[] refused = {false};
      ServerCall.Listener<Q> listener = next.startCall(
          new ForwardingServerCall.SimpleForwardingServerCall<>(call) {
            @Override
            public void close(io.grpc.Status status, Metadata trailers) {
              refused[0] = !started[0];
              outside.add(refused[0] ? "refused" : "closed " + status.getCode());
              super.close(status, trailers);
            }
          }, headers);
      started[0] = true;
      if (refused[0]) {
        return listener;
      }
      outside.add("admitted");
      return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(listener) {
        @Override
        public void onCancel() {
          outside.add("cancelled");
          super.onCancel();
        }
      };
    }
  }
}
