package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import io.spillway.api.OverloadScheme;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.testing.VirtualClock;
import io.spillway.credit.Breakwater;
import io.spillway.credit.BreakwaterConfig;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** One session per backend, and retry to a replica after a fast reject. Virtual time. */
class BalancedChannelTest {

  private static final long MS = 1_000_000;
  private final VirtualClock clock = new VirtualClock();
  private final OverloadScheme breakwater = Breakwater.of(BreakwaterConfig.forSlo(5 * MS, 100_000));

  private SpillwayGrpcServer server() {
    return SpillwayGrpc.server(breakwater).ticker(clock).scheduler(clock).parallelism(1)
        .queueDelay(QueueDelaySignal.NONE).build();
  }

  @Test
  void creditsFromOneBackendNeverReleaseCallsBoundForAnother() {
    List<StreamObserver<String>> heldByB = new CopyOnWriteArrayList<>();
    AtomicInteger servedByA = new AtomicInteger();
    try (SpillwayGrpcServer a = server(); SpillwayGrpcServer b = server();
        InProcess backendA = new InProcess(a.intercept(Echo.service((m, req, out) -> {
          servedByA.incrementAndGet();
          Echo.ECHO.handle(m, req, out);
        })), a.controlService());
        InProcess backendB = new InProcess(b.intercept(Echo.service((m, req, out) -> heldByB.add(out))),
            b.controlService())) {
      AtomicInteger n = new AtomicInteger();
      SpillwayBalancedChannel channel = SpillwayGrpc.balanced(breakwater).slo(Duration.ofMillis(5))
          .ticker(clock).scheduler(clock)
          .picker(avoid -> n.getAndIncrement() < 5 ? 1 : 0) // five calls for B, the rest for A
          .build(List.of(backendA.channel(), backendB.channel()));
      List<Calls.Handle> forB = new ArrayList<>();
      for (int i = 0; i < 5; i++) {
        forB.add(Calls.unary(channel, Echo.UNARY, "b" + i));
      }
      for (int i = 0; i < 40; i++) {
        assertEquals(Status.Code.OK, Calls.unary(channel, Echo.UNARY, "a" + i).await().status().getCode());
      }
      assertEquals(40, servedByA.get());
      assertEquals(1, heldByB.size(), "B granted one credit; A's 40 responses released none of B's calls");
      assertEquals(4, channel.sessions().get(1).queued());
      assertEquals(0, channel.sessions().get(0).queued());
      long sessionA = channel.sessions().get(0).sessionId();
      long sessionB = channel.sessions().get(1).sessionId();
      assertNotEquals(sessionA, sessionB, "one session per backend");
      for (int i = 0; i < 5; i++) { // B answers one at a time; each answer releases the next
        heldByB.get(i).onNext("late");
        heldByB.get(i).onCompleted();
      }
      for (Calls.Handle h : forB) {
        assertEquals(Status.Code.OK, h.await().status().getCode());
      }
      channel.close();
    }
  }

  @Test
  void aFastRejectIsRetriedOnceOnAnotherBackendAndRetriesStayWithinTheirShare() {
    ScriptedGate rejecting = new ScriptedGate();
    rejecting.decide = r -> io.spillway.api.Status.REJECTED_AQM;
    ScriptedGate alsoRejecting = new ScriptedGate();
    alsoRejecting.decide = r -> io.spillway.api.Status.REJECTED_AQM;
    try (InProcess a = new InProcess(ServerInterceptors.intercept(Echo.service(Echo.ECHO),
            new SpillwayServerInterceptor(rejecting, clock)));
        InProcess b = new InProcess(ServerInterceptors.intercept(Echo.service(Echo.ECHO),
            new SpillwayServerInterceptor(new ScriptedGate(), clock)));
        InProcess c = new InProcess(ServerInterceptors.intercept(Echo.service(Echo.ECHO),
            new SpillwayServerInterceptor(alsoRejecting, clock)))) {
      SpillwayBalancedChannel channel = SpillwayGrpc.balanced(io.spillway.api.NoControl.INSTANCE)
          .slo(Duration.ofMillis(5)).ticker(clock).scheduler(clock).retryToReplica(0.1)
          .picker(avoid -> avoid < 0 ? 0 : 1) // first to the rejecting backend, retries to B
          .build(List.of(a.channel(), b.channel(), c.channel()));
      int ok = 0;
      for (int i = 0; i < 200; i++) {
        Calls.Reply reply = Calls.unary(channel, Echo.UNARY, "x" + i).await();
        ok += reply.status().isOk() ? 1 : 0;
      }
      // A full bucket of 10 tokens (the first call's tenth overflows it), then a tenth per call:
      // 10 + 199 × 0.1 = 29.9 tokens, 29 retries.
      assertEquals(29, channel.retries());
      assertEquals(29, ok, "every retry reached the backend that admits");
      assertEquals(200, rejecting.requests.size(), "each call went to its first backend once");
      assertEquals(200, channel.calls(), "retries are not calls");

      SpillwayBalancedChannel toC = SpillwayGrpc.balanced(io.spillway.api.NoControl.INSTANCE)
          .slo(Duration.ofMillis(5)).ticker(clock).scheduler(clock).retryToReplica(0.1)
          .picker(avoid -> avoid < 0 ? 0 : 2) // the retry is rejected too: no third attempt
          .build(List.of(a.channel(), b.channel(), c.channel()));
      Calls.Reply twice = Calls.unary(toC, Echo.UNARY, "y").await();
      assertEquals(Status.Code.RESOURCE_EXHAUSTED, twice.status().getCode());
      assertEquals(1, toC.retries());
      assertEquals(1, alsoRejecting.requests.size());
      channel.close();
      toC.close();
    }
  }

  @Test
  void targetsParse() {
    assertThrows(IllegalArgumentException.class,
        () -> SpillwayGrpc.balanced().slo(Duration.ofMillis(5)).target("dns:///nohostport"));
    assertThrows(IllegalStateException.class, () -> SpillwayGrpc.balanced().slo(Duration.ofMillis(5)).build());
    SpillwayBalancedChannel channel = SpillwayGrpc.balanced().slo(Duration.ofMillis(5))
        .target("dns:///localhost:1,127.0.0.1:2").build();
    assertTrue(channel.sessions().size() >= 2);
    channel.close();
  }

  /**
   * Idle backends that are all connected take calls in turn, and the backend to avoid is never
   * picked. Connected first: a backend's connection state ranks before its queue, so backends
   * caught in different states (one refused, one still connecting) would not rotate.
   */
  @Test
  void roundRobinRotatesOverIdleConnectedBackends() {
    try (InProcess a = new InProcess(Echo.service(Echo.ECHO));
        InProcess b = new InProcess(Echo.service(Echo.ECHO));
        InProcess c = new InProcess(Echo.service(Echo.ECHO))) {
      List<io.grpc.ManagedChannel> channels = List.of(a.channel(), b.channel(), c.channel());
      SpillwayBalancedChannel channel = SpillwayGrpc.balanced(io.spillway.api.NoControl.INSTANCE)
          .slo(Duration.ofMillis(5)).ticker(clock).scheduler(clock).build(channels);
      try {
        for (io.grpc.ManagedChannel ch : channels) { // a served call leaves its channel READY
          assertEquals(Status.Code.OK, Calls.unary(ch, Echo.UNARY, "x").await().status().getCode());
          assertEquals(io.grpc.ConnectivityState.READY, ch.getState(false));
        }
        List<SpillwayBalancedChannel.Backend> backends = channel.backends();
        List<Integer> picks = new ArrayList<>();
        for (int i = 0; i < channels.size(); i++) {
          picks.add(backends.indexOf(channel.pick(backends, null)));
        }
        assertEquals(picks.size(), picks.stream().distinct().count(),
            "idle backends in rotation: " + picks);
        for (int i = 0; i < 6; i++) {
          assertNotEquals(backends.get(0), channel.pick(backends, backends.get(0)),
              "never the backend to avoid");
        }
      } finally {
        channel.close();
      }
    }
  }

  /**
   * As round_robin does, calls go to the backends that are connected: one that went away (its
   * server closed) does not keep its share of the calls, which would all fail UNAVAILABLE.
   */
  @Test
  void aBackendThatWentAwayGetsNoCallsWhileOthersAreConnected() {
    try (InProcess a = new InProcess(Echo.service(Echo.ECHO));
        InProcess b = new InProcess(Echo.service(Echo.ECHO));
        InProcess c = new InProcess(Echo.service(Echo.ECHO))) {
      SpillwayBalancedChannel channel = SpillwayGrpc.balanced(io.spillway.api.NoControl.INSTANCE)
          .slo(Duration.ofMillis(5)).ticker(clock).scheduler(clock)
          .build(List.of(a.channel(), b.channel(), c.channel()));
      try {
        for (int i = 0; i < 6; i++) { // every backend connected and serving
          assertEquals(Status.Code.OK, Calls.unary(channel, Echo.UNARY, "x").await().status()
              .getCode());
        }
        b.close(); // backend B goes away
        int unavailable = 0;
        for (int i = 0; i < 30; i++) {
          Calls.Reply r = Calls.unary(channel, Echo.UNARY, "x").await();
          unavailable += r.status().getCode() == Status.Code.UNAVAILABLE ? 1 : 0;
        }
        assertEquals(0, unavailable, "calls sent to the backend that went away");
      } finally {
        channel.close();
      }
    }
  }
}
