package io.spillway.consumer;

import io.grpc.BindableService;
import io.grpc.Server;
import io.grpc.ServerBuilder;
import io.spillway.asqm.BudgetedLock;
import io.spillway.grpc.SpillwayBalancedChannel;
import io.spillway.grpc.SpillwayClientInterceptor;
import io.spillway.grpc.SpillwayGrpc;
import io.spillway.grpc.SpillwayGrpcServer;
import java.io.IOException;
import java.time.Duration;

/**
 * What a team writes, compiled against the exported API only: a protected server, a client
 * session, a balanced channel, and a budgeted lock. Not thread-safe; one per server.
 */
public final class ProtectedServer implements AutoCloseable {

  private final BudgetedLock lock = new BudgetedLock();
  private final SpillwayGrpcServer spillway;
  private final Server server;

  /** Starts {@code service} on {@code port} (0: any free port) with a 5 ms SLO. */
  public ProtectedServer(int port, BindableService service) throws IOException {
    ServerBuilder<?> builder = ServerBuilder.forPort(port).addService(service);
    spillway = SpillwayGrpc.server().slo(Duration.ofMillis(5)).install(builder);
    server = builder.build().start();
  }

  /** The port the server listens on. */
  public int port() {
    return server.getPort();
  }

  /** Runs {@code work} under the shared lock, refusing if the lock's queue outlasts the budget. */
  public void underLock(Runnable work) {
    try (var held = lock.acquireWithinBudget()) {
      work.run();
    }
  }

  /** A client session for this server. */
  public static SpillwayClientInterceptor session() {
    return SpillwayGrpc.client().slo(Duration.ofMillis(5)).build();
  }

  /** A channel over several replicas, one session each. */
  public static SpillwayBalancedChannel replicas(String target) {
    return SpillwayGrpc.balanced().slo(Duration.ofMillis(5)).target(target).retryToReplica(0.1)
        .build();
  }

  @Override
  public void close() throws InterruptedException {
    server.shutdownNow().awaitTermination();
    spillway.close();
  }
}
