package io.spillway.asqm;

import io.spillway.api.BudgetExceededException;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.LockWaitRule;
import io.spillway.api.RequestBudget;
import io.spillway.api.Ticker;
import io.spillway.api.internal.LockWaitEstimator;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link BudgetedLock}: the Lock contract under contention (count invariants, no timings) and the
 * ASQM decision on a fake clock that starts near {@link Long#MAX_VALUE}.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class BudgetedLockTest {

  final AtomicLong now = new AtomicLong(Long.MAX_VALUE - 100);
  final AtomicInteger clockReads = new AtomicInteger();
  final Ticker ticker = () -> {
    clockReads.incrementAndGet();
    return now.get();
  };

  /** A thread that runs {@code body} and keeps its result or failure. */
  static final class Worker<T> {
    final AtomicReference<T> result = new AtomicReference<>();
    final AtomicReference<Throwable> failure = new AtomicReference<>();
    final Thread thread;

    Worker(Callable<T> body) {
      thread = Thread.ofPlatform().start(() -> {
        try {
          result.set(body.call());
        } catch (Throwable e) {
          failure.set(e);
        }
      });
    }

    T join() {
      Await.join(thread);
      if (failure.get() != null) {
        throw new AssertionError(failure.get());
      }
      return result.get();
    }
  }

  static <T, X extends Throwable> T withBudget(RequestBudget budget,
      ScopedValue.CallableOp<T, X> op) throws X {
    return ScopedValue.where(RequestBudget.CURRENT, budget).call(op);
  }

  /** Starts a thread that calls {@code lock()} then unlocks; returns once it is queued. */
  Worker<Void> queuedLocker(BudgetedLock lock) {
    int before = lock.waiters();
    Worker<Void> worker = new Worker<>(() -> {
      lock.lock();
      lock.unlock();
      return null;
    });
    Await.until(() -> lock.waiters() == before + 1 && lock.hasQueuedThread(worker.thread));
    return worker;
  }

  @Test
  void uncontendedAcquisitionsAreReentrantAndNeverReadTheClock() {
    BudgetedLock lock = new BudgetedLock(ticker);
    lock.lock();
    assertTrue(lock.lockIfUncongested(), "reentrant");
    assertTrue(lock.tryLock());
    assertEquals(3, lock.getHoldCount());
    lock.unlock();
    lock.unlock();
    lock.unlock();
    assertFalse(lock.isLocked());

    RequestBudget budget = RequestBudget.of(0); // even an exhausted budget: the lock is free
    assertTrue(withBudget(budget, lock::lockIfUncongested));
    lock.unlock();
    try (var _ = withBudget(budget, lock::acquireWithinBudget)) {
      assertTrue(lock.isHeldByCurrentThread());
    }
    BudgetedLock.Held held = lock.acquire();
    assertTrue(lock.isHeldByCurrentThread());
    held.close();
    held.close(); // a second close is a no-op
    assertFalse(lock.isLocked());
    assertEquals(0, clockReads.get(), "no clock read on the uncontended path");
    assertEquals(0, lock.waiters());
    assertEquals(0, lock.queueingDelayNanos(now.get()));
  }

  @Test
  void unlockWithoutHoldingThrows() {
    BudgetedLock lock = new BudgetedLock(ticker);
    assertThrows(IllegalMonitorStateException.class, lock::unlock);
    assertThrows(IllegalMonitorStateException.class, () -> lock.newCondition().await());
  }

  @Test
  void congestedLockTurnsAwayARequestWhoseBudgetTheDelayExceedsAndQueuesOneItFits() {
    BudgetedLock lock = new BudgetedLock(ticker);
    lock.lock(); // the test thread holds it throughout the decisions
    long t = now.get();
    Worker<Void> oldest = queuedLocker(lock); // stamped at t
    now.set(t + 100); // wraps past Long.MAX_VALUE
    assertEquals(100, lock.queueingDelayNanos(now.get()));

    RequestBudget tight = RequestBudget.of(99);
    Boolean admitted = new Worker<>(() -> withBudget(tight, lock::lockIfUncongested)).join();
    assertFalse(admitted, "delay 100 > budget 99: refused at once");
    assertEquals(99, tight.remainingNanos(), "nothing charged");
    assertEquals(1, lock.waiters(), "the refused request never queued");

    Worker<BudgetedLock.Held> throwing =
        new Worker<>(() -> withBudget(tight, lock::acquireWithinBudget));
    Await.join(throwing.thread);
    BudgetExceededException exceeded =
        assertInstanceOf(BudgetExceededException.class, throwing.failure.get());
    assertEquals(100, exceeded.queueingDelayNanos());
    assertEquals(99, exceeded.remainingBudgetNanos());
    assertEquals(0, exceeded.getStackTrace().length, "cheap: no stack trace");

    RequestBudget exact = RequestBudget.of(100); // delay == budget still fits
    Worker<Boolean> fits = new Worker<>(() -> withBudget(exact, () -> {
      boolean got = lock.lockIfUncongested();
      lock.unlock();
      return got;
    }));
    Await.until(() -> lock.waiters() == 2 && lock.hasQueuedThread(fits.thread));
    now.set(t + 150); // fits was stamped at t + 100 and will acquire at t + 150
    lock.unlock();
    oldest.join();
    assertTrue(fits.join());
    assertEquals(50, exact.remainingNanos(), "charged the 50 ns it waited");
    assertEquals(0, lock.waiters());
    assertEquals(0, lock.queueingDelayNanos(now.get()));
  }

  /** Starts a thread that locks, says so, holds until {@code release} opens, then unlocks. */
  Worker<Void> queuedHolder(BudgetedLock lock, CountDownLatch holding, CountDownLatch release) {
    int before = lock.waiters();
    Worker<Void> worker = new Worker<>(() -> {
      lock.lock();
      holding.countDown();
      Await.await(release);
      lock.unlock();
      return null;
    });
    Await.until(() -> lock.waiters() == before + 1 && lock.hasQueuedThread(worker.thread));
    return worker;
  }

  /**
   * A young queue that is long: the oldest waiter's age (100 ns) fits a 5,000 ns budget, but two
   * waiters at the measured 2,000 ns hand-off do not: 2·2,000 + 2σ·(sqrt(3) − 1) with σ = sqrt(π/2)
   * · 2/e · 2,000 = 1,844.27 ns, so 6,700 ns (LockWaitEstimator). The paper's rule admits it.
   */
  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"QUEUE_AWARE", "OLDEST_WAITER"})
  void queueAwareEstimateRefusesWhatALongYoungQueueCannotServeInTime(String ruleName) {
    LockWaitRule rule = LockWaitRule.valueOf(ruleName);
    BudgetedLock lock = new BudgetedLock(ticker, false, rule);
    lock.lock();
    long t = now.get();
    CountDownLatch aHolds = new CountDownLatch(1);
    CountDownLatch aRelease = new CountDownLatch(1);
    CountDownLatch bHolds = new CountDownLatch(1);
    CountDownLatch bRelease = new CountDownLatch(1);
    Worker<Void> a = queuedHolder(lock, aHolds, aRelease); // stamped t
    Worker<Void> b = queuedHolder(lock, bHolds, bRelease); // stamped t
    now.set(t + 1_000);
    lock.unlock(); // a acquires at t + 1,000: the first hand-off, nothing to measure yet
    Await.await(aHolds);
    now.set(t + 3_000);
    aRelease.countDown(); // b, waiting since t, acquires at t + 3,000: a 2,000 ns sample
    Await.await(bHolds);
    a.join();
    Worker<Void> c = queuedLocker(lock); // stamped t + 3,000
    Worker<Void> d = queuedLocker(lock);
    now.set(t + 3_100);
    assertEquals(100, lock.queueingDelayNanos(now.get()));
    long expected = rule == LockWaitRule.QUEUE_AWARE ? 6_700 : 100;
    assertEquals(expected, lock.expectedWaitNanos(now.get()));

    RequestBudget budget = RequestBudget.of(5_000);
    Worker<Boolean> asker = new Worker<>(() -> withBudget(budget, () -> {
      boolean got = lock.lockIfUncongested();
      if (got) {
        lock.unlock();
      }
      return got;
    }));
    if (rule == LockWaitRule.QUEUE_AWARE) {
      assertFalse(asker.join(), "6,700 ns expected > 5,000 ns budget: refused at once");
      assertEquals(5_000, budget.remainingNanos(), "nothing charged");
    } else {
      Await.until(() -> lock.waiters() == 3 && lock.hasQueuedThread(asker.thread));
    }
    bRelease.countDown();
    b.join();
    c.join();
    d.join();
    if (rule == LockWaitRule.OLDEST_WAITER) {
      assertTrue(asker.join(), "the paper's rule: 100 ns delay fits the budget");
    }
    assertFalse(lock.isLocked());
    assertEquals(0, lock.waiters());
  }

  @Test
  void withoutABudgetInScopeItIsPlainLock() {
    BudgetedLock lock = new BudgetedLock(ticker);
    lock.lock();
    long t = now.get();
    Worker<Void> oldest = queuedLocker(lock);
    now.set(t + TimeUnit.HOURS.toNanos(1));
    Worker<Boolean> unbudgeted = new Worker<>(() -> {
      boolean got = lock.lockIfUncongested();
      lock.unlock();
      try (var _ = lock.acquireWithinBudget()) {
        return got && lock.isHeldByCurrentThread();
      }
    });
    Await.until(() -> lock.waiters() == 2 && lock.hasQueuedThread(unbudgeted.thread));
    lock.unlock();
    oldest.join();
    assertTrue(unbudgeted.join());
    assertFalse(lock.isLocked());
  }

  @Test
  void plainLockChargesItsWaitToABudgetInScope() {
    BudgetedLock lock = new BudgetedLock(ticker);
    lock.lock();
    RequestBudget budget = RequestBudget.of(1_000);
    Worker<Void> waiter = new Worker<>(() -> withBudget(budget, () -> {
      lock.lock();
      lock.unlock();
      return null;
    }));
    Await.until(() -> lock.hasQueuedThread(waiter.thread));
    now.addAndGet(300);
    lock.unlock();
    waiter.join();
    assertEquals(700, budget.remainingNanos());
  }

  @Test
  void aWaiterThatGivesUpLeavesTheLineAndTheNextOldestCounts() {
    BudgetedLock lock = new BudgetedLock(ticker);
    lock.lock();
    long t = now.get();
    Worker<Void> interruptible = new Worker<>(() -> {
      lock.lockInterruptibly();
      lock.unlock();
      return null;
    });
    Await.until(() -> lock.waiters() == 1 && lock.hasQueuedThread(interruptible.thread));
    now.set(t + 10);
    Worker<Void> patient = queuedLocker(lock);
    now.set(t + 25);
    assertEquals(25, lock.queueingDelayNanos(now.get()));

    interruptible.thread.interrupt();
    Await.join(interruptible.thread);
    assertInstanceOf(InterruptedException.class, interruptible.failure.get());
    assertEquals(1, lock.waiters());
    assertEquals(15, lock.queueingDelayNanos(now.get()), "the patient waiter is the oldest now");

    lock.unlock();
    patient.join();
    assertEquals(0, lock.waiters());
  }

  @Test
  void aTimedOutTryLockLeavesTheLine() throws Exception {
    BudgetedLock lock = new BudgetedLock(ticker);
    lock.lock(); // held throughout: the outcome does not depend on how long the wait lasts
    RequestBudget budget = RequestBudget.of(1_000);
    Worker<Boolean> timed = new Worker<>(() -> withBudget(budget, () -> {
      return lock.tryLock(1, TimeUnit.NANOSECONDS);
    }));
    assertFalse(timed.join());
    assertEquals(0, lock.waiters());
    assertEquals(0, lock.queueingDelayNanos(now.get()));
    assertEquals(1_000, budget.remainingNanos(), "the fake clock did not move: nothing charged");
    lock.unlock();
  }

  /** Protego §4: a dropped request must release what it holds; try-with-resources does it. */
  @Test
  void aRefusalInsideANestedAcquisitionReleasesTheOuterLock() {
    BudgetedLock outer = new BudgetedLock(ticker);
    BudgetedLock inner = new BudgetedLock(ticker);
    inner.lock();
    long t = now.get();
    Worker<Void> oldest = queuedLocker(inner);
    now.set(t + 1_000);
    RequestBudget budget = RequestBudget.of(10);
    Worker<Boolean> request = new Worker<>(() -> withBudget(budget, () -> {
      try (var _ = outer.acquireWithinBudget();
          var _ = inner.acquireWithinBudget()) {
        return true;
      } catch (BudgetExceededException dropped) {
        return outer.isHeldByCurrentThread(); // must be false: released on the way out
      }
    }));
    assertFalse(request.join());
    assertFalse(outer.isLocked());
    assertEquals(1, inner.waiters());
    inner.unlock();
    oldest.join();
  }

  @Test
  void fairLockDoesNotLetLockIfUncongestedBargeButLetsTheHolderReenter() {
    BudgetedLock lock = new BudgetedLock(ticker, true);
    assertTrue(lock.isFair());
    lock.lock();
    Worker<Void> waiter = queuedLocker(lock);
    assertTrue(lock.lockIfUncongested(), "the holder re-enters even with waiters");
    assertEquals(2, lock.getHoldCount());
    lock.unlock();
    lock.unlock();
    waiter.join();
  }

  /**
   * Waiters join concurrently (their stamps race, so they may join out of stamp order), a random
   * subset gives up; at each quiescent point the lock's delay is exactly {@code now − the
   * smallest stamp among the threads still queued}.
   */
  @Test
  void oldestWaiterStaysExactUnderConcurrentJoinsAndAborts() throws Exception {
    long seed = WaiterLineTest.seed();
    SplittableRandom random = new SplittableRandom(seed);
    AtomicLong clock = new AtomicLong(Long.MAX_VALUE - 20);
    java.util.Map<Thread, Long> stamps = new java.util.concurrent.ConcurrentHashMap<>();
    Ticker recording = () -> {
      long stamp = clock.getAndIncrement();
      stamps.putIfAbsent(Thread.currentThread(), stamp); // a waiter's first read is its stamp
      return stamp;
    };
    for (int round = 0; round < 20; round++) {
      BudgetedLock lock = new BudgetedLock(recording, round % 2 == 0);
      lock.lock();
      int count = 2 + random.nextInt(7);
      CyclicBarrier start = new CyclicBarrier(count);
      List<Worker<Void>> waiters = new ArrayList<>();
      for (int i = 0; i < count; i++) {
        waiters.add(new Worker<>(() -> {
          start.await();
          lock.lockInterruptibly();
          lock.unlock();
          return null;
        }));
      }
      Await.until(() -> lock.waiters() == count
          && waiters.stream().allMatch(w -> lock.hasQueuedThread(w.thread)));
      List<Worker<Void>> queued = new ArrayList<>(waiters);
      while (!queued.isEmpty()) {
        long oldest = queued.stream().mapToLong(w -> stamps.get(w.thread))
            .reduce((a, b) -> a - b < 0 ? a : b).orElseThrow();
        long at = clock.get() + 1_000;
        assertEquals(at - oldest, lock.queueingDelayNanos(at), "seed " + seed);
        Worker<Void> quitter = queued.remove(random.nextInt(queued.size()));
        quitter.thread.interrupt();
        Await.join(quitter.thread);
        assertInstanceOf(InterruptedException.class, quitter.failure.get(), "seed " + seed);
        assertEquals(queued.size(), lock.waiters(), "seed " + seed);
      }
      assertEquals(0, lock.queueingDelayNanos(clock.get()));
      lock.unlock();
      assertFalse(lock.isLocked());
    }
  }

  /**
   * Contending platform and virtual threads mix every acquisition form; a plain counter guarded
   * by the lock must equal the number of successful acquisitions, and no two threads are ever
   * inside together. The fake clock moves on every read so stamps and budgets are exercised.
   */
  @ParameterizedTest(name = "fair={0}")
  @ValueSource(booleans = {false, true})
  void mutualExclusionUnderContention(boolean fair) throws Exception {
    long seed = WaiterLineTest.seed();
    AtomicLong clock = new AtomicLong(Long.MAX_VALUE - 50_000);
    BudgetedLock lock = new BudgetedLock(clock::incrementAndGet, fair);
    int threads = 6;
    int iterations = 3_000;
    AtomicInteger inside = new AtomicInteger();
    AtomicInteger overlaps = new AtomicInteger();
    AtomicInteger acquisitions = new AtomicInteger();
    AtomicInteger refusals = new AtomicInteger();
    AtomicInteger outerHolds = new AtomicInteger();
    int[] guarded = new int[1];
    AtomicReference<Throwable> failure = new AtomicReference<>();
    CyclicBarrier start = new CyclicBarrier(threads);
    List<Thread> contenders = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      SplittableRandom random = new SplittableRandom(seed + t);
      Thread.Builder builder = t % 2 == 0 ? Thread.ofPlatform() : Thread.ofVirtual();
      contenders.add(builder.start(() -> {
        try {
          start.await();
          for (int i = 0; i < iterations; i++) {
            RequestBudget budget = RequestBudget.of(random.nextInt(200));
            boolean held = withBudget(budget, () -> acquireSomehow(lock, random));
            if (!held) {
              refusals.incrementAndGet();
              continue;
            }
            try {
              if (inside.incrementAndGet() != 1) {
                overlaps.incrementAndGet();
              }
              guarded[0]++;
              if (random.nextInt(8) == 0) { // re-enter
                lock.lock();
                guarded[0]++;
                lock.unlock();
                acquisitions.incrementAndGet();
              }
              acquisitions.incrementAndGet();
              outerHolds.incrementAndGet();
              inside.decrementAndGet();
            } finally {
              lock.unlock();
            }
          }
        } catch (Throwable e) {
          failure.compareAndSet(null, e);
        }
      }));
    }
    for (Thread contender : contenders) {
      contender.join();
    }
    if (failure.get() != null) {
      throw new AssertionError("seed " + seed, failure.get());
    }
    assertEquals(0, overlaps.get(), "seed " + seed);
    assertEquals(acquisitions.get(), guarded[0], "seed " + seed);
    assertEquals((long) threads * iterations, outerHolds.get() + refusals.get(),
        "every attempt either held the lock or was refused");
    assertFalse(lock.isLocked());
    assertEquals(0, lock.waiters());
    assertEquals(0, lock.queueingDelayNanos(clock.get()));
  }

  private static boolean acquireSomehow(BudgetedLock lock, SplittableRandom random)
      throws InterruptedException {
    switch (random.nextInt(6)) {
      case 0 -> lock.lock();
      case 1 -> {
        return lock.lockIfUncongested();
      }
      case 2 -> {
        if (!lock.tryLock()) {
          lock.lock();
        }
      }
      case 3 -> lock.lockInterruptibly();
      case 4 -> {
        if (!lock.tryLock(1, TimeUnit.HOURS)) {
          throw new AssertionError("an hour-long tryLock timed out");
        }
      }
      default -> {
        try {
          BudgetedLock.Held held = lock.acquireWithinBudget();
          assertSame(BudgetedLock.Held.class, held.getClass());
        } catch (BudgetExceededException e) {
          return false;
        }
      }
    }
    return true;
  }
}
