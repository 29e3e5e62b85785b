package io.spillway.harness;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.LockWaitRule;
import io.spillway.api.OverloadScheme;
import io.spillway.api.Status;
import io.spillway.api.Ticker;
import io.spillway.asqm.BudgetedLock;
import io.spillway.asqm.CarrierDispatcher;
import io.spillway.sim.Recorder;
import io.spillway.sim.Scenario;
import io.spillway.sim.SchemeRegistry;
import io.spillway.sim.Tally;
import io.spillway.transport.OverloadRejectedException;
import io.spillway.transport.RequestHandler;
import io.spillway.transport.SpillwayClient;
import io.spillway.transport.SpillwayServer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Protego's two-path service (protego-nsdi23 §2, Fig. 1) in-process on a real loopback socket, with
 * the real {@link BudgetedLock}s. Behaviour only: which requests wait, which are rejected and how,
 * that every request ends. Time inside the server is a hand-moved clock that starts just below
 * {@link Long#MAX_VALUE}, so budgets and lock delays are exact and cross the wrap-around; nothing
 * here depends on how fast the machine is. A hang fails through {@code @Timeout}.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class MutexPathServiceTest {

  /** Path 0 for a two-path 50/50 split: the draw's top bit is 0. */
  private static final long PATH_0 = 0L;
  /** Path 1: the draw's top bit is 1. */
  private static final long PATH_1 = -1L;
  private static final long TEN_MICROS = 10_000;

  private static Scenario scenario(String scheme) {
    return Scenario.of(Map.of("clients", "4", "cores", "2", "service", "exp", "service_mean_us", "20",
        "rtt_us", "50", "slo_us", "2000", "paths", "0.5, 0.5", "schemes", scheme, "window_ms", "20"));
  }

  /** A clock moved by hand, starting 1 µs before it wraps. */
  private static final class HandClock implements Ticker {
    private final AtomicLong now = new AtomicLong(Long.MAX_VALUE - 1_000);

    @Override
    public long read() {
      return now.get();
    }

    void advance(long nanos) {
      now.addAndGet(nanos);
    }
  }

  /** One server with the scheme's two-path service, and a client. */
  private static final class Rig implements AutoCloseable {
    final HandClock clock = new HandClock();
    final Scenario scenario;
    final MutexPathService service;
    final CarrierDispatcher dispatcher;
    final SpillwayServer server;
    final SpillwayClient client;

    Rig(String scheme) throws InterruptedException {
      scenario = scenario(scheme);
      RequestHandler handler = HarnessServer.handler(scenario, scheme, clock);
      service = assertInstanceOf(MutexPathService.class, handler);
      dispatcher = CarrierDispatcher.create(2, clock);
      server = HarnessServer.builder(scenario, scheme, service, dispatcher, 2).ticker(clock).build().start();
      OverloadScheme overload = SchemeRegistry.create(scheme, scenario);
      client = SpillwayClient.builder().scheme(overload).port(server.port()).connections(1)
          .sessions(scenario.clients()).sloNanos(TimeUnit.SECONDS.toNanos(60)).build().start();
    }

    CompletableFuture<byte[]> call(int session, long pathDraw) {
      return client.session(session).call(MutexPathService.request(TEN_MICROS, pathDraw));
    }

    @Override
    public void close() {
      client.close();
      server.close();
      dispatcher.close();
    }
  }

  private static void until(BooleanSupplier condition) {
    while (!condition.getAsBoolean()) {
      Thread.yield();
    }
  }

  private static Status rejection(CompletableFuture<byte[]> call) {
    try {
      call.join();
      return Status.OK;
    } catch (CompletionException e) {
      return assertInstanceOf(OverloadRejectedException.class, e.getCause()).status();
    }
  }

  @Test
  void underAsqmRequestsBehindACongestedMutexAreRejectedAtOnceAndTheOtherPathIsServed() throws Exception {
    try (Rig rig = new Rig("protego-asqm")) {
      assertTrue(rig.service.isBudgeted());
      BudgetedLock mutex = rig.service.mutex(0);
      CompletableFuture<byte[]> first;
      mutex.lock(); // held "artificially long": until this test lets go
      try {
        first = rig.call(0, PATH_0);
        until(() -> mutex.waiters() == 1); // the mutex had no queue: its delay (0) fit the budget
        rig.clock.advance(rig.scenario.asqmBudgetNanos() + 1); // the queue is now older than any budget

        List<CompletableFuture<byte[]>> behind = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
          behind.add(rig.call(1 + i % 3, PATH_0));
        }
        for (CompletableFuture<byte[]> call : behind) {
          assertEquals(Status.REJECTED_BUDGET, rejection(call), "answered while the mutex is still held");
        }
        assertEquals(Status.OK, rejection(rig.call(1, PATH_1)), "path 1's mutex is free");
        assertFalse(first.isDone(), "the request that queued in time still waits for the mutex");
        assertEquals(1, mutex.waiters(), "rejected requests never joined the queue");
      } finally {
        mutex.unlock();
      }
      assertEquals(Status.OK, rejection(first), "the queued request gets the mutex when it is let go");
      assertEquals(Status.OK, rejection(rig.call(2, PATH_0)), "once the mutex is free, path 0 serves again");
    }
  }

  @Test
  void withoutAsqmEveryRequestWaitsForTheMutexAndCompletes() throws Exception {
    try (Rig rig = new Rig("none")) {
      assertFalse(rig.service.isBudgeted());
      BudgetedLock mutex = rig.service.mutex(0);
      List<CompletableFuture<byte[]>> calls = new ArrayList<>();
      mutex.lock();
      try {
        for (int i = 0; i < 6; i++) {
          calls.add(rig.call(i % 4, PATH_0));
        }
        until(() -> mutex.waiters() == 6); // each parked its own virtual thread, none was turned away
        rig.clock.advance(TimeUnit.SECONDS.toNanos(10)); // however long they wait: no budget
        assertTrue(calls.stream().noneMatch(CompletableFuture::isDone));
      } finally {
        mutex.unlock();
      }
      for (CompletableFuture<byte[]> call : calls) {
        assertEquals(Status.OK, rejection(call));
      }
    }
  }

  @Test
  void aDrawPicksItsPathByTheScenariosProbabilities() {
    MutexPathService two = new MutexPathService(new double[] {0.5, 0.5}, false, Ticker.system(),
        LockWaitRule.QUEUE_AWARE);
    assertEquals(0, two.path(PATH_0));
    assertEquals(0, two.path(Long.MAX_VALUE)); // top bit 0: u just below 1/2
    assertEquals(1, two.path(Long.MIN_VALUE)); // top bit 1: u = 1/2
    assertEquals(1, two.path(PATH_1));
    MutexPathService skewed = new MutexPathService(new double[] {0.2, 0.8}, false, Ticker.system(),
        LockWaitRule.QUEUE_AWARE);
    int[] counts = new int[2];
    java.util.SplittableRandom draws = new java.util.SplittableRandom(42);
    for (int i = 0; i < 10_000; i++) {
      counts[skewed.path(draws.nextLong())]++;
    }
    assertTrue(counts[0] > 1_700 && counts[0] < 2_300, "p = 20 % took path 0 " + counts[0] + " times in 10000");
  }

  @Test
  void pathsNeedDispatchedThreadsNotTheEventLoop() {
    Scenario inline = scenario("none").with(Map.of("threading", "inline"));
    IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
        () -> HarnessServer.handler(inline, "none", Ticker.system()));
    assertTrue(e.getMessage().contains("threading = dispatch"), e.getMessage());
  }

  @Test
  void everyOfferedRequestEndsExactlyOnceWhenTheMutexesAreOverloaded() throws Exception {
    for (String name : List.of("none", "protego-asqm", "protego")) {
      // Two 200 µs paths serve about 10k requests/s; offer twice that for 0.3 s.
      Scenario s = scenario(name).with(Map.of("service_mean_us", "200", "slo_us", "2500"));
      OverloadScheme scheme = SchemeRegistry.create(name, s);
      try (CarrierDispatcher dispatcher = CarrierDispatcher.create(4, Ticker.system());
           SpillwayServer server = HarnessServer.builder(s, name, HarnessServer.handler(s, name, Ticker.system()),
               dispatcher, 4).build().start();
           SpillwayClient client = SpillwayClient.builder().scheme(scheme).port(server.port())
               .connections(2).sessions(s.clients()).sloNanos(s.sloNanos()).build().start()) {
        Recorder recorder = new Recorder(s.windowNanos());
        LoadGenerator.openLoop(client, s, List.of(new Scenario.DemandStep(2.0, 0)), 10_000,
            300_000_000L, recorder, 11).get(60, TimeUnit.SECONDS);
        Tally t = new Tally();
        for (int i = 0; i < recorder.windowCount(); i++) {
          t.add(recorder.window(i));
        }
        assertTrue(t.offered > 1_000, name + ": offered " + t.offered);
        assertTrue(t.completed > 0, name + ": nothing completed");
        assertEquals(t.offered, t.completed + t.dropped + t.expired, name + ": every request ends once (served "
            + t.completed + ", rejected " + t.dropped + ", expired " + t.expired + ")");
        if (HarnessServer.usesAsqm(name)) {
          assertTrue(t.dropped > 0, name + ": ASQM rejected nothing behind mutexes offered twice their capacity");
        }
      }
    }
  }

  @Test
  void aRequestCarriesItsServiceTimeThenItsPathDraw() {
    byte[] r = MutexPathService.request(0x0102030405060708L, -2L);
    assertEquals(MutexPathService.REQUEST_BYTES, r.length);
    assertArrayEquals(new byte[] {1, 2, 3, 4, 5, 6, 7, 8}, java.util.Arrays.copyOf(r, 8));
  }
}
