package io.spillway.transport;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.Unpooled;
import io.spillway.api.ClientEnvironment;
import io.spillway.api.ClientGate;
import io.spillway.api.NoControl;
import io.spillway.api.OverloadScheme;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.testing.LeakCheckingServerGate;
import io.spillway.threading.ThreadingAdaptation;
import io.spillway.threading.ThreadingModel;
import io.spillway.threading.ThreadingProfile;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Threading models switched live on real sockets (mutune-osdi18 §4: "in-flight requests during
 * transitions are handled by the earlier model"): under a stream of pipelined requests and a
 * switch every few dozen of them, every request is answered once, with its own payload, every
 * permit ends (leak-checking gate), and each connection's requests start in the order they were
 * sent. Waits are bounded only so a bug fails instead of hanging; nothing is timed.
 */
class ThreadingSwitchTest {

  private static final long SEED = Long.getLong("spillway.test.seed", 11L);
  private static final List<ThreadingModel> MODELS = List.of(ThreadingModel.parse("IP"),
      ThreadingModel.parse("IB"), ThreadingModel.parse("DB1"), ThreadingModel.parse("DP1"));

  /** Holds the server gate, wrapped so it can be checked for leaks. */
  private static final class LeakChecked implements OverloadScheme {
    final AtomicReference<LeakCheckingServerGate> gate = new AtomicReference<>();

    @Override
    public String name() {
      return "none";
    }

    @Override
    public ServerGate newServerGate(ServerEnvironment environment) {
      LeakCheckingServerGate g = new LeakCheckingServerGate(NoControl.INSTANCE.newServerGate(environment));
      gate.set(g);
      return g;
    }

    @Override
    public <R> ClientGate<R> newClientGate(ClientEnvironment environment) {
      return NoControl.INSTANCE.newClientGate(environment);
    }
  }

  /** Records, per session, the sequence numbers in the order their handlers started. */
  private static final class StartOrder {
    private final long[] last = new long[8];
    final AtomicInteger outOfOrder = new AtomicInteger();
    final AtomicInteger onLoop = new AtomicInteger();
    final AtomicInteger onWorker = new AtomicInteger();

    private int started;

    /** Returns how many have started, this one included. */
    synchronized int started(int session, long sequence) {
      if (sequence <= last[session]) {
        outOfOrder.incrementAndGet();
      }
      last[session] = sequence;
      (Thread.currentThread().getName().startsWith("spillway-worker") ? onWorker : onLoop).incrementAndGet();
      return ++started;
    }
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  void switchingUnderLoadLosesNothingAndKeepsEachConnectionsOrder(Transport transport) throws Exception {
    org.junit.jupiter.api.Assumptions.assumeTrue(transport.isAvailable(),
        () -> transport + " unavailable: " + transport.unavailabilityCause());
    StartOrder order = new StartOrder();
    LeakChecked scheme = new LeakChecked();
    AtomicReference<SpillwayServer> running = new AtomicReference<>();
    SplittableRandom serverSide = new SplittableRandom(SEED + 1);
    SpillwayServer.Builder b = SpillwayServer.builder().scheme(scheme).transport(transport)
        .threadingModel(MODELS.get(0)).handler((req, alloc) -> {
          int session = req.getInt(req.readerIndex());
          int started = order.started(session, req.getLong(req.readerIndex() + 4));
          if (started % 23 == 0) { // switch where the server is, with its queues full
            ThreadingModel next;
            synchronized (serverSide) {
              next = MODELS.get(serverSide.nextInt(MODELS.size()));
            }
            running.get().switchThreading(next);
          }
          long end = System.nanoTime() + 20_000; // some work, so requests queue behind each other
          while (System.nanoTime() - end < 0) {
            Thread.onSpinWait();
          }
          return req.retainedDuplicate();
        });
    // The switch is exercised with every model this server may take: build it adaptive-capable.
    ThreadingProfile.Builder all = ThreadingProfile.builder();
    MODELS.forEach(m -> all.add(m, 0, 1));
    b.adaptiveThreading(new ThreadingAdaptation(all.build(), 5, 9, Long.MAX_VALUE / 4, 0.1, 0.25, 3));
    SplittableRandom random = new SplittableRandom(SEED);
    int requests = 6_000;
    try (SpillwayServer server = b.build().start();
         SpillwayClient client = SpillwayClient.builder().scheme(scheme).transport(server.transport())
             .port(server.port()).connections(2).sessions(4).sloNanos(60_000_000_000L).build().start()) {
      running.set(server);
      assertEquals(transport, server.transport());
      List<CompletableFuture<byte[]>> calls = new ArrayList<>();
      List<byte[]> sent = new ArrayList<>();
      long[] sequence = new long[4];
      for (int i = 0; i < requests; i++) {
        int session = random.nextInt(4);
        byte[] payload = ByteBuffer.allocate(12).putInt(session).putLong(++sequence[session]).array();
        sent.add(payload);
        calls.add(client.session(session).call(payload));
        if (i % 37 == 36) {
          server.switchThreading(MODELS.get(random.nextInt(MODELS.size())));
        }
        if (i % 200 == 199) {
          calls.get(i - 100).get(20, TimeUnit.SECONDS); // keep a backlog, not an unbounded one
        }
      }
      for (int i = 0; i < requests; i++) {
        assertArrayEquals(sent.get(i), calls.get(i).get(20, TimeUnit.SECONDS),
            "request " + i + ", seed " + SEED + ", " + transport);
      }
      assertTrue(server.threadingSwitches() >= 100, "switches: " + server.threadingSwitches());
      assertEquals(0, order.outOfOrder.get(), "requests started out of order, seed " + SEED);
      assertTrue(order.onLoop.get() > 0 && order.onWorker.get() > 0,
          "ran in-line " + order.onLoop.get() + ", dispatched " + order.onWorker.get());
      LeakCheckingServerGate gate = scheme.gate.get();
      assertEquals(requests, gate.admitted());
      assertEquals(0, gate.outstanding(), "permits not ended");
    }
  }

  @Test
  void goingInlineWaitsForWhatWasDispatchedAndGoingToDispatchMovesTheQueueInOrder() throws Exception {
    java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.CountDownLatch firstRunning = new java.util.concurrent.CountDownLatch(1);
    List<Integer> starts = java.util.Collections.synchronizedList(new ArrayList<>());
    ThreadingProfile.Builder two = ThreadingProfile.builder()
        .add(ThreadingModel.parse("DB1"), 0, 1).add(ThreadingModel.parse("IB"), 0, 2);
    try (SpillwayServer server = SpillwayServer.builder().scheme(NoControl.INSTANCE)
        .adaptiveThreading(new ThreadingAdaptation(two.build(), 5, 9, Long.MAX_VALUE / 4, 0.1, 0.25, 3))
        .handler((req, alloc) -> {
          int n = req.getInt(req.readerIndex());
          starts.add(n);
          if (n == 1) {
            firstRunning.countDown();
            release.await();
          }
          return req.retainedDuplicate();
        }).build().start();
         SpillwayClient client = SpillwayClient.builder().scheme(NoControl.INSTANCE).transport(server.transport())
             .port(server.port()).sloNanos(60_000_000_000L).build().start()) {
      assertEquals(ThreadingModel.parse("DB1"), server.threadingModel().orElseThrow());
      CompletableFuture<byte[]> a = client.session(0).call(ByteBuffer.allocate(4).putInt(1).array());
      assertTrue(firstRunning.await(20, TimeUnit.SECONDS));
      CompletableFuture<byte[]> b = client.session(0).call(ByteBuffer.allocate(4).putInt(2).array());
      // b waits in the worker queue behind a; once the server has queued it there, go in-line.
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      while (server.queuedOnWorkers() < 1 && System.nanoTime() - deadline < 0) {
        Thread.onSpinWait();
      }
      assertEquals(1, server.queuedOnWorkers());
      server.switchThreading(ThreadingModel.parse("IB"));
      CompletableFuture<byte[]> c = client.session(0).call(ByteBuffer.allocate(4).putInt(3).array());
      release.countDown();
      for (CompletableFuture<byte[]> f : List.of(a, b, c)) {
        f.get(20, TimeUnit.SECONDS);
      }
      assertEquals(List.of(1, 2, 3), starts, "an in-line request started before one dispatched earlier");
    }
  }

  /**
   * An operator's switch holds against the adaptation (mutune-osdi18 §4's loop) until handed back,
   * and the adaptation's confirmations then start over. The adaptation's period is an hour, so it
   * decides only when the test asks ({@code adaptNow}), once per window of 2 arrivals; its profile
   * has IB far faster than DB2 at every load, so every decision favours IB.
   */
  @Test
  void anOperatorsSwitchHoldsAgainstTheAdaptationUntilResumed() throws Exception {
    ThreadingModel ib = ThreadingModel.parse("IB");
    ThreadingModel db2 = ThreadingModel.parse("DB2");
    ThreadingProfile profile = ThreadingProfile.builder()
        .add(ib, 0, 10_000).add(ib, 1_000_000, 20_000)
        .add(db2, 0, 1_000_000).add(db2, 1_000_000, 2_000_000).build();
    ThreadingAdaptation adaptation = new ThreadingAdaptation(profile, 2, 1, TimeUnit.HOURS.toNanos(1), 0, 0, 2);
    try (SpillwayServer server = SpillwayServer.builder().scheme(NoControl.INSTANCE).adaptiveThreading(adaptation)
             .handler((req, alloc) -> req.retainedDuplicate()).build().start();
         SpillwayClient client = SpillwayClient.builder().scheme(NoControl.INSTANCE).transport(server.transport())
             .port(server.port()).sloNanos(60_000_000_000L).build().start()) {
      assertEquals(ib, server.threadingModel().orElseThrow());
      assertFalse(server.adaptiveThreadingPaused());
      server.switchThreading(db2);
      assertTrue(server.adaptiveThreadingPaused());
      for (int decision = 0; decision < 3; decision++) {
        window(client, server);
      }
      assertEquals(db2, server.threadingModel().orElseThrow(), "the adaptation undid the operator's switch");

      server.resumeAdaptiveThreading();
      assertFalse(server.adaptiveThreadingPaused());
      window(client, server); // IB wins 1 of 2: the wins counted while held do not count
      assertEquals(db2, server.threadingModel().orElseThrow(), "moved on one decision after resuming");
      window(client, server); // 2 of 2
      assertEquals(ib, server.threadingModel().orElseThrow());
      assertEquals(2, server.threadingSwitches());
    }
  }

  /** Two requests, one after the other (a window of the estimator's), then one adaptation step. */
  private static void window(SpillwayClient client, SpillwayServer server) throws Exception {
    for (int i = 0; i < 2; i++) {
      client.session(0).call(new byte[] {1}).get(20, TimeUnit.SECONDS);
    }
    server.adaptNow();
  }

  @Test
  void aServerRefusesAModelItWasNotBuiltFor() throws Exception {
    try (SpillwayServer server = SpillwayServer.builder().scheme(NoControl.INSTANCE)
        .threadingModel(ThreadingModel.parse("DB2")).handler((req, alloc) -> Unpooled.EMPTY_BUFFER)
        .build().start()) {
      assertEquals(ThreadingModel.parse("DB2"), server.threadingModel().orElseThrow());
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> server.switchThreading(ThreadingModel.parse("IP")));
      assertTrue(e.getMessage().contains("DB2"), e.getMessage());
    }
    try (SpillwayServer plain = SpillwayServer.builder().scheme(NoControl.INSTANCE)
        .handler((req, alloc) -> Unpooled.EMPTY_BUFFER).build().start()) {
      assertTrue(plain.threadingModel().isEmpty());
      assertThrows(IllegalStateException.class, () -> plain.switchThreading(ThreadingModel.parse("IB")));
    }
  }

  @Test
  void aServerBuiltWithModelsSaysSoBeforeItStarts() throws Exception {
    SpillwayServer server = SpillwayServer.builder().scheme(NoControl.INSTANCE)
        .threadingModel(ThreadingModel.parse("DB2")).handler((req, alloc) -> Unpooled.EMPTY_BUFFER).build();
    assertEquals(ThreadingModel.parse("DB2"), server.threadingModel().orElseThrow());
    IllegalStateException early = assertThrows(IllegalStateException.class,
        () -> server.switchThreading(ThreadingModel.parse("DB2")));
    assertTrue(early.getMessage().contains("not started"), early.getMessage());
    try (SpillwayServer started = server.start()) {
      assertEquals(ThreadingModel.parse("DB2"), started.threadingModel().orElseThrow());
      started.switchThreading(ThreadingModel.parse("DB2"));
      assertEquals(0, started.threadingSwitches());
    }
  }

  @Test
  void aDispatcherOrLoopQueueWithThreadingModelsIsRefusedNotDropped() {
    java.util.concurrent.Executor mine = Runnable::run;
    ThreadingAdaptation adaptation = ThreadingAdaptation.of(ThreadingProfile.builder()
        .add(ThreadingModel.parse("IB"), 0, 10_000).add(ThreadingModel.parse("DB2"), 0, 20_000).build());
    List<SpillwayServer.Builder> conflicting = List.of(
        base().dispatcher(mine, io.spillway.api.QueueDelaySignal.NONE).threadingModel(ThreadingModel.parse("DB2")),
        base().threadingModel(ThreadingModel.parse("IB")).dispatcher(mine, io.spillway.api.QueueDelaySignal.NONE),
        base().dispatcher(mine, io.spillway.api.QueueDelaySignal.NONE).adaptiveThreading(adaptation),
        base().threading(Threading.LOOP_QUEUE).threadingModel(ThreadingModel.parse("DB2")),
        base().adaptiveThreading(adaptation).threading(Threading.LOOP_QUEUE));
    for (SpillwayServer.Builder b : conflicting) {
      IllegalStateException e = assertThrows(IllegalStateException.class, b::build);
      assertTrue(e.getMessage().contains("conflicts with")
          && (e.getMessage().contains("dispatcher(") || e.getMessage().contains("LOOP_QUEUE"))
          && (e.getMessage().contains("threadingModel(") || e.getMessage().contains("adaptiveThreading")),
          e.getMessage());
    }
    // Each alone is fine.
    base().dispatcher(mine, io.spillway.api.QueueDelaySignal.NONE).build();
    base().threading(Threading.LOOP_QUEUE).build();
    base().threadingModel(ThreadingModel.parse("DB2")).build();
  }

  private static SpillwayServer.Builder base() {
    return SpillwayServer.builder().scheme(NoControl.INSTANCE).handler((req, alloc) -> Unpooled.EMPTY_BUFFER);
  }

  @Test
  void everyTransportIsKeptForEveryModel() {
    ThreadingAdaptation blocking = ThreadingAdaptation.of(ThreadingProfile.builder()
        .add(ThreadingModel.parse("IB"), 0, 10_000).add(ThreadingModel.parse("DB2"), 0, 20_000).build());
    for (Transport t : Transport.values()) {
      for (String model : List.of("IP", "IB", "DP2", "DB2")) {
        assertEquals(t, base().transport(t).threadingModel(ThreadingModel.parse(model)).build().transport());
      }
      assertEquals(t, base().transport(t).adaptiveThreading(blocking).build().transport());
    }
    assertEquals(Transport.select(), base().threadingModel(ThreadingModel.parse("IP")).build().transport());
  }

  @Test
  void modelsThatOnlyBlockServeAndSwitchOnTheSelectedTransport() throws Exception {
    // On io_uring where the kernel has it: the loops are built without the reception wrapper.
    try (SpillwayServer server = SpillwayServer.builder().scheme(NoControl.INSTANCE)
             .threadingModel(ThreadingModel.parse("IB")).handler((req, alloc) -> req.retainedDuplicate())
             .build().start();
         SpillwayClient client = SpillwayClient.builder().scheme(NoControl.INSTANCE).transport(server.transport())
             .port(server.port()).sloNanos(60_000_000_000L).build().start()) {
      assertEquals(Transport.select(), server.transport());
      assertArrayEquals(new byte[] {7}, client.session(0).call(new byte[] {7}).get(20, TimeUnit.SECONDS));
    }
  }
}
