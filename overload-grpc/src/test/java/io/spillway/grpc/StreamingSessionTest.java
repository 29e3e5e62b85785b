package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.grpc.Channel;
import io.grpc.ClientInterceptors;
import io.grpc.Metadata;
import io.grpc.Status;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.testing.VirtualClock;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Streams through a client session, in virtual time over in-process gRPC: a stream may stay open
 * for as long as its client and server like, while a credit stands for one call's stay in the
 * server (breakwater-osdi20 §3.1). Streams held in the session's gate would hold its credits for
 * their whole life, and once they held every credit, no answer would come back to carry new ones:
 * the session's unary calls would wait in its queue until they expired, on an idle server.
 */
class StreamingSessionTest {

  private static final long SLO = 1_000_000;

  private final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 1_000_000_000L);

  @Test
  void openStreamsLeaveTheSessionsCreditsToItsUnaryCalls() {
    try (SpillwayGrpcServer spillway = SpillwayGrpc.server().sloNanos(SLO).ticker(clock)
            .scheduler(clock).parallelism(1).queueDelay(QueueDelaySignal.NONE).build();
        InProcess grpc = new InProcess(spillway.intercept(Echo.service(Echo.ECHO)), spillway.controlService())) {
      SpillwayClientInterceptor session = SpillwayGrpc.client().sloNanos(SLO).sessionId(1)
          .ticker(clock).scheduler(clock).build();
      Channel channel = ClientInterceptors.intercept(grpc.channel(), session);
      assertEquals("echo:first", Calls.unary(channel, Echo.UNARY, "first").await().body());

      List<Calls.Handle> streams = new ArrayList<>();
      for (int i = 0; i < 4; i++) { // open, never half-closed: long-lived streams
        streams.add(Calls.start(channel, Echo.CHAT, new Metadata(), false, "s" + i));
      }
      Calls.Handle unary = Calls.unary(channel, Echo.UNARY, "beside");
      clock.advance(SLO); // past the client queue's timeout

      Calls.Reply reply = unary.await();
      assertEquals(Status.Code.OK, reply.status().getCode(), reply.toString());
      assertEquals("echo:beside", reply.body());
      for (Calls.Handle stream : streams) {
        assertFalse(stream.reply().isDone(), "every stream is open at the server");
        stream.call().halfClose();
        assertEquals(Status.Code.OK, stream.await().status().getCode());
      }
      session.close();
    }
  }
}
