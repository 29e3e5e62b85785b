package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.spillway.api.testing.VirtualClock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Retry to a replica: only after a fast reject, and every call ends once. Virtual time. */
class ReplicaRetryTest {

  private final VirtualClock clock = new VirtualClock();

  /**
   * An admitted call whose handler answers RESOURCE_EXHAUSTED has run (its trailers carry
   * spillway-status FAILED, not a reject): it may have had effects, and is not sent again.
   */
  @Test
  void aCallWhoseHandlerRanIsNotRetriedOnAnotherBackend() {
    AtomicInteger ranOnA = new AtomicInteger();
    AtomicInteger ranOnB = new AtomicInteger();
    try (InProcess a = new InProcess(ServerInterceptors.intercept(Echo.service((m, req, out) -> {
          ranOnA.incrementAndGet();
          out.onError(Status.RESOURCE_EXHAUSTED.withDescription("quota of the account")
              .asRuntimeException());
        }), new SpillwayServerInterceptor(new ScriptedGate(), clock)));
        InProcess b = new InProcess(ServerInterceptors.intercept(Echo.service((m, req, out) -> {
          ranOnB.incrementAndGet();
          Echo.ECHO.handle(m, req, out);
        }), new SpillwayServerInterceptor(new ScriptedGate(), clock)))) {
      SpillwayBalancedChannel channel = SpillwayGrpc.balanced(io.spillway.api.NoControl.INSTANCE)
          .slo(Duration.ofMillis(5)).ticker(clock).scheduler(clock).retryToReplica(0.1)
          .picker(avoid -> avoid < 0 ? 0 : 1)
          .build(List.of(a.channel(), b.channel()));
      try {
        Calls.Reply reply = Calls.unary(channel, Echo.UNARY, "x").await();
        assertEquals(1, ranOnA.get());
        assertEquals(Status.Code.RESOURCE_EXHAUSTED, reply.status().getCode(),
            "the handler's own answer reaches the application");
        assertEquals(0, ranOnB.get(), "a call that ran was sent again to another backend");
        assertEquals(0, channel.retries());
      } finally {
        channel.close();
      }
    }
  }
}
