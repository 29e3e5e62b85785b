package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.ManagedChannel;
import io.grpc.NameResolverRegistry;
import io.grpc.Status;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.stub.StreamObserver;
import io.spillway.api.NoControl;
import io.spillway.api.OverloadScheme;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.testing.VirtualClock;
import io.spillway.credit.Breakwater;
import io.spillway.credit.BreakwaterConfig;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * A balanced channel over a resolved target follows the resolution: backends that appear get a
 * session, backends that leave take no new call and close once nothing waits in their session,
 * and no call fails for the change. Resolution is a scripted gRPC resolver; time is virtual.
 */
class ResolvedTargetTest {

  private static final long MS = 1_000_000;
  private static final Duration SLO = Duration.ofMillis(5);
  private final VirtualClock clock = new VirtualClock();
  private final NameResolverRegistry registry = new NameResolverRegistry();
  private final ScriptedNameResolver resolver =
      ScriptedNameResolver.in(registry, InetSocketAddress.class);
  /** Backends by port: the scripted addresses' ports name in-process servers. */
  private final Map<Integer, InProcess> servers = new ConcurrentHashMap<>();
  private final List<ManagedChannel> made = new CopyOnWriteArrayList<>();

  private SpillwayBalancedChannel.Builder channel(OverloadScheme scheme) {
    return SpillwayGrpc.balanced(scheme).slo(SLO).ticker(clock).scheduler(clock)
        .nameResolverRegistry(registry).target(resolver.target("search")).reresolveEvery(Duration.ofSeconds(30))
        .channelFactory(a -> {
          InProcess server = servers.get(a.getPort());
          ManagedChannel ch = server != null ? server.channel()
              : InProcessChannelBuilder.forName("nobody-" + a.getPort()).directExecutor().build();
          made.add(ch);
          return ch;
        });
  }

  private static InetSocketAddress at(int port) {
    return new InetSocketAddress("127.0.0.1", port);
  }

  private static Map<String, Integer> servedBy(List<String> log) {
    Map<String, Integer> counts = new ConcurrentHashMap<>();
    log.forEach(name -> counts.merge(name, 1, Integer::sum));
    return counts;
  }

  @Test
  void backendsFollowTheResolutionAndOnesStillResolvedKeepTheirSessions() {
    List<String> served = new CopyOnWriteArrayList<>();
    List<StreamObserver<String>> heldByA = new CopyOnWriteArrayList<>();
    AtomicInteger holdA = new AtomicInteger();
    for (int port = 1; port <= 3; port++) {
      String name = "s" + port;
      servers.put(port, new InProcess(Echo.service((m, req, out) -> {
        if (name.equals("s1") && holdA.get() > 0) {
          heldByA.add(out);
          return;
        }
        served.add(name);
        Echo.ECHO.handle(m, req, out);
      })));
    }
    try {
      resolver.next = List.of(at(1), at(2));
      try (SpillwayBalancedChannel channel = channel(NoControl.INSTANCE).build()) {
        assertEquals(List.of(at(1), at(2)), channel.addresses());
        for (int i = 0; i < 20; i++) {
          assertEquals(Status.Code.OK, Calls.unary(channel, Echo.UNARY, "x").await().status().getCode());
        }
        assertEquals(java.util.Set.of("s1", "s2"), servedBy(served).keySet(), "both backends in rotation");
        SpillwayClientInterceptor sessionOf2 = channel.sessions().get(1);

        holdA.set(1); // a call in flight on backend 1 when it leaves the resolution
        Calls.Handle inFlight;
        do {
          inFlight = Calls.unary(channel, Echo.UNARY, "held");
        } while (heldByA.isEmpty());
        served.clear();

        resolver.publish(List.of(at(2), at(3)));
        assertEquals(List.of(at(2), at(3)), channel.addresses());
        assertSame(sessionOf2, channel.sessions().get(0), "a backend still resolved keeps its session");
        for (int i = 0; i < 20; i++) {
          assertEquals(Status.Code.OK, Calls.unary(channel, Echo.UNARY, "y").await().status().getCode());
        }
        assertEquals(java.util.Set.of("s2", "s3"), servedBy(served).keySet(),
            "the new backend in rotation, none for the one that left: " + served);

        ManagedChannel toA = made.get(0);
        assertFalse(toA.isShutdown(), "not closed before one SLO has passed");
        clock.advance(SLO.toNanos());
        assertTrue(toA.isShutdown(), "closed once nothing waits in its session");
        heldByA.get(0).onNext("late");
        heldByA.get(0).onCompleted();
        assertEquals(Status.Code.OK, inFlight.await().status().getCode(),
            "a call in flight on a backend that left ends normally");
      }
    } finally {
      servers.values().forEach(InProcess::close);
    }
  }

  /**
   * A backend that leaves with calls queued in its session (it granted fewer credits than it was
   * sent) keeps sending them as its credits come back; none fails because it left, and the
   * session closes only when its queue is empty.
   */
  @Test
  void callsQueuedForABackendThatLeftAreStillSentToIt() {
    OverloadScheme breakwater = Breakwater.of(BreakwaterConfig.forSlo(5 * MS, 100_000));
    List<StreamObserver<String>> heldBy2 = new CopyOnWriteArrayList<>();
    SpillwayGrpcServer s1 = SpillwayGrpc.server(breakwater).ticker(clock).scheduler(clock)
        .parallelism(1).queueDelay(QueueDelaySignal.NONE).build();
    SpillwayGrpcServer s2 = SpillwayGrpc.server(breakwater).ticker(clock).scheduler(clock)
        .parallelism(1).queueDelay(QueueDelaySignal.NONE).build();
    servers.put(1, new InProcess(s1.intercept(Echo.service(Echo.ECHO)), s1.controlService()));
    servers.put(2, new InProcess(s2.intercept(Echo.service((m, req, out) -> heldBy2.add(out))),
        s2.controlService()));
    try {
      resolver.next = List.of(at(1), at(2));
      AtomicInteger n = new AtomicInteger();
      try (SpillwayBalancedChannel channel = channel(breakwater)
          .picker(avoid -> n.getAndIncrement() < 5 ? 1 : 0).build()) {
        List<Calls.Handle> for2 = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
          for2.add(Calls.unary(channel, Echo.UNARY, "q" + i));
        }
        assertEquals(1, heldBy2.size(), "backend 2 granted one credit");
        SpillwayClientInterceptor session2 = channel.sessions().get(1);
        assertEquals(4, session2.queued());

        resolver.publish(List.of(at(1)));
        assertEquals(List.of(at(1)), channel.addresses());
        ManagedChannel to2 = made.get(1);
        for (int i = 0; i < 5; i++) { // backend 2 answers one call every 0.3 ms
          clock.advance(300_000);
          heldBy2.get(i).onNext("late");
          heldBy2.get(i).onCompleted();
        }
        for (Calls.Handle h : for2) {
          assertEquals(Status.Code.OK, h.await().status().getCode(), "a queued call failed for the change");
        }
        assertEquals(0, session2.queued());
        assertFalse(to2.isShutdown(), "closed before one SLO had passed");
        clock.advance(SLO.toNanos());
        assertTrue(to2.isShutdown(), "closed once its queue was empty");
      }
    } finally {
      servers.values().forEach(InProcess::close);
      s1.close();
      s2.close();
    }
  }

  @Test
  void theTargetIsResolvedAgainEveryPeriodAndWhenAConnectionFailsUntilClosed() throws Exception {
    servers.put(1, new InProcess(Echo.service(Echo.ECHO)));
    try {
      resolver.next = List.of(at(1));
      SpillwayBalancedChannel channel = channel(NoControl.INSTANCE).build();
      assertEquals(0, resolver.refreshes.get());
      clock.advance(Duration.ofSeconds(30).toNanos());
      assertEquals(1, resolver.refreshes.get());
      clock.advance(Duration.ofSeconds(60).toNanos());
      assertEquals(3, resolver.refreshes.get());

      // a backend whose server is gone: its failed connection asks for a fresh resolution
      resolver.refreshed = new CountDownLatch(1);
      resolver.publish(List.of(at(1), at(9)));
      int before = resolver.refreshes.get();
      ManagedChannel toGone = made.get(1);
      toGone.getState(true);
      assertTrue(resolver.refreshed.await(10, TimeUnit.SECONDS), "no refresh after a failed connection");
      assertTrue(resolver.refreshes.get() > before);

      channel.close();
      assertTrue(resolver.shutdown);
      int atClose = resolver.refreshes.get();
      clock.advance(Duration.ofSeconds(120).toNanos());
      assertEquals(atClose, resolver.refreshes.get(), "a closed channel stops re-resolving");
      assertTrue(made.stream().allMatch(ManagedChannel::isShutdown));
    } finally {
      servers.values().forEach(InProcess::close);
    }
  }

  @Test
  void aFailedOrEmptyResolutionKeepsTheBackends() {
    servers.put(1, new InProcess(Echo.service(Echo.ECHO)));
    try {
      resolver.next = List.of(at(1));
      try (SpillwayBalancedChannel channel = channel(NoControl.INSTANCE).build()) {
        resolver.fail(Status.UNAVAILABLE.withDescription("registry down"));
        assertEquals(List.of(at(1)), channel.addresses());
        resolver.publish(List.of());
        assertEquals(List.of(at(1)), channel.addresses());
        assertEquals(Status.Code.OK, Calls.unary(channel, Echo.UNARY, "x").await().status().getCode());
      }
    } finally {
      servers.values().forEach(InProcess::close);
    }
  }

  @Test
  void badTargetsFailAtBuildWithTheReason() {
    resolver.failFirst = Status.UNAVAILABLE.withDescription("no such service");
    IllegalArgumentException unresolved = assertThrows(IllegalArgumentException.class,
        () -> channel(NoControl.INSTANCE).build());
    assertTrue(unresolved.getMessage().contains("no such service"), unresolved.getMessage());
    assertTrue(resolver.shutdown, "the resolver of a channel that failed to build is shut down");

    IllegalArgumentException noScheme = assertThrows(IllegalArgumentException.class,
        () -> SpillwayGrpc.balanced().slo(SLO).nameResolverRegistry(registry)
            .target("consul:///search").build());
    assertTrue(noScheme.getMessage().contains("consul"), noScheme.getMessage());
    assertThrows(IllegalArgumentException.class,
        () -> SpillwayGrpc.balanced().slo(SLO).target("dns:///search.internal"));
    assertThrows(IllegalArgumentException.class,
        () -> SpillwayGrpc.balanced().slo(SLO).target("search internal:80"));
  }

  /**
   * Over real sockets, with the default channel factory: a server that appears in the resolution
   * takes calls, and every call of a run during which the backends change succeeds.
   */
  @Test
  void onSocketsABackendAddedAndOneRemovedMidRunLoseNoCall() throws Exception {
    List<String> served = new CopyOnWriteArrayList<>();
    io.grpc.Server one = io.grpc.ServerBuilder.forPort(0).addService(Echo.service((m, req, out) -> {
      served.add("one");
      Echo.ECHO.handle(m, req, out);
    })).build().start();
    io.grpc.Server two = io.grpc.ServerBuilder.forPort(0).addService(Echo.service((m, req, out) -> {
      served.add("two");
      Echo.ECHO.handle(m, req, out);
    })).build().start();
    try {
      resolver.next = List.of(at(one.getPort()));
      try (SpillwayBalancedChannel channel = SpillwayGrpc.balanced().slo(SLO).ticker(clock)
          .scheduler(clock).nameResolverRegistry(registry).target(resolver.target("search")).build()) {
        List<Status.Code> codes = new ArrayList<>();
        for (int i = 0; i < 30; i++) {
          codes.add(Calls.unary(channel, Echo.UNARY, "a").await().status().getCode());
        }
        resolver.publish(List.of(at(one.getPort()), at(two.getPort())));
        for (int i = 0; i < 30; i++) {
          codes.add(Calls.unary(channel, Echo.UNARY, "b").await().status().getCode());
        }
        assertTrue(served.contains("two"), "the added server takes calls: " + served);
        resolver.publish(List.of(at(two.getPort())));
        clock.advance(SLO.toNanos()); // the first server's backend closes
        served.clear();
        for (int i = 0; i < 30; i++) {
          codes.add(Calls.unary(channel, Echo.UNARY, "c").await().status().getCode());
        }
        assertEquals(List.of(Status.Code.OK), codes.stream().distinct().toList(), "every call");
        assertEquals(List.of("two"), served.stream().distinct().toList());
      }
    } finally {
      one.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      two.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  /** gRPC's own DNS resolver, through the default registry, on a name every machine has. */
  @Test
  void aDnsTargetResolvesThroughGrpc() {
    try (SpillwayBalancedChannel channel = SpillwayGrpc.balanced(NoControl.INSTANCE).slo(SLO)
        .target("localhost:1").build()) {
      assertFalse(channel.addresses().isEmpty());
      assertTrue(channel.addresses().stream().allMatch(a -> a.getPort() == 1
          && a.getAddress().isLoopbackAddress()), channel.addresses().toString());
      assertEquals("localhost:1", channel.authority());
    }
  }
}
