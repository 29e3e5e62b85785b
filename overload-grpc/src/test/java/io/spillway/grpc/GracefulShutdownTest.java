package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Channel;
import io.grpc.ClientInterceptors;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.spillway.api.ClientEnvironment;
import io.spillway.api.ClientGate;
import io.spillway.api.OverloadScheme;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.ServerPermit;
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

  /**
   * A scheme's gate whose {@code close} throws (its control loop's owner, its metrics) does not
   * leave the credit streams open: they end, and the gate's exception reaches the caller after.
   */
  @Test
  void closingEndsTheCreditStreamsWhenTheGatesCloseThrows() {
    VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 60_000 * MS);
    String name = InProcessServerBuilder.generateName();
    InProcessServerBuilder builder = InProcessServerBuilder.forName(name);
    builder.addService(Echo.service(Echo.ECHO));
    OverloadScheme failingClose = new OverloadScheme() {
      private final OverloadScheme inner = io.spillway.credit.Spillway.forSloNanos(5 * MS);

      @Override
      public String name() {
        return "close-fails";
      }

      @Override
      public ServerGate newServerGate(ServerEnvironment environment) {
        ServerGate g = inner.newServerGate(environment);
        return new ServerGate() {
          @Override
          public ServerPermit admit(RequestMetadata request, long nowNanos) {
            return g.admit(request, nowNanos);
          }

          @Override
          public void onDemand(long sessionId, int demand, long nowNanos) {
            g.onDemand(sessionId, demand, nowNanos);
          }

          @Override
          public void deregister(long sessionId, long nowNanos) {
            g.deregister(sessionId, nowNanos);
          }

          @Override
          public void start() {
            g.start();
          }

          @Override
          public void close() {
            g.close();
            throw new IllegalStateException("the gate failed to close");
          }
        };
      }

      @Override
      public <R> ClientGate<R> newClientGate(ClientEnvironment environment) {
        return inner.newClientGate(environment);
      }
    };
    SpillwayGrpcServer spillway = SpillwayGrpc.server(failingClose).ticker(clock).scheduler(clock)
        .parallelism(2).install(builder);
    Server server;
    try {
      server = builder.build().start();
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    ManagedChannel channel = InProcessChannelBuilder.forName(name).build();
    SpillwayClientInterceptor session = SpillwayGrpc.client().sloMillis(5).ticker(clock)
        .scheduler(clock).build();
    try {
      Channel withSession = ClientInterceptors.intercept(channel, session);
      assertEquals(Status.Code.OK, Calls.unary(withSession, Echo.UNARY, "x").await().status().getCode());
      assertEquals(1, spillway.control().subscribers());

      IllegalStateException thrown = assertThrows(IllegalStateException.class, spillway::close);
      assertEquals("the gate failed to close", thrown.getMessage());
      assertEquals(0, spillway.control().subscribers(), "the credit streams ended");
    } finally {
      session.close();
      channel.shutdownNow();
      server.shutdownNow();
    }
  }
}
