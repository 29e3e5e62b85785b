package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Channel;
import io.grpc.ClientInterceptors;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.Scheduler;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.Ticker;
import io.spillway.api.testing.LeakCheckingServerGate;
import io.spillway.credit.Breakwater;
import io.spillway.credit.BreakwaterConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Real threads: callers on a pool, handlers on the server's executor, the control loop and the
 * client wake-ups on a timer. Asserts outcomes only (every call ends, every permit ends once),
 * never timings.
 */
class ConcurrentCallsTest {

  private static final int SESSIONS = 4;
  private static final int CALLERS_PER_SESSION = 2;
  private static final int CALLS_PER_CALLER = 50;

  @Test
  void concurrentSessionsEndEveryCallAndEveryPermitOnce() throws Exception {
    Ticker ticker = Ticker.system();
    ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
    ExecutorService handlers = Executors.newFixedThreadPool(2);
    ExecutorService callers = Executors.newFixedThreadPool(SESSIONS * CALLERS_PER_SESSION);
    Scheduler scheduler = Scheduler.of(timer);
    Breakwater breakwater = Breakwater.of(BreakwaterConfig.forSlo(10_000_000_000L, 1_000_000));
    SpillwayControlService control = new SpillwayControlService(ticker);
    LeakCheckingServerGate gate = new LeakCheckingServerGate(breakwater.newServerGate(
        new ServerEnvironment(ticker, scheduler, QueueDelaySignal.NONE, control, OverloadMetrics.NONE, 2)));
    control.bind(gate);
    gate.start();
    String name = InProcessServerBuilder.generateName();
    Server server = InProcessServerBuilder.forName(name).executor(handlers)
        .addService(ServerInterceptors.intercept(Echo.service(Echo.ECHO),
            new SpillwayServerInterceptor(gate, ticker, new InterfaceRegistry(), control)))
        .addService(control.serviceDefinition())
        .build().start();
    ManagedChannel channel = InProcessChannelBuilder.forName(name).build();
    List<SpillwayClientInterceptor> sessions = new ArrayList<>();
    try {
      List<CompletableFuture<List<Calls.Handle>>> issued = new ArrayList<>();
      for (int s = 0; s < SESSIONS; s++) {
        SpillwayClientInterceptor session = SpillwayGrpc.client(breakwater).sessionId(100 + s)
            .sloNanos(10_000_000_000L).ticker(ticker).scheduler(scheduler).build();
        sessions.add(session);
        Channel through = ClientInterceptors.intercept(channel, session);
        for (int c = 0; c < CALLERS_PER_SESSION; c++) {
          String prefix = s + "/" + c + "/";
          issued.add(CompletableFuture.supplyAsync(() -> {
            List<Calls.Handle> handles = new ArrayList<>();
            for (int i = 0; i < CALLS_PER_CALLER; i++) {
              handles.add(Calls.unary(through, Echo.UNARY, prefix + i));
            }
            return handles;
          }, callers));
        }
      }
      int ok = 0;
      int total = 0;
      for (CompletableFuture<List<Calls.Handle>> batch : issued) {
        for (Calls.Handle handle : batch.get(60, TimeUnit.SECONDS)) {
          Calls.Reply reply = handle.await();
          total++;
          Status.Code code = reply.status().getCode();
          assertTrue(code == Status.Code.OK || code == Status.Code.RESOURCE_EXHAUSTED, reply.status().toString());
          if (code == Status.Code.OK) {
            ok++;
          }
        }
      }
      assertEquals(SESSIONS * CALLERS_PER_SESSION * CALLS_PER_CALLER, total);
      assertTrue(ok > 0, "some calls were served");
      gate.assertNoLeaks();
      assertTrue(gate.issued() <= total, "a call is admitted at most once");
    } finally {
      sessions.forEach(SpillwayClientInterceptor::close);
      channel.shutdown();
      channel.awaitTermination(10, TimeUnit.SECONDS);
      server.shutdown();
      server.awaitTermination(10, TimeUnit.SECONDS);
      gate.close();
      timer.shutdownNow();
      handlers.shutdownNow();
      callers.shutdownNow();
    }
  }
}
