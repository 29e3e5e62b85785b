package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ClientInterceptors;
import io.grpc.Deadline;
import io.grpc.ForwardingClientCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.stub.ServerCalls;
import io.spillway.api.OverloadScheme;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.testing.VirtualClock;
import io.spillway.credit.Breakwater;
import io.spillway.credit.BreakwaterConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;

/**
 * A session's first calls wait for its credit stream to be acknowledged. That wait (a fresh
 * connection, a cold server) is no client queueing and does not count against the SLO; but a
 * stream that is never acknowledged must not hold the calls past their gRPC deadlines, which gRPC
 * would have enforced had they started (virtual time; the wait for the callbacks only bounds a
 * hang).
 */
class HeldCallsTest {

  private static final long SLO = 1_000_000;
  private static final long RTT = 50_000;

  private final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 100 * SLO);
  private final OverloadScheme breakwater = Breakwater.of(BreakwaterConfig.forSlo(SLO, RTT));

  private SpillwayClientInterceptor session() {
    return SpillwayGrpc.client(breakwater).sessionId(1).sloNanos(SLO).ticker(clock).scheduler(clock)
        .build();
  }

  /** The replies that have ended, waiting at most a few seconds for callbacks on other threads. */
  private static List<Calls.Reply> ended(List<CompletableFuture<Calls.Reply>> replies)
      throws Exception {
    try {
      CompletableFuture.allOf(replies.toArray(CompletableFuture[]::new)).get(5, TimeUnit.SECONDS);
    } catch (TimeoutException stillHeld) {
      // counted below
    }
    List<Calls.Reply> ended = new ArrayList<>();
    for (CompletableFuture<Calls.Reply> r : replies) {
      if (r.isDone()) {
        ended.add(r.join());
      }
    }
    return ended;
  }

  /** Gives every call a deadline {@code nanos} away on the virtual clock. */
  private ClientInterceptor deadlineIn(long nanos) {
    Deadline.Ticker virtual = new Deadline.Ticker() {
      @Override
      public long nanoTime() {
        return clock.read();
      }
    };
    return new ClientInterceptor() {
      @Override
      public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method,
          CallOptions options, Channel next) {
        return next.newCall(method, options.withDeadline(
            Deadline.after(nanos, TimeUnit.NANOSECONDS, virtual)));
      }
    };
  }

  @Test
  void callsHeldForAStreamThatIsNeverAcknowledgedEndAtTheirDeadlines() throws Exception {
    // A control service that takes the stream and never answers it: no headers, no close.
    ServerServiceDefinition mute = ServerServiceDefinition.builder(SpillwayControlService.SERVICE_NAME)
        .addMethod(SpillwayControlService.CREDITS, ServerCalls.asyncServerStreamingCall((req, out) -> { }))
        .build();
    try (InProcess grpc = new InProcess(Echo.service(Echo.ECHO), mute)) {
      SpillwayClientInterceptor session = session();
      Channel ch = ClientInterceptors.intercept(
          ClientInterceptors.intercept(grpc.channel(), session), deadlineIn(5 * SLO));
      List<CompletableFuture<Calls.Reply>> replies = new ArrayList<>();
      for (int i = 0; i < 20; i++) {
        replies.add(Calls.unary(ch, Echo.UNARY, "x" + i).reply());
        clock.advance(SLO / 10);
      }
      clock.advance(5 * SLO);

      List<Status.Code> ended = ended(replies).stream().map(r -> r.status().getCode()).toList();
      assertEquals(20, ended.size(), "of 20 calls, ended after their 5 SLO deadlines: " + ended);
      assertEquals(List.of(Status.Code.DEADLINE_EXCEEDED), ended.stream().distinct().toList());
      assertEquals(0, session.queued());
    }
  }

  /**
   * Defers the start of the Credits call until {@link #connect}: what the session sees of a
   * connection that takes a while to come up.
   */
  static final class SlowConnection implements ClientInterceptor {
    private final List<Runnable> pending = new ArrayList<>();

    @Override
    public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method, CallOptions options,
        Channel next) {
      ClientCall<Q, R> call = next.newCall(method, options);
      if (!method.getFullMethodName().equals(SpillwayControlService.CREDITS.getFullMethodName())) {
        return call;
      }
      return new ForwardingClientCall.SimpleForwardingClientCall<>(call) {
        private final List<Runnable> ops = new ArrayList<>();
        private boolean started;

        @Override
        public void start(Listener<R> listener, Metadata headers) {
          pending.add(() -> {
            delegate().start(listener, headers);
            started = true;
            ops.forEach(Runnable::run);
          });
        }

        @Override
        public void request(int n) {
          later(() -> delegate().request(n));
        }

        @Override
        public void sendMessage(Q message) {
          later(() -> delegate().sendMessage(message));
        }

        @Override
        public void halfClose() {
          later(() -> delegate().halfClose());
        }

        private void later(Runnable op) {
          if (started) {
            op.run();
          } else {
            ops.add(op);
          }
        }
      };
    }

    void connect() {
      pending.forEach(Runnable::run);
      pending.clear();
    }
  }

  @Test
  void theWaitForTheConnectionExpiresNoCall() throws Exception {
    try (SpillwayGrpcServer spillway = SpillwayGrpc.server(breakwater).ticker(clock).scheduler(clock)
            .parallelism(1).queueDelay(QueueDelaySignal.NONE).build();
        InProcess grpc = new InProcess(spillway.intercept(Echo.service(Echo.ECHO)),
            spillway.controlService())) {
      SlowConnection connection = new SlowConnection();
      Channel ch = ClientInterceptors.intercept(
          ClientInterceptors.intercept(grpc.channel(), connection), session());
      Calls.Handle first = Calls.unary(ch, Echo.UNARY, "first");
      clock.advance(10 * SLO); // a connection ten SLOs slow to come up

      connection.connect();

      Calls.Reply reply = first.await();
      assertEquals(Status.Code.OK, reply.status().getCode(), reply.toString());
    }
  }
}
