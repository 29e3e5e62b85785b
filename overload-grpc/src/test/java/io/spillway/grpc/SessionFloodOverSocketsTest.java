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
 * none of which came back) and refuses the rest for credit, at once; another connection's
 * Spillway-aware client is served throughout, and a second flooding connection has places of its
 * own (the bound is per connection, as on the native transport).
 */
class SessionFloodOverSocketsTest {

  /** Sessions one connection may hold on probation (BreakwaterServerGate's newcomers' line). */
  private static final int NEWCOMERS_PER_CONNECTION = 4 * BreakwaterConfig.DEFAULT_PER_SESSION_CAP;
  private static final int FLOOD = 3 * NEWCOMERS_PER_CONNECTION;

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

      Flood first = flood(flooder, 1_000_000);
      assertEquals(NEWCOMERS_PER_CONNECTION, first.served,
          "the flooding connection is served one call per newcomer's place: " + first);
      assertEquals(FLOOD - NEWCOMERS_PER_CONNECTION, first.refusedForCredit, first.toString());
      assertEquals(0, first.other, first.toString());

      for (int i = 0; i < 50; i++) {
        assertOk(Calls.unary(honestChannel, Echo.UNARY, "during " + i).await());
      }

      Flood second = flood(secondFlooder, 2_000_000);
      assertEquals(NEWCOMERS_PER_CONNECTION, second.served,
          "another connection has places of its own: " + second);
      Flood again = flood(flooder, 3_000_000);
      assertEquals(0, again.served, "the first connection's places are still taken: " + again);
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

  /** How a flood's calls ended. */
  private record Flood(int served, int refusedForCredit, int other) { }

  /** {@link #FLOOD} calls one after another, each registering a session id never used before. */
  private static Flood flood(ManagedChannel channel, long firstSession) throws Exception {
    int served = 0;
    int refused = 0;
    int other = 0;
    String noCredit = Integer.toString(io.spillway.api.Status.REJECTED_NO_CREDIT.code());
    for (int i = 0; i < FLOOD; i++) {
      Calls.Reply reply = Calls.unary(channel, Echo.UNARY, Calls.headers(
          SpillwayMetadata.SESSION, firstSession + i,
          SpillwayMetadata.FLAGS, RequestMetadata.FLAG_REGISTER), "flood").await();
      if (reply.status().isOk()) {
        served++;
      } else if (reply.status().getCode() == Status.Code.RESOURCE_EXHAUSTED
          && noCredit.equals(reply.trailer(SpillwayMetadata.STATUS))) {
        refused++;
      } else {
        other++;
      }
    }
    assertTrue(served + refused + other == FLOOD);
    return new Flood(served, refused, other);
  }
}
