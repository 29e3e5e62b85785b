package io.spillway.spring.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;

class RunSlotsTest {

  /** Near the end of the long range, so that waits cross the wrap. */
  private final AtomicLong now = new AtomicLong(Long.MAX_VALUE - 1_000_000);

  /** Feeds {@code n} samples of one request shape. */
  private static void feed(RunSlots s, int n, long inSlot, long locks, long cpu, long runQueue) {
    for (int i = 0; i < n; i++) {
      s.observe(inSlot, locks, cpu, runQueue);
    }
  }

  @Test
  void untilMeasuredEveryThreadMayRun() {
    RunSlots s = new RunSlots(now::get, 2, 200);
    assertEquals(200, s.slots());
  }

  @Test
  void aCpuBoundHandlerGetsOneSlotPerCore() {
    RunSlots s = new RunSlots(now::get, 2, 200);
    // 3 ms in its slot: 350 us on a CPU, the rest waiting for one (time-sliced with others)
    feed(s, 1, 3_000_000, 0, 350_000, 2_650_000);
    assertEquals(2, s.slots());
    feed(s, 40, 400_000, 0, 350_000, 50_000);
    assertEquals(2, s.slots());
  }

  @Test
  void aHandlerThatWaitsOnIoGetsEnoughSlotsToFillTheCores() {
    RunSlots s = new RunSlots(now::get, 2, 200);
    // 5 ms in its slot, of which 0.5 ms on a CPU: ten requests fill a core
    feed(s, 1, 5_000_000, 0, 500_000, 0);
    assertEquals(20, s.slots());
    // a database at 100 ms for 100 us of CPU: more than the container has threads
    feed(s, 200, 100_000_000, 0, 100_000, 0);
    assertEquals(200, s.slots());
  }

  @Test
  void waitsOnBudgetedLocksDoNotAddSlots() {
    RunSlots s = new RunSlots(now::get, 1, 200);
    feed(s, 1, 5_000_000, 4_600_000, 350_000, 50_000);
    assertEquals(1, s.slots());
  }

  @Test
  void theMeanMovesAnEighthPerSample() {
    RunSlots s = new RunSlots(now::get, 1, 200);
    feed(s, 1, 1_000_000, 0, 1_000_000, 0); // ratio 1
    feed(s, 1, 9_000_000, 0, 1_000_000, 0); // ratio 9: the mean moves to 2
    assertEquals(2, s.slots());
  }

  private static void await(BooleanSupplier condition) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (!condition.getAsBoolean()) {
      assertTrue(System.nanoTime() < deadline, "condition not reached");
      Thread.onSpinWait();
    }
  }

  @Test
  void waitersAreServedInArrivalOrderAndTheOldestWaitIsTheDelay() throws Exception {
    RunSlots s = new RunSlots(now::get, 1, 8);
    feed(s, 1, 350_000, 0, 350_000, 0);
    assertEquals(1, s.slots());
    assertEquals(0, s.acquire(now.get(), Long.MAX_VALUE), "a free slot: no wait");
    assertEquals(0, s.queueingDelayNanos(now.get()));
    List<String> order = new CopyOnWriteArrayList<>();
    List<Long> waits = new CopyOnWriteArrayList<>();
    Thread[] waiters = new Thread[3];
    for (int i = 0; i < waiters.length; i++) {
      String name = "w" + i;
      long arrival = now.get();
      int expected = i + 1;
      waiters[i] = Thread.ofPlatform().start(() -> {
        waits.add(s.acquire(arrival, Long.MAX_VALUE));
        order.add(name);
        s.release();
      });
      await(() -> s.waiting() == expected);
      now.addAndGet(1_000_000); // the next one arrives 1 ms later
    }
    assertEquals(3_000_000, s.queueingDelayNanos(now.get()), "w0 has waited 3 ms");
    s.release();
    for (Thread t : waiters) {
      t.join();
    }
    assertEquals(List.of("w0", "w1", "w2"), order);
    assertEquals(List.of(3_000_000L, 2_000_000L, 1_000_000L), waits);
    assertEquals(0, s.running());
    assertEquals(0, s.queueingDelayNanos(now.get()));
  }

  @Test
  void aRequestWhoseBudgetTheQueueExceedsIsRefusedWithoutWaiting() throws Exception {
    RunSlots s = new RunSlots(now::get, 1, 8);
    feed(s, 1, 350_000, 0, 350_000, 0);
    s.acquire(now.get(), Long.MAX_VALUE);
    long arrival = now.get();
    Thread waiter = Thread.ofPlatform().start(() -> {
      s.acquire(arrival, Long.MAX_VALUE);
      s.release();
    });
    await(() -> s.waiting() == 1);
    now.addAndGet(2_000_000);
    assertEquals(-1, s.acquire(now.get(), 1_999_999), "the queue is 2 ms old, the budget less");
    assertEquals(1, s.waiting(), "the refused request did not queue");
    s.release();
    waiter.join();
    assertEquals(0, s.running());
  }

  /** A thread that takes a slot, holds it until {@code done} opens, then gives it back. */
  private Thread holder(RunSlots s, long arrival, java.util.concurrent.CountDownLatch done) {
    return Thread.ofPlatform().start(() -> {
      s.acquire(arrival, Long.MAX_VALUE);
      try {
        done.await();
      } catch (InterruptedException e) {
        throw new AssertionError(e);
      }
      s.release();
    });
  }

  @Test
  void aLongQueueIsRefusedByTheHandOffsItWillTakeNotOnlyByItsOldestWait() throws Exception {
    RunSlots s = new RunSlots(now::get, 1, 8);
    feed(s, 1, 350_000, 0, 350_000, 0);
    s.acquire(now.get(), Long.MAX_VALUE);
    long start = now.get();
    java.util.concurrent.CountDownLatch releaseA = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.CountDownLatch releaseRest = new java.util.concurrent.CountDownLatch(1);
    Thread a = holder(s, start, releaseA);
    await(() -> s.waiting() == 1);
    Thread b = holder(s, start, releaseRest);
    await(() -> s.waiting() == 2);
    now.addAndGet(1_000_000);
    s.release(); // A's turn
    await(() -> s.waiting() == 1);
    now.addAndGet(1_000_000);
    releaseA.countDown(); // B's turn, one 1 ms hand-off after A's: the first sample
    a.join();
    await(() -> s.waiting() == 0);
    Thread[] queued = new Thread[3];
    for (int i = 0; i < queued.length; i++) {
      queued[i] = holder(s, now.get(), releaseRest);
      int expected = i + 1;
      await(() -> s.waiting() == expected);
    }
    assertEquals(0, s.queueingDelayNanos(now.get()), "the queue's oldest has not waited yet");
    // three hand-offs of about 1 ms ahead, plus their spread: more than 2.5 ms
    assertEquals(-1, s.acquire(now.get(), 2_500_000));
    assertEquals(3, s.waiting());
    releaseRest.countDown();
    b.join();
    for (Thread t : queued) {
      t.join();
    }
    assertEquals(0, s.running());
  }

  @Test
  void moreSlotsWakeWaitersAtOnce() throws Exception {
    RunSlots s = new RunSlots(now::get, 1, 8);
    feed(s, 1, 350_000, 0, 350_000, 0);
    s.acquire(now.get(), Long.MAX_VALUE);
    Thread[] waiters = new Thread[2];
    for (int i = 0; i < waiters.length; i++) {
      waiters[i] = Thread.ofPlatform().start(() -> s.acquire(now.get(), Long.MAX_VALUE));
    }
    await(() -> s.waiting() == 2);
    feed(s, 30, 3_500_000, 0, 350_000, 0); // I/O-bound now: up to 8 slots
    for (Thread t : waiters) {
      t.join();
    }
    assertEquals(3, s.running());
    assertEquals(0, s.waiting());
  }

  @Test
  void fewerSlotsTakeEffectAsRequestsEnd() throws Exception {
    RunSlots s = new RunSlots(now::get, 1, 8);
    for (int i = 0; i < 3; i++) {
      s.acquire(now.get(), Long.MAX_VALUE); // 8 slots before any sample
    }
    Thread waiter = Thread.ofPlatform().start(() -> s.acquire(now.get(), Long.MAX_VALUE));
    feed(s, 1, 350_000, 0, 350_000, 0); // CPU-bound: 1 slot
    s.release();
    s.release();
    // the waiter may have taken a slot before the count shrank; either way no more than one
    // runs once the releases are done and it has its slot
    s.release();
    waiter.join();
    assertEquals(1, s.running());
  }
}
