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
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.testing.ForwardingServerGate;
import io.spillway.api.testing.VirtualClock;
import java.io.IOException;
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
    SpillwayGrpcServer.Builder spillway = SpillwayGrpc.server().sloMillis(5);
    try (Served served = servedOnce(spillway, clock)) {
      served.spillway().stopCreditStreams();
      served.server().shutdown();
      assertTrue(served.server().awaitTermination(30, TimeUnit.SECONDS), "terminated");
      assertEquals(0, served.spillway().control().subscribers());
    }
  }

  /**
   * A scheme's gate whose {@code close} throws (its control loop's owner, its metrics) does not
   * leave the credit streams open: they end, and the gate's exception reaches the caller after.
   */
  @Test
  void closingEndsTheCreditStreamsWhenTheGatesCloseThrows() throws Exception {
    VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 60_000 * MS);
    OverloadScheme failingClose = new OverloadScheme() {
      private final OverloadScheme inner = io.spillway.credit.Spillway.forSloNanos(5 * MS);

      @Override
      public String name() {
        return "close-fails";
      }

      @Override
      public ServerGate newServerGate(ServerEnvironment environment) {
        return new ForwardingServerGate(inner.newServerGate(environment)) {
          private boolean failed;

          @Override
          public void close() {
            delegate.close();
            if (!failed) { // once: the test's own clean-up closes the server again
              failed = true;
              throw new IllegalStateException("the gate failed to close");
            }
          }
        };
      }

      @Override
      public <R> ClientGate<R> newClientGate(ClientEnvironment environment) {
        return inner.newClientGate(environment);
      }
    };
    try (Served served = servedOnce(SpillwayGrpc.server(failingClose), clock)) {
      IllegalStateException thrown = assertThrows(IllegalStateException.class,
          served.spillway()::close);
      assertEquals("the gate failed to close", thrown.getMessage());
      assertEquals(0, served.spillway().control().subscribers(), "the credit streams ended");
    }
  }

  /** An echo server protected by {@code spillway}, and a Spillway client that has called it once. */
  private record Served(SpillwayGrpcServer spillway, Server server, ManagedChannel channel,
      SpillwayClientInterceptor session) implements AutoCloseable {
    @Override
    public void close() {
      session.close();
      channel.shutdownNow();
      server.shutdownNow();
      spillway.close();
    }
  }

  /**
   * Installs {@code spillway} (on {@code clock}, two workers) on an in-process echo server and
   * calls it once through a Spillway session, which opens the session's credit stream.
   */
  private static Served servedOnce(SpillwayGrpcServer.Builder spillway, VirtualClock clock)
      throws IOException {
    String name = InProcessServerBuilder.generateName();
    InProcessServerBuilder builder = InProcessServerBuilder.forName(name);
    builder.addService(Echo.service(Echo.ECHO));
    SpillwayGrpcServer installed = spillway.ticker(clock).scheduler(clock).parallelism(2)
        .install(builder);
    Server server = builder.build().start();
    ManagedChannel channel = InProcessChannelBuilder.forName(name).build();
    SpillwayClientInterceptor session = SpillwayGrpc.client().sloMillis(5).ticker(clock)
        .scheduler(clock).build();
    Served served = new Served(installed, server, channel, session);
    try {
      Channel withSession = ClientInterceptors.intercept(channel, session);
      assertEquals(Status.Code.OK, Calls.unary(withSession, Echo.UNARY, "x").await().status().getCode());
      assertEquals(1, installed.control().subscribers());
    } catch (RuntimeException | Error e) {
      served.close();
      throw e;
    }
    return served;
  }
}
