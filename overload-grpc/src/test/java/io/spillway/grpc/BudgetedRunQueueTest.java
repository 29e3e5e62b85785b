package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Channel;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.spillway.api.ClientEnvironment;
import io.spillway.api.ClientGate;
import io.spillway.api.NoControl;
import io.spillway.api.OverloadScheme;
import io.spillway.api.Outcome;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.ServerPermit;
import io.spillway.api.testing.VirtualClock;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Protego's ASQM at the run queue over gRPC ({@link SpillwayGrpcServer.Builder#budgetedRunQueue}):
 * a call whose budget the server's queueing delay already exceeds is refused before it queues,
 * and its permit ends {@code ABORTED}, the drop Protego's pool is sized by (protego-nsdi23 §3.2,
 * Alg. 1 line 6). Virtual time; the queueing delay is set by hand.
 */
class BudgetedRunQueueTest {

  private static final long MS = 1_000_000;

  private final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 60_000 * MS);
  private final AtomicLong queueDelay = new AtomicLong();
  private final AtomicLong runs = new AtomicLong();
  private final List<Outcome> outcomes = new CopyOnWriteArrayList<>();
  private Server server;
  private ManagedChannel channel;
  private SpillwayGrpcServer spillway;

  /** No control, every admitted permit's outcome recorded. */
  private final OverloadScheme recording = new OverloadScheme() {
    @Override
    public String name() {
      return "none";
    }

    @Override
    public ServerGate newServerGate(ServerEnvironment environment) {
      ServerGate none = NoControl.INSTANCE.newServerGate(environment);
      return new ServerGate() {
        @Override
        public ServerPermit admit(RequestMetadata request, long nowNanos) {
          ServerPermit permit = none.admit(request, nowNanos);
          return new ServerPermit() {
            @Override
            public boolean isAdmitted() {
              return permit.isAdmitted();
            }

            @Override
            public io.spillway.api.Status status() {
              return permit.status();
            }

            @Override
            public void complete(Outcome outcome, long now, ResponseMetadata response) {
              outcomes.add(outcome);
              permit.complete(outcome, now, response);
            }

            @Override
            public boolean isCompleted() {
              return permit.isCompleted();
            }
          };
        }

        @Override
        public void deregister(long sessionId, long nowNanos) {
          none.deregister(sessionId, nowNanos);
        }
      };
    }

    @Override
    public <R> ClientGate<R> newClientGate(ClientEnvironment environment) {
      return NoControl.INSTANCE.newClientGate(environment);
    }
  };

  private Channel start(boolean budgetedRunQueue) throws Exception {
    String name = InProcessServerBuilder.generateName();
    InProcessServerBuilder builder = InProcessServerBuilder.forName(name);
    builder.addService(Echo.service((method, request, out) -> {
      runs.incrementAndGet();
      out.onNext("ok");
      out.onCompleted();
    }));
    spillway = SpillwayGrpc.server(recording).sloMillis(5).ticker(clock).scheduler(clock)
        .parallelism(1).queueDelay(now -> queueDelay.get()).budgetedRunQueue(budgetedRunQueue)
        .install(builder);
    server = builder.build().start();
    channel = InProcessChannelBuilder.forName(name).build();
    return channel;
  }

  @AfterEach
  void stop() throws Exception {
    if (channel != null) {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    if (server != null) {
      server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    if (spillway != null) {
      spillway.close();
    }
  }

  @Test
  void aCallWhoseBudgetTheQueueAlreadyExceedsIsRefusedBeforeItQueues() throws Exception {
    Channel ch = start(true);
    queueDelay.set(3 * MS); // within the 5 ms budget (the SLO; no service time sampled yet)
    assertEquals(Status.Code.OK, Calls.unary(ch, Echo.UNARY, "a").await().status().getCode());
    queueDelay.set(6 * MS); // longer than the budget: it would wait past it
    Calls.Reply refused = Calls.unary(ch, Echo.UNARY, "b").await();
    assertEquals(Status.Code.RESOURCE_EXHAUSTED, refused.status().getCode(), refused.toString());
    assertEquals("4", refused.trailer(SpillwayMetadata.STATUS), "REJECTED_BUDGET");
    assertTrue(refused.trailer(SpillwayServerInterceptor.RETRY_PUSHBACK_MS) != null, "a pushback");
    assertEquals(1, runs.get(), "the refused call's handler never ran");
    assertEquals(List.of(Outcome.SUCCESS, Outcome.ABORTED), outcomes,
        "admitted, then ended ABORTED: a drop to Protego's pool");
  }

  @Test
  void offByDefaultTheBudgetBoundsOnlyTheHandlersWaits() throws Exception {
    Channel ch = start(false);
    queueDelay.set(6 * MS);
    assertEquals(Status.Code.OK, Calls.unary(ch, Echo.UNARY, "a").await().status().getCode());
    assertEquals(1, runs.get());
    assertEquals(List.of(Outcome.SUCCESS), outcomes);
  }
}
