package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Channel;
import io.grpc.ClientInterceptors;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.OverloadScheme;
import io.spillway.api.testing.VirtualClock;
import io.spillway.credit.Breakwater;
import io.spillway.credit.BreakwaterConfig;
import io.spillway.credit.BreakwaterServerGate;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Breakwater end to end over in-process gRPC, in virtual time: a session drained of credits gets
 * its explicit credit through the {@code spillway.Control/Credits} stream and goes on.
 */
class BreakwaterOverGrpcTest {

  private static final long SLO = 1_000_000;
  private static final long RTT = 50_000; // Breakwater's control period
  private static final long CLIENT_QUEUE_TIMEOUT = SLO / 2;

  private final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 10 * RTT);

  private SpillwayGrpcServer server(OverloadScheme scheme) {
    return SpillwayGrpc.server(scheme).ticker(clock).scheduler(clock).parallelism(1)
        .queueDelay(QueueDelaySignal.NONE).build();
  }

  private SpillwayClientInterceptor session(OverloadScheme scheme, long id) {
    return SpillwayGrpc.client(scheme).sessionId(id).sloNanos(SLO).ticker(clock).scheduler(clock).build();
  }

  /**
   * With a pool of one credit and two sessions, B's first response revokes its only credit (eq. 6:
   * C_issued = 2 > C_total = 1) and B is drained: nothing in flight to carry a credit back. One
   * control period later the pool has grown and the server sends B an explicit credit.
   */
  @Test
  void aDrainedSessionGetsAnExplicitCreditAndGoesOn() {
    OverloadScheme breakwater = Breakwater.of(BreakwaterConfig.forSlo(SLO, RTT));
    try (SpillwayGrpcServer spillway = server(breakwater);
        InProcess grpc = new InProcess(spillway.intercept(Echo.service(Echo.ECHO)), spillway.controlService())) {
      BreakwaterServerGate gate = (BreakwaterServerGate) spillway.gate();
      SpillwayClientInterceptor a = session(breakwater, 1);
      SpillwayClientInterceptor b = session(breakwater, 2);
      Channel toA = ClientInterceptors.intercept(grpc.channel(), a);
      Channel toB = ClientInterceptors.intercept(grpc.channel(), b);

      assertEquals("echo:a1", Calls.unary(toA, Echo.UNARY, "a1").await().body());
      assertEquals("echo:b1", Calls.unary(toB, Echo.UNARY, "b1").await().body());
      assertEquals(2, spillway.control().subscribers(), "each session holds a credit stream");
      assertEquals(2, gate.sessionCount());
      assertEquals(0, gate.windowOf(2), "B's credit was revoked with its response");

      Calls.Handle b2 = Calls.unary(toB, Echo.UNARY, "b2");
      assertFalse(b2.reply().isDone(), "B has no credit: its call waits in its client queue");
      assertEquals(1, b.queued());

      clock.advance(RTT); // one control period: the pool grows, B gets an explicit credit

      Calls.Reply reply = b2.await();
      assertEquals(Status.Code.OK, reply.status().getCode());
      assertEquals("echo:b2", reply.body());
      assertEquals(0, b.queued());

      a.close();
      assertEquals(1, gate.sessionCount(), "closing a session deregisters it");
      assertEquals(1, spillway.control().subscribers());
      b.close();
      assertEquals(0, gate.sessionCount());
      assertEquals(0, gate.issuedCredits(), "every credit returned to the pool");
    }
  }

  /** The same run without the control service: B's call can only expire. */
  @Test
  void withoutTheControlServiceADrainedSessionStalls() {
    OverloadScheme breakwater = Breakwater.of(BreakwaterConfig.forSlo(SLO, RTT));
    try (SpillwayGrpcServer spillway = server(breakwater);
        InProcess grpc = new InProcess(spillway.intercept(Echo.service(Echo.ECHO)))) {
      SpillwayClientInterceptor a = session(breakwater, 1);
      SpillwayClientInterceptor b = session(breakwater, 2);
      Channel toA = ClientInterceptors.intercept(grpc.channel(), a);
      Channel toB = ClientInterceptors.intercept(grpc.channel(), b);

      assertEquals("echo:a1", Calls.unary(toA, Echo.UNARY, "a1").await().body(),
          "a server without the control service still serves (the client logs a warning)");
      assertEquals("echo:b1", Calls.unary(toB, Echo.UNARY, "b1").await().body());

      Calls.Handle b2 = Calls.unary(toB, Echo.UNARY, "b2");
      clock.advance(CLIENT_QUEUE_TIMEOUT - 1);
      assertFalse(b2.reply().isDone());
      clock.advance(1);

      Calls.Reply reply = b2.await();
      assertEquals(Status.Code.RESOURCE_EXHAUSTED, reply.status().getCode());
      assertEquals("spillway: expired in the client queue", reply.status().getDescription());
    }
  }

  /**
   * Breakwater without demand speculation (Fig. 9's first bar): a session out of credit reports
   * its demand in a {@code spillway.Control/Demand} call, and the server answers with an explicit
   * credit, at once, with no clock movement.
   */
  @Test
  void demandSynchronisationTravelsAsControlCalls() {
    OverloadScheme creditsOnly = Breakwater.creditsOnly(BreakwaterConfig.forSlo(SLO, RTT));
    try (SpillwayGrpcServer spillway = server(creditsOnly);
        InProcess grpc = new InProcess(spillway.intercept(Echo.service(Echo.ECHO)), spillway.controlService())) {
      BreakwaterServerGate gate = (BreakwaterServerGate) spillway.gate();
      SpillwayClientInterceptor a = session(creditsOnly, 1);
      Channel toA = ClientInterceptors.intercept(grpc.channel(), a);

      assertEquals("echo:1", Calls.unary(toA, Echo.UNARY, "1").await().body());
      assertEquals(0, gate.windowOf(1), "no demand, no overcommit: the window drops to zero");

      Calls.Reply second = Calls.unary(toA, Echo.UNARY, "2").await();
      assertEquals("echo:2", second.body());
      a.close();
    }
  }

  /**
   * A burst from one session: the client releases calls only as credits allow, so the server
   * never holds more of the session's calls than its window, and nothing is rejected.
   */
  @Test
  void aBurstIsPacedByTheSessionsCredits() {
    OverloadScheme breakwater = Breakwater.of(BreakwaterConfig.forSlo(SLO, RTT));
    List<StreamObserver<String>> held = new ArrayList<>();
    Echo.Handler holding = (method, request, out) -> held.add(out);
    try (SpillwayGrpcServer spillway = server(breakwater);
        InProcess grpc = new InProcess(spillway.intercept(Echo.service(holding)), spillway.controlService())) {
      BreakwaterServerGate gate = (BreakwaterServerGate) spillway.gate();
      SpillwayClientInterceptor a = session(breakwater, 1);
      Channel toA = ClientInterceptors.intercept(grpc.channel(), a);
      List<Calls.Handle> calls = new ArrayList<>();
      for (int i = 0; i < 20; i++) {
        calls.add(Calls.unary(toA, Echo.UNARY, "m" + i));
      }
      int answered = 0;
      int mostInServer = 0;
      while (answered < calls.size()) {
        int inServer = held.size() - answered;
        mostInServer = Math.max(mostInServer, inServer);
        assertTrue(inServer <= Math.max(1, gate.windowOf(1)),
            inServer + " calls in the server, window " + gate.windowOf(1));
        if (inServer == 0) {
          clock.advance(RTT); // wait for the pool to grow
          continue;
        }
        StreamObserver<String> next = held.get(answered++);
        next.onNext("ok");
        next.onCompleted();
      }
      for (Calls.Handle call : calls) {
        assertEquals(Status.Code.OK, call.await().status().getCode());
      }
      assertTrue(mostInServer < calls.size(), "the burst was paced, not sent at once");
      a.close();
    }
  }
}
