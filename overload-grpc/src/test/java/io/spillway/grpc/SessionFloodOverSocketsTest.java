package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Server;
import io.grpc.ServerBuilder;
import io.grpc.Status;
import io.spillway.api.RequestMetadata;
import io.spillway.credit.BreakwaterConfig;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A client that invents a session id for every call (a session flood, docs/results/reliability.md)
 * against a server protected as the quick start protects it, on a real Netty server on loopback:
 * the gRPC adapter names each connection by its remote address, so the credit gate holds the
 * flooding connection to its newcomers' places (four per-session caps of sessions on probation,
 * none of which came back) and refuses the rest for credit, each answered after its
 * connection's hold ({@link CreditRefusalHolds}); another connection's Spillway-aware client is
 * served throughout and never held, and a second flooding connection has places of its own (the
 * bound is per connection, as on the native transport).
 */
class SessionFloodOverSocketsTest {

  /** Sessions one connection may hold on probation (BreakwaterServerGate's newcomers' line). */
  private static final int NEWCOMERS_PER_CONNECTION = 4 * BreakwaterConfig.DEFAULT_PER_SESSION_CAP;
  private static final int FLOOD = 3 * NEWCOMERS_PER_CONNECTION;
  /** Calls a flooding connection keeps outstanding, as the grpc-flood harness's flooder. */
  private static final int OUTSTANDING = 16;

  @Test
  void aConnectionInventingSessionsIsHeldToItsNewcomersAndTheOthersAreServed() throws Exception {
    ServerBuilder<?> builder = ServerBuilder.forPort(0).addService(Echo.service(Echo.ECHO));
    SpillwayGrpcServer spillway = SpillwayGrpc.server().slo(Duration.ofMillis(5)).install(builder);
    Server server = builder.build().start();
    int port = server.getPort();
    ManagedChannel flooder = plainChannel(port);
    ManagedChannel secondFlooder = plainChannel(port);
    SpillwayClientInterceptor honest = SpillwayGrpc.client().slo(Duration.ofMillis(5)).build();
    ManagedChannel honestChannel = honest.closeOnShutdown(ManagedChannelBuilder
        .forAddress("localhost", port).usePlaintext().intercept(honest).build());
    try {
      assertOk(Calls.unary(honestChannel, Echo.UNARY, "before").await());

      CreditRefusalHolds holds = spillway.interceptor().holds;
      Flood first = flood(flooder, 1_000_000);
      assertEquals(NEWCOMERS_PER_CONNECTION, first.placesTaken(),
          "the flooding connection is let in once per newcomer's place: " + first);
      assertEquals(FLOOD - NEWCOMERS_PER_CONNECTION, first.refusedForCredit, first.toString());
      assertEquals(0, first.other, first.toString());
      assertEquals(first.refusedForCredit, holds.refusalsHeld(),
          "every refusal for credit waited for its connection's hold");

      for (int i = 0; i < 50; i++) {
        assertOk(Calls.unary(honestChannel, Echo.UNARY, "during " + i).await());
      }
      assertEquals(first.refusedForCredit, holds.refusalsHeld(), "the honest client is never held");

      Flood second = flood(secondFlooder, 2_000_000);
      assertEquals(NEWCOMERS_PER_CONNECTION, second.placesTaken(),
          "another connection has places of its own: " + second);
      Flood again = flood(flooder, 3_000_000);
      assertEquals(0, again.placesTaken(), "the first connection's places are still taken: " + again);
      assertEquals(first.refusedForCredit + second.refusedForCredit + again.refusedForCredit,
          holds.refusalsHeld());
      assertEquals(0, holds.heldCalls());
      assertOk(Calls.unary(honestChannel, Echo.UNARY, "after").await());
    } finally {
      honest.close();
      for (ManagedChannel c : new ManagedChannel[] {flooder, secondFlooder, honestChannel}) {
        c.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }
      server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      spillway.close();
    }
  }

  private static ManagedChannel plainChannel(int port) {
    return ManagedChannelBuilder.forAddress("localhost", port).usePlaintext().build();
  }

  private static void assertOk(Calls.Reply reply) {
    assertEquals(Status.Code.OK, reply.status().getCode(), reply.toString());
  }

  /**
   * How a flood's calls ended. A call dropped by the AQM (a cold server's queue, with calls
   * outstanding) had registered its session: it took a newcomer's place as a served one does.
   */
  private record Flood(int served, int droppedByAqm, int refusedForCredit, int other) {
    int placesTaken() {
      return served + droppedByAqm;
    }
  }

  /**
   * {@link #FLOOD} calls, {@link #OUTSTANDING} at a time, each registering a session id never used
   * before.
   */
  private static Flood flood(ManagedChannel channel, long firstSession) throws Exception {
    int served = 0;
    int refused = 0;
    int other = 0;
    int droppedByAqm = 0;
    String noCredit = Integer.toString(io.spillway.api.Status.REJECTED_NO_CREDIT.code());
    String aqm = Integer.toString(io.spillway.api.Status.REJECTED_AQM.code());
    java.util.ArrayDeque<Calls.Handle> outstanding = new java.util.ArrayDeque<>();
    for (int i = 0; i < FLOOD || !outstanding.isEmpty(); ) {
      if (i < FLOOD && outstanding.size() < OUTSTANDING) {
        outstanding.add(Calls.unary(channel, Echo.UNARY, Calls.headers(
            SpillwayMetadata.SESSION, firstSession + i,
            SpillwayMetadata.FLAGS, RequestMetadata.FLAG_REGISTER), "flood"));
        i++;
        continue;
      }
      Calls.Reply reply = outstanding.poll().await();
      if (reply.status().isOk()) {
        served++;
      } else if (reply.status().getCode() == Status.Code.RESOURCE_EXHAUSTED
          && noCredit.equals(reply.trailer(SpillwayMetadata.STATUS))) {
        refused++;
      } else if (reply.status().getCode() == Status.Code.RESOURCE_EXHAUSTED
          && aqm.equals(reply.trailer(SpillwayMetadata.STATUS))) {
        droppedByAqm++;
      } else {
        other++;
      }
    }
    assertTrue(served + droppedByAqm + refused + other == FLOOD);
    return new Flood(served, droppedByAqm, refused, other);
  }
}
