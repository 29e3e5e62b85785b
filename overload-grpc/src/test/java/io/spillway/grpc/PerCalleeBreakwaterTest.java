package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.grpc.Channel;
import io.grpc.ClientInterceptors;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.stub.StreamObserver;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.OverloadScheme;
import io.spillway.api.testing.VirtualClock;
import io.spillway.credit.Breakwater;
import io.spillway.credit.BreakwaterConfig;
import io.spillway.credit.BreakwaterServerGate;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;
import org.junit.jupiter.api.Test;

/**
 * {@code breakwater-d} over in-process gRPC, in virtual time: client → A → B, Breakwater at both
 * servers, and A a Breakwater client of B through a per-callee session in its downstream
 * interceptor (rajomon-nsdi25 §4, "Breakwaterd").
 */
class PerCalleeBreakwaterTest {

  private static final long SLO = 1_000_000;
  private static final long RTT = 50_000;

  private final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 10 * RTT);
  private final OverloadScheme breakwater = Breakwater.of(BreakwaterConfig.forSlo(SLO, RTT));

  @Test
  void concurrentSubRequestsAreReCreditedAndAllComplete() {
    List<StreamObserver<String>> held = new ArrayList<>();
    Echo.Handler holding = (method, request, out) -> held.add(out);
    try (SpillwayGrpcServer bSpillway = server(2);
        InProcess b = new InProcess(bSpillway.intercept(Echo.service(holding)), bSpillway.controlService());
        SpillwayClientInterceptor aToB = session(1L << 32)) {
      Channel toB = ClientInterceptors.intercept(b.channel(),
          SpillwayGrpc.downstream().ticker(clock).perCalleeSession(aToB).build());
      List<Calls.Handle> calls = new ArrayList<>();
      List<SpillwayClientInterceptor> clients = new ArrayList<>();
      try (SpillwayGrpcServer aSpillway = server(8);
          InProcess a = new InProcess(aSpillway.intercept(Echo.service(forwardTo(toB))), aSpillway.controlService())) {
        List<Channel> toA = new ArrayList<>();
        for (int c = 1; c <= 3; c++) {
          SpillwayClientInterceptor client = session(c);
          clients.add(client);
          toA.add(ClientInterceptors.intercept(a.channel(), client));
        }
        int answered = 0;
        for (int round = 0; round < 100; round++) {
          for (Channel channel : toA) {
            calls.add(Calls.unary(channel, Echo.UNARY, "r" + round));
          }
          clock.advance(RTT / 5);
          while (answered < held.size()) {
            StreamObserver<String> out = held.get(answered++);
            out.onNext("ok");
            out.onCompleted();
          }
          clock.advance(RTT / 5);
        }
        for (int i = 0; i < 40 && answered < calls.size(); i++) {
          clock.advance(RTT / 5);
          while (answered < held.size()) {
            StreamObserver<String> out = held.get(answered++);
            out.onNext("ok");
            out.onCompleted();
          }
        }
        for (int i = 0; i < calls.size(); i++) {
          Calls.Reply reply = calls.get(i).await();
          assertEquals(Status.Code.OK, reply.status().getCode(), "call " + i + ": " + reply.status());
        }
        clients.forEach(SpillwayClientInterceptor::close);
      }
      aToB.close();
      BreakwaterServerGate bGate = (BreakwaterServerGate) bSpillway.gate();
      assertEquals(0, bGate.sessionCount());
      assertEquals(0, bGate.issuedCredits(), "every credit returned to B's pool");
    }
  }

  /**
   * The caller's call ends (here: its client cancels it) while its sub-request to B is in B's
   * handler. B's answer carries the session's credit delta (+2: the pool grew while B worked);
   * were the sub-request cancelled with its caller, B's handler would still close it, B's gate
   * would count the +2 as the session's, and the session would never hear of it: the next answer
   * revokes two credits B thinks are unused, leaving the session with none while B believes it
   * holds one, so B never sends the explicit credit a drained session waits for, and every later
   * sub-request expires in the session's queue.
   */
  @Test
  void aSubRequestOutlivingItsCallerStillBringsTheSessionItsCredits() {
    List<StreamObserver<String>> held = new ArrayList<>();
    Echo.Handler holding = (method, request, out) -> held.add(out);
    ManualExecutor bThreads = new ManualExecutor(); // B's handlers and its server-side callbacks
    try (SpillwayGrpcServer bSpillway = server(1);
        SpillwayClientInterceptor aToB = session(1L << 32)) {
      BreakwaterServerGate bGate = (BreakwaterServerGate) bSpillway.gate();
      String bName = InProcessServerBuilder.generateName();
      Server b = startServer(bName, bThreads,
          bSpillway.intercept(Echo.service(holding)), bSpillway.controlService());
      ManagedChannel bChannel = InProcessChannelBuilder.forName(bName).directExecutor().build();
      try {
        Channel toB = ClientInterceptors.intercept(bChannel,
            SpillwayGrpc.downstream().ticker(clock).perCalleeSession(aToB).build());
        ScriptedGate aGate = new ScriptedGate();
        try (InProcess a = new InProcess(ServerInterceptors.intercept(Echo.service(forwardTo(toB)),
            new SpillwayServerInterceptor(aGate, clock)))) {
          Channel toA = a.channel();

          Calls.Handle first = Calls.unary(toA, Echo.UNARY, "1");
          bThreads.runAll(); // the credit stream opens, then the first sub-request reaches B
          assertEquals(1, held.size());
          clock.advance(3 * RTT); // three control periods: B's pool grows from 1 to 4
          first.call().cancel("the caller gave up", null);
          StreamObserver<String> out = held.get(0);
          out.onNext("late");
          out.onCompleted(); // B answers the sub-request: window 1 -> 3
          bThreads.runAll();
          assertEquals(Status.Code.CANCELLED, first.await().status().getCode());
          assertEquals(3, bGate.windowOf(1L << 32));

          for (int i = 2; i <= 5; i++) {
            Calls.Handle next = Calls.unary(toA, Echo.UNARY, Integer.toString(i));
            bThreads.runAll();
            for (int tick = 0; tick < 20 && held.size() < i; tick++) {
              clock.advance(RTT); // a drained session waits for its explicit credit
              bThreads.runAll();
            }
            assertEquals(i, held.size(), "sub-request " + i + " reached B");
            held.get(i - 1).onNext("ok");
            held.get(i - 1).onCompleted();
            bThreads.runAll();
            Calls.Reply reply = next.await();
            assertEquals(Status.Code.OK, reply.status().getCode(), "call " + i + ": " + reply.status());
          }
        }
        aToB.close();
        bThreads.runAll();
        assertEquals(0, bGate.sessionCount());
        assertEquals(0, bGate.issuedCredits(), "every credit returned to B's pool");
      } finally {
        bChannel.shutdownNow();
        b.shutdownNow();
        bThreads.runAll();
      }
    }
  }

  /** A sub-request still queued in the session when its caller ends is never sent. */
  @Test
  void aQueuedSubRequestEndsUnsentWithItsCaller() {
    List<StreamObserver<String>> held = new ArrayList<>();
    Echo.Handler holding = (method, request, out) -> held.add(out);
    try (SpillwayGrpcServer bSpillway = server(1);
        InProcess b = new InProcess(bSpillway.intercept(Echo.service(holding)), bSpillway.controlService());
        SpillwayClientInterceptor aToB = session(1L << 32)) {
      Channel toB = ClientInterceptors.intercept(b.channel(),
          SpillwayGrpc.downstream().ticker(clock).perCalleeSession(aToB).build());
      try (InProcess a = new InProcess(ServerInterceptors.intercept(Echo.service(forwardTo(toB)),
          new SpillwayServerInterceptor(new ScriptedGate(), clock)))) {
        Calls.Handle first = Calls.unary(a.channel(), Echo.UNARY, "1");
        Calls.Handle second = Calls.unary(a.channel(), Echo.UNARY, "2");
        assertEquals(1, held.size(), "a window of one: the second sub-request waits in the session");
        assertEquals(1, aToB.queued());

        second.call().cancel("the caller gave up", null);
        assertEquals(Status.Code.CANCELLED, second.await().status().getCode());

        held.get(0).onNext("ok");
        held.get(0).onCompleted();
        assertEquals(Status.Code.OK, first.await().status().getCode());
        assertEquals(0, aToB.queued());
        assertEquals(1, held.size(), "the cancelled sub-request was never sent");
      }
      aToB.close();
      BreakwaterServerGate bGate = (BreakwaterServerGate) bSpillway.gate();
      assertEquals(0, bGate.sessionCount());
      assertEquals(0, bGate.issuedCredits());
    }
  }

  /** An in-process server whose calls run on {@code executor}. */
  private static Server startServer(String name, Executor executor, ServerServiceDefinition... services) {
    InProcessServerBuilder builder = InProcessServerBuilder.forName(name).executor(executor);
    for (ServerServiceDefinition service : services) {
      builder.addService(service);
    }
    try {
      return builder.build().start();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Runs what it is given only when the test says so, on the test's thread. */
  private static final class ManualExecutor implements Executor {
    private final ArrayDeque<Runnable> tasks = new ArrayDeque<>();

    @Override
    public void execute(Runnable task) {
      tasks.add(task);
    }

    void runAll() {
      Runnable task;
      while ((task = tasks.poll()) != null) {
        task.run();
      }
    }
  }

  /** A's handler: calls B's Other, answers with what it got. */
  private static Echo.Handler forwardTo(Channel toB) {
    return (method, request, out) ->
        Calls.unary(toB, Echo.OTHER, "sub:" + request).reply().whenComplete((reply, error) -> {
          if (reply.status().isOk()) {
            out.onNext(reply.body());
            out.onCompleted();
          } else {
            out.onError(reply.status().asRuntimeException());
          }
        });
  }

  private SpillwayGrpcServer server(int parallelism) {
    return SpillwayGrpc.server(breakwater).ticker(clock).scheduler(clock).parallelism(parallelism)
        .queueDelay(QueueDelaySignal.NONE).build();
  }

  private SpillwayClientInterceptor session(long id) {
    return SpillwayGrpc.client(breakwater).sessionId(id).sloNanos(SLO).ticker(clock).scheduler(clock).build();
  }
}
