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
import org.junit.jupiter.api.Test;

/**
 * A Spillway client keeps its credit stream open for as long as its session lasts, and gRPC's
 * graceful shutdown waits for every open call: the server's owner ends the streams as it shuts
 * the server down ({@link SpillwayGrpcServer#stopCreditStreams}), and the shutdown completes
 * (in-process; the wait is a bound on a hang, not a measurement).
 */
class GracefulShutdownTest {

  private static final long MS = 1_000_000;

  @Test
  void stoppingTheCreditStreamsLetsAGracefulShutdownComplete() throws Exception {
    VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 60_000 * MS);
    String name = InProcessServerBuilder.generateName();
    InProcessServerBuilder builder = InProcessServerBuilder.forName(name);
    builder.addService(Echo.service(Echo.ECHO));
    SpillwayGrpcServer spillway = SpillwayGrpc.server().sloMillis(5).ticker(clock).scheduler(clock)
        .parallelism(2).install(builder);
    Server server = builder.build().start();
    ManagedChannel channel = InProcessChannelBuilder.forName(name).build();
    SpillwayClientInterceptor session = SpillwayGrpc.client().sloMillis(5).ticker(clock)
        .scheduler(clock).build();
    try {
      Channel withSession = ClientInterceptors.intercept(channel, session);
      assertEquals(Status.Code.OK, Calls.unary(withSession, Echo.UNARY, "x").await().status().getCode());
      assertEquals(1, spillway.control().subscribers());

      spillway.stopCreditStreams();
      server.shutdown();
      assertTrue(server.awaitTermination(30, TimeUnit.SECONDS), "terminated");
      assertEquals(0, spillway.control().subscribers());
    } finally {
      session.close();
      channel.shutdownNow();
      server.shutdownNow();
      spillway.close();
    }
  }
}
