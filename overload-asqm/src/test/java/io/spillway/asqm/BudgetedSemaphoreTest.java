package io.spillway.asqm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.BudgetExceededException;
import io.spillway.api.LockWaitRule;
import io.spillway.api.RequestBudget;
import io.spillway.api.Ticker;
import io.spillway.asqm.BudgetedLockTest.Worker;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
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
 * {@link BudgetedSemaphore}: the ASQM decision with literal numbers on a fake clock that starts
 * near {@link Long#MAX_VALUE} (so stamps wrap), waits charged, and permits never exceeded nor
 * leaked under contention (count invariants, no timings).
 */
// A separate thread: a leaked permit leaves an uninterruptible acquire hanging, which the
// default mode's interrupt would not end.
@Timeout(value = 120, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class BudgetedSemaphoreTest {

  final AtomicLong now = new AtomicLong(Long.MAX_VALUE - 100);
  final AtomicInteger clockReads = new AtomicInteger();
  final Ticker ticker = () -> {
    clockReads.incrementAndGet();
    return now.get();
  };

  static <T, X extends Throwable> T withBudget(RequestBudget budget,
      ScopedValue.CallableOp<T, X> op) throws X {
    return ScopedValue.where(RequestBudget.CURRENT, budget).call(op);
  }

  /** Starts a thread that takes a permit and returns it at once; returns once it is queued. */
  static Worker<Void> queuedTaker(BudgetedSemaphore semaphore) {
    int before = semaphore.waiters();
    Worker<Void> worker = new Worker<>(() -> {
      semaphore.acquire().close();
      return null;
    });
    Await.until(() -> semaphore.waiters() == before + 1 && semaphore.hasQueuedThread(worker.thread));
    return worker;
  }

  /** Starts a thread that takes a permit, says so, holds it until {@code release} opens. */
  static Worker<Void> queuedHolder(BudgetedSemaphore semaphore, CountDownLatch holding,
      CountDownLatch release) {
    int before = semaphore.waiters();
    Worker<Void> worker = new Worker<>(() -> {
      try (var _ = semaphore.acquire()) {
        holding.countDown();
        Await.await(release);
      }
      return null;
    });
    Await.until(() -> semaphore.waiters() == before + 1 && semaphore.hasQueuedThread(worker.thread));
    return worker;
  }

  @Test
  void uncontendedAcquisitionsNeverReadTheClockAndAPermitClosesOnce() throws Exception {
    BudgetedSemaphore semaphore = new BudgetedSemaphore(2, ticker);
    RequestBudget exhausted = RequestBudget.of(0); // a free permit admits even an exhausted budget
    BudgetedSemaphore.Permit first = withBudget(exhausted, semaphore::acquireWithinBudget);
    assertTrue(semaphore.tryAcquire());
    assertEquals(0, semaphore.availablePermits());
    assertFalse(semaphore.tryAcquire());
    assertFalse(semaphore.tryAcquire(0, TimeUnit.SECONDS));
    first.close();
    first.close(); // a second close is a no-op
    assertTrue(first.isReleased());
    assertEquals(1, semaphore.availablePermits());
    semaphore.release();
    assertEquals(2, semaphore.availablePermits());
    try (var _ = semaphore.acquire(); var _ = semaphore.acquireInterruptibly()) {
      assertEquals(0, semaphore.availablePermits());
    }
    assertEquals(2, semaphore.availablePermits());
    assertEquals(0, clockReads.get(), "no clock read on the uncontended path");
    assertEquals(0, semaphore.waiters());
    assertEquals(0, semaphore.queueingDelayNanos(now.get()));
    assertEquals(0, exhausted.remainingNanos());
  }

  @Test
  void releaseBeyondThePermitCountThrowsAndChangesNothing() {
    BudgetedSemaphore semaphore = new BudgetedSemaphore(2, ticker);
    assertThrows(IllegalStateException.class, semaphore::release);
    assertEquals(2, semaphore.availablePermits());
    BudgetedSemaphore.Permit permit = semaphore.acquire();
    permit.close();
    assertThrows(IllegalStateException.class, semaphore::release);
    assertEquals(2, semaphore.availablePermits());
    assertThrows(IllegalArgumentException.class, () -> new BudgetedSemaphore(0, ticker));
  }

  /** A pool resized larger frees its new permits at once, to the waiters first. */
  @Test
  void aLargerPoolFreesItsNewPermitsToWaitersAtOnce() {
    BudgetedSemaphore semaphore = new BudgetedSemaphore(1, ticker);
    BudgetedSemaphore.Permit held = semaphore.acquire();
    Worker<Void> first = queuedTaker(semaphore);
    Worker<Void> second = queuedTaker(semaphore);
    semaphore.setPermits(3);
    first.join();
    second.join();
    assertEquals(3, semaphore.permits());
    assertEquals(2, semaphore.availablePermits(), "both took a new permit and returned it");
    held.close();
    assertEquals(3, semaphore.availablePermits());
    assertThrows(IllegalStateException.class, semaphore::release);
  }

  /**
   * A pool resized smaller keeps its holders' permits and frees none until enough are back: never
   * more out than the new count once the holders above it are done.
   */
  @Test
  void fewerTakesEffectAsPermitsComeBack() {
    BudgetedSemaphore semaphore = new BudgetedSemaphore(3, ticker);
    BudgetedSemaphore.Permit a = semaphore.acquire();
    BudgetedSemaphore.Permit b = semaphore.acquire();
    BudgetedSemaphore.Permit c = semaphore.acquire();
    semaphore.setPermits(1);
    assertEquals(1, semaphore.permits());
    assertEquals(-2, semaphore.availablePermits());
    a.close();
    b.close();
    assertEquals(0, semaphore.availablePermits());
    assertFalse(semaphore.tryAcquire(), "two were out beyond the new count until now");
    c.close();
    assertEquals(1, semaphore.availablePermits());
    assertTrue(semaphore.tryAcquire());
    assertFalse(semaphore.tryAcquire());
    semaphore.release();
    assertThrows(IllegalStateException.class, semaphore::release);
    assertThrows(IllegalArgumentException.class, () -> semaphore.setPermits(0));
  }

  /**
   * Resizes while holders come and go: a release that has an acquisition behind it is never
   * refused, and once the holders are done every permit of the last size is free.
   */
  @Test
  void resizesUnderContentionNeverRefuseARightfulReleaseNorLeak() throws Exception {
    BudgetedSemaphore semaphore = new BudgetedSemaphore(2, ticker);
    java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
    java.util.concurrent.atomic.AtomicIntegerArray rounds = new java.util.concurrent.atomic.AtomicIntegerArray(3);
    List<Worker<Void>> holders = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      int me = i;
      holders.add(new Worker<>(() -> {
        while (!stop.get()) {
          if (semaphore.tryAcquire()) {
            semaphore.release();
          }
          semaphore.acquire().close();
          rounds.incrementAndGet(me);
        }
        return null;
      }));
    }
    // resize until every holder has come and gone many times meanwhile
    for (int round = 0; round < 20_000 || Math.min(rounds.get(0), Math.min(rounds.get(1),
        rounds.get(2))) < 1_000; round++) {
      semaphore.setPermits(1 + round % 4);
    }
    semaphore.setPermits(3);
    stop.set(true);
    for (Worker<Void> h : holders) {
      h.join();
    }
    assertEquals(3, semaphore.availablePermits(), "every permit of the last size is free");
    assertEquals(0, semaphore.waiters());
  }

  /** Protego §3.2 with literal numbers: delay 100 ns against budgets of 99 and 100 ns. */
  @Test
  void aFullPoolTurnsAwayARequestWhoseBudgetTheDelayExceedsAndQueuesOneItFits() {
    BudgetedSemaphore semaphore = new BudgetedSemaphore(2, ticker);
    BudgetedSemaphore.Permit a = semaphore.acquire();
    BudgetedSemaphore.Permit b = semaphore.acquire();
    long t = now.get();
    Worker<Void> oldest = queuedTaker(semaphore); // stamped t
    now.set(t + 100); // wraps past Long.MAX_VALUE
    assertEquals(100, semaphore.queueingDelayNanos(now.get()));
    assertEquals(100, semaphore.expectedWaitNanos(now.get()), "no hand-off measured yet");

    RequestBudget tight = RequestBudget.of(99);
    Worker<BudgetedSemaphore.Permit> refused =
        new Worker<>(() -> withBudget(tight, semaphore::acquireWithinBudget));
    Await.join(refused.thread);
    BudgetExceededException exceeded =
        assertInstanceOf(BudgetExceededException.class, refused.failure.get());
    assertEquals(100, exceeded.queueingDelayNanos());
    assertEquals(99, exceeded.remainingBudgetNanos());
    assertEquals(0, exceeded.getStackTrace().length, "cheap: no stack trace");
    assertEquals(99, tight.remainingNanos(), "nothing charged");
    assertEquals(1, semaphore.waiters(), "the refused request never queued");

    RequestBudget exact = RequestBudget.of(100); // delay == budget still fits
    Worker<Boolean> fits = new Worker<>(() -> withBudget(exact, () -> {
      try (var _ = semaphore.acquireWithinBudget()) {
        return true;
      }
    }));
    Await.until(() -> semaphore.waiters() == 2 && semaphore.hasQueuedThread(fits.thread));
    now.set(t + 150); // fits was stamped at t + 100 and gets a permit at t + 150
    a.close();
    b.close();
    oldest.join();
    assertTrue(fits.join());
    assertEquals(50, exact.remainingNanos(), "charged the 50 ns it waited");
    assertEquals(2, semaphore.availablePermits());
    assertEquals(0, semaphore.waiters());
    assertEquals(0, semaphore.queueingDelayNanos(now.get()));
  }

  /**
   * The N-permit estimate, literally. Three permits are taken at t − 4,000, t − 2,000 and t and
   * each is held 6,000 ns, so they come back at t + 2,000, t + 4,000 and t + 6,000: one every
   * 2,000 ns = 6,000 / 3. A and B, queued since t, get the first two; B's grant is the first
   * hand-off sample, 2,000 ns. At t + 4,100 three wait (C since t, D and E since t + 4,000): the
   * newcomer expects 3·2,000 + 2σ·(sqrt(4) − 1), σ = sqrt(π/2)·2/e·2,000 = 1,844.27 ns, so
   * 9,688 ns — 2,000 per waiter ahead, not the 6,000 of a whole hold. The oldest waiter's age is
   * 4,100 ns, which the paper's rule alone compares with the budget.
   */
  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"QUEUE_AWARE", "OLDEST_WAITER"})
  void threePermitsHandOffEveryThirdOfAHoldAndTheQueueIsPricedSo(String ruleName) {
    LockWaitRule rule = LockWaitRule.valueOf(ruleName);
    BudgetedSemaphore semaphore = new BudgetedSemaphore(3, ticker, rule);
    long t = now.get();
    BudgetedSemaphore.Permit p1 = semaphore.acquire();
    BudgetedSemaphore.Permit p2 = semaphore.acquire();
    BudgetedSemaphore.Permit p3 = semaphore.acquire();
    CountDownLatch aHolds = new CountDownLatch(1);
    CountDownLatch bHolds = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    Worker<Void> a = queuedHolder(semaphore, aHolds, release); // stamped t
    Worker<Void> b = queuedHolder(semaphore, bHolds, release); // stamped t
    Worker<Void> c = queuedTaker(semaphore); // stamped t
    now.set(t + 2_000);
    p1.close(); // the oldest in AQS order (A) gets it: the first grant, nothing to measure yet
    Await.await(aHolds);
    now.set(t + 4_000);
    p2.close(); // B, waiting since t, gets it at t + 4,000: a 2,000 ns sample
    Await.await(bHolds);
    Worker<Void> d = queuedTaker(semaphore); // stamped t + 4,000
    Worker<Void> e = queuedTaker(semaphore);
    now.set(t + 4_100);
    assertEquals(3, semaphore.waiters());
    assertEquals(4_100, semaphore.queueingDelayNanos(now.get()));
    boolean queueAware = rule == LockWaitRule.QUEUE_AWARE;
    assertEquals(queueAware ? 9_688 : 4_100, semaphore.expectedWaitNanos(now.get()));

    RequestBudget budget = RequestBudget.of(9_000);
    Worker<Boolean> asker = new Worker<>(() -> withBudget(budget, () -> {
      try (var _ = semaphore.acquireWithinBudget()) {
        return true;
      } catch (BudgetExceededException refused) {
        return false;
      }
    }));
    if (queueAware) {
      assertFalse(asker.join(), "9,688 ns expected > 9,000 ns budget: refused at once");
      assertEquals(9_000, budget.remainingNanos(), "nothing charged");
    } else {
      Await.until(() -> semaphore.waiters() == 4 && semaphore.hasQueuedThread(asker.thread));
    }
    p3.close();
    release.countDown();
    a.join();
    b.join();
    c.join();
    d.join();
    e.join();
    if (!queueAware) {
      assertTrue(asker.join(), "the paper's rule: a 4,100 ns delay fits a 9,000 ns budget");
    }
    assertEquals(3, semaphore.availablePermits());
    assertEquals(0, semaphore.waiters());
  }

  @Test
  void withoutABudgetInScopeItWaitsAsAPlainSemaphore() {
    BudgetedSemaphore semaphore = new BudgetedSemaphore(1, ticker);
    BudgetedSemaphore.Permit held = semaphore.acquire();
    long t = now.get();
    Worker<Void> oldest = queuedTaker(semaphore);
    now.set(t + TimeUnit.HOURS.toNanos(1));
    Worker<Boolean> unbudgeted = new Worker<>(() -> {
      try (var _ = semaphore.acquireWithinBudget()) {
        return true;
      }
    });
    Await.until(() -> semaphore.waiters() == 2 && semaphore.hasQueuedThread(unbudgeted.thread));
    held.close();
    oldest.join();
    assertTrue(unbudgeted.join());
    assertEquals(1, semaphore.availablePermits());
  }

  @Test
  void everyAcquisitionFormChargesItsWaitToTheBudgetInScope() throws Exception {
    BudgetedSemaphore semaphore = new BudgetedSemaphore(1, ticker);
    for (int form = 0; form < 4; form++) {
      int f = form;
      BudgetedSemaphore.Permit held = semaphore.acquire();
      RequestBudget budget = RequestBudget.of(1_000);
      Worker<Void> waiter = new Worker<>(() -> withBudget(budget, () -> {
        switch (f) {
          case 0 -> semaphore.acquire().close();
          case 1 -> semaphore.acquireInterruptibly().close();
          case 2 -> semaphore.acquireWithinBudget().close();
          default -> {
            assertTrue(semaphore.tryAcquire(1, TimeUnit.DAYS));
            semaphore.release();
          }
        }
        return null;
      }));
      Await.until(() -> semaphore.hasQueuedThread(waiter.thread));
      now.addAndGet(300 + form);
      held.close();
      waiter.join();
      assertEquals(700 - form, budget.remainingNanos(), "form " + form);
    }
    assertEquals(1, semaphore.availablePermits());
  }

  @Test
  void aWaiterThatGivesUpLeavesTheLineAndTheNextOldestCounts() {
    BudgetedSemaphore semaphore = new BudgetedSemaphore(1, ticker);
    BudgetedSemaphore.Permit held = semaphore.acquire();
    long t = now.get();
    RequestBudget budget = RequestBudget.of(1_000);
    Worker<Void> interruptible = new Worker<>(() -> withBudget(budget, () -> {
      semaphore.acquireInterruptibly().close();
      return null;
    }));
    Await.until(() -> semaphore.waiters() == 1 && semaphore.hasQueuedThread(interruptible.thread));
    now.set(t + 10);
    Worker<Void> patient = queuedTaker(semaphore);
    now.set(t + 25);
    assertEquals(25, semaphore.queueingDelayNanos(now.get()));

    interruptible.thread.interrupt();
    Await.join(interruptible.thread);
    assertInstanceOf(InterruptedException.class, interruptible.failure.get());
    assertEquals(975, budget.remainingNanos(), "the 25 ns it waited before giving up");
    assertEquals(1, semaphore.waiters());
    assertEquals(15, semaphore.queueingDelayNanos(now.get()), "the patient waiter is the oldest");
    assertEquals(0, semaphore.availablePermits(), "the interrupted waiter took nothing");

    held.close();
    patient.join();
    assertEquals(1, semaphore.availablePermits());
    assertEquals(0, semaphore.waiters());
  }

  @Test
  void aTimedOutTryAcquireLeavesTheLineWithoutAPermit() throws Exception {
    BudgetedSemaphore semaphore = new BudgetedSemaphore(1, ticker);
    BudgetedSemaphore.Permit held = semaphore.acquire(); // held throughout
    Worker<Boolean> timed = new Worker<>(() -> semaphore.tryAcquire(1, TimeUnit.NANOSECONDS));
    assertFalse(timed.join());
    assertEquals(0, semaphore.waiters());
    assertEquals(0, semaphore.availablePermits());
    held.close();
    assertEquals(1, semaphore.availablePermits());
  }

  /** Protego §4: a dropped request must release what it holds; try-with-resources does it. */
  @Test
  void aRefusalAtThePoolReleasesALockHeldAroundIt() {
    BudgetedLock outer = new BudgetedLock(ticker);
    BudgetedSemaphore pool = new BudgetedSemaphore(1, ticker);
    BudgetedSemaphore.Permit held = pool.acquire();
    long t = now.get();
    Worker<Void> oldest = queuedTaker(pool);
    now.set(t + 1_000);
    RequestBudget budget = RequestBudget.of(10);
    Worker<Boolean> request = new Worker<>(() -> withBudget(budget, () -> {
      try (var _ = outer.acquireWithinBudget(); var _ = pool.acquireWithinBudget()) {
        return true;
      } catch (BudgetExceededException dropped) {
        return outer.isHeldByCurrentThread();
      }
    }));
    assertFalse(request.join());
    assertFalse(outer.isLocked());
    assertEquals(1, pool.waiters());
    held.close();
    oldest.join();
    assertEquals(1, pool.availablePermits());
  }

  /**
   * Contending platform and virtual threads mix every acquisition form with random budgets on a
   * clock that moves on every read; at no instant do more than N hold a permit, and at the end
   * every permit is back, nobody waits, and every attempt was either served or refused.
   */
  @ParameterizedTest(name = "permits={0}")
  @ValueSource(ints = {1, 3})
  void permitsAreNeverExceededNorLeakedUnderContention(int permits) throws Exception {
    long seed = WaiterLineTest.seed();
    AtomicLong clock = new AtomicLong(Long.MAX_VALUE - 50_000);
    BudgetedSemaphore semaphore = new BudgetedSemaphore(permits, clock::incrementAndGet);
    int threads = 6;
    int iterations = 3_000;
    AtomicInteger inside = new AtomicInteger();
    AtomicInteger excess = new AtomicInteger();
    AtomicInteger served = new AtomicInteger();
    AtomicInteger refused = new AtomicInteger();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    CyclicBarrier start = new CyclicBarrier(threads);
    List<Thread> contenders = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      SplittableRandom random = new SplittableRandom(seed + t);
      // daemons: a thread stuck on a leaked permit fails the test at its timeout, not the JVM
      Thread.Builder builder = t % 2 == 0 ? Thread.ofPlatform().daemon() : Thread.ofVirtual();
      contenders.add(builder.start(() -> {
        try {
          start.await();
          for (int i = 0; i < iterations; i++) {
            RequestBudget budget = RequestBudget.of(random.nextInt(200));
            Runnable release = withBudget(budget, () -> take(semaphore, random));
            if (release == null) {
              refused.incrementAndGet();
              continue;
            }
            try {
              if (inside.incrementAndGet() > permits) {
                excess.incrementAndGet();
              }
              served.incrementAndGet();
              if (random.nextInt(4) == 0) {
                Thread.yield();
              }
              inside.decrementAndGet();
            } finally {
              release.run();
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
    assertEquals(0, excess.get(), "more than " + permits + " holders at once, seed " + seed);
    assertEquals((long) threads * iterations, served.get() + refused.get(), "seed " + seed);
    assertEquals(permits, semaphore.availablePermits(), "permits leaked, seed " + seed);
    assertEquals(0, semaphore.waiters(), "seed " + seed);
    assertEquals(0, semaphore.queueingDelayNanos(clock.get()), "seed " + seed);
  }

  /**
   * One of the acquisition forms at random: what returns the permit (a handle's close, which may
   * run twice, or a bare {@code release}), or {@code null} when refused or timed out.
   */
  private static Runnable take(BudgetedSemaphore semaphore, SplittableRandom random)
      throws InterruptedException {
    BudgetedSemaphore.Permit permit;
    switch (random.nextInt(5)) {
      case 0 -> permit = semaphore.acquire();
      case 1 -> permit = semaphore.acquireInterruptibly();
      case 2 -> {
        try {
          permit = semaphore.acquireWithinBudget();
        } catch (BudgetExceededException refused) {
          return null;
        }
      }
      default -> {
        boolean got = random.nextBoolean()
            ? semaphore.tryAcquire()
            : semaphore.tryAcquire(random.nextInt(20_000), TimeUnit.NANOSECONDS);
        return got ? semaphore::release : null;
      }
    }
    boolean twice = random.nextInt(8) == 0; // a second close returns nothing more
    return () -> {
      permit.close();
      if (twice) {
        permit.close();
      }
    };
  }
}
