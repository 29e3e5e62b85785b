package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Channel;
import io.grpc.ClientInterceptors;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.spillway.api.OverloadScheme;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.testing.VirtualClock;
import io.spillway.credit.Breakwater;
import io.spillway.credit.BreakwaterConfig;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A session used through two channels (to one server) keeps its credit stream, its control calls
 * and its lifetime on the first: its credits are that connection's, and a stream that moved with
 * each call's channel would leave the first channel unable to terminate, or the session's control
 * calls on a connection its stream is not on (in-process; the wait is a bound on a hang).
 */
class TwoChannelsTest {

  private static final long SLO = 1_000_000;
  private static final long RTT = 50_000;

  private final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 10 * SLO);
  private final OverloadScheme breakwater = Breakwater.of(BreakwaterConfig.forSlo(SLO, RTT));

  private SpillwayGrpcServer server() {
    return SpillwayGrpc.server(breakwater).ticker(clock).scheduler(clock).parallelism(1)
        .queueDelay(QueueDelaySignal.NONE).build();
  }

  private SpillwayClientInterceptor session() {
    return SpillwayGrpc.client(breakwater).sessionId(3).sloNanos(SLO).ticker(clock).scheduler(clock)
        .build();
  }

  @Test
  void aRenewedStreamStaysOnTheFirstChannel() {
    try (SpillwayGrpcServer spillway = server();
        InProcess grpc = new InProcess(spillway.intercept(Echo.service(Echo.ECHO)),
            spillway.controlService())) {
      SessionRenewalTest.StreamBreaker first = new SessionRenewalTest.StreamBreaker();
      SessionRenewalTest.StreamBreaker second = new SessionRenewalTest.StreamBreaker();
      SpillwayClientInterceptor s = session();
      Channel toA = ClientInterceptors.intercept(ClientInterceptors.intercept(grpc.channel(), first), s);
      Channel toB = ClientInterceptors.intercept(ClientInterceptors.intercept(grpc.channel(), second), s);
      assertEquals("echo:a", Calls.unary(toA, Echo.UNARY, "a").await().body());
      assertEquals("echo:b", Calls.unary(toB, Echo.UNARY, "b").await().body());

      first.breakAll(); // the stream ends: the session starts again
      assertEquals("echo:b2", Calls.unary(toB, Echo.UNARY, "b2").await().body());

      assertEquals("first " + 2 + ", second " + 0, "first " + first.opened + ", second "
          + second.opened, "credit streams opened through each channel");
    }
  }

  @Test
  void shuttingDownTheFirstChannelEndsTheSessionThere() throws Exception {
    try (SpillwayGrpcServer spillway = server();
        InProcess grpc = new InProcess(spillway.intercept(Echo.service(Echo.ECHO)),
            spillway.controlService())) {
      SpillwayClientInterceptor s = session();
      ManagedChannel a = grpc.channel();
      ManagedChannel b = grpc.channel();
      Channel toA = ClientInterceptors.intercept(a, s);
      Channel toB = ClientInterceptors.intercept(b, s);
      assertEquals(Status.Code.OK, Calls.unary(toA, Echo.UNARY, "a").await().status().getCode());
      assertEquals(Status.Code.OK, Calls.unary(toB, Echo.UNARY, "b").await().status().getCode());

      a.shutdown();

      assertTrue(a.awaitTermination(5, TimeUnit.SECONDS),
          "the session's credit stream kept the first channel from terminating");
    }
  }
}
