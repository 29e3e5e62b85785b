package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Channel;
import io.grpc.ClientInterceptors;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.spillway.api.testing.VirtualClock;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A session keeps its credit stream open on its channel, and a channel's graceful shutdown waits
 * for its open calls: a channel shut down before its session is closed must still terminate
 * (in-process; the wait is a bound on a hang, not a measurement).
 */
class ChannelShutdownTest {

  private static final long MS = 1_000_000;

  private final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 60_000 * MS);
  private final String name = InProcessServerBuilder.generateName();
  private SpillwayGrpcServer spillway;
  private Server server;
  private ManagedChannel channel;

  @BeforeEach
  void startServer() throws Exception {
    InProcessServerBuilder builder = InProcessServerBuilder.forName(name);
    builder.addService(Echo.service(Echo.ECHO));
    spillway = SpillwayGrpc.server().sloMillis(5).ticker(clock).scheduler(clock).parallelism(2)
        .install(builder);
    server = builder.build().start();
  }

  @AfterEach
  void stop() throws Exception {
    if (channel != null) {
      channel.shutdownNow();
    }
    server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    spillway.close();
  }

  private SpillwayClientInterceptor session() {
    return SpillwayGrpc.client().sloMillis(5).ticker(clock).scheduler(clock).build();
  }

  @Test
  void aChannelShutDownBeforeItsSessionClosesTerminates() throws Exception {
    channel = InProcessChannelBuilder.forName(name).build();
    SpillwayClientInterceptor session = session();
    Channel withSession = ClientInterceptors.intercept(channel, session);
    assertEquals(Status.Code.OK, Calls.unary(withSession, Echo.UNARY, "x").await().status().getCode());
    assertEquals(1, spillway.control().subscribers(), "the session's credit stream is open");

    channel.shutdown();

    assertTrue(channel.awaitTermination(5, TimeUnit.SECONDS),
        "the session's credit stream kept the shut-down channel from terminating");
    Calls.Reply late = Calls.unary(withSession, Echo.UNARY, "late").await();
    assertEquals(Status.Code.UNAVAILABLE, late.status().getCode(), late.toString());
  }

  @Test
  void aSessionInstalledOnTheChannelBuilderEndsWithTheChannel() throws Exception {
    SpillwayClientInterceptor session = session();
    channel = session.closeOnShutdown(
        InProcessChannelBuilder.forName(name).intercept(session).build());
    assertEquals(Status.Code.OK, Calls.unary(channel, Echo.UNARY, "x").await().status().getCode());
    assertEquals(1, spillway.control().subscribers(), "the session's credit stream is open");

    channel.shutdown();

    assertTrue(channel.awaitTermination(5, TimeUnit.SECONDS),
        "the session's credit stream kept the shut-down channel from terminating");
  }
}
