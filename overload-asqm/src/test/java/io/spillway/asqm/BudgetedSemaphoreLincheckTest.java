package io.spillway.asqm;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import io.spillway.api.RequestBudget;
import java.util.concurrent.atomic.AtomicInteger;
import org.jetbrains.lincheck.LincheckAssertionError;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Validate;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Model-checks {@link BudgetedSemaphore} with Lincheck: three threads take permits of a 2-permit
 * semaphore in every form ({@code acquire}, {@code acquireInterruptibly}, {@code
 * acquireWithinBudget} with a budget in scope, {@code tryAcquire}, a handle closed twice), and
 * inside each holder counts the holders; an operation returns the excess over 2 (0 in the
 * sequential specification), so a third concurrent holder is a non-linearizable result. After
 * every explored interleaving ({@code @Validate}) both permits are free, nobody waits and the
 * queueing delay is 0, so no permit leaked. The ticker advances by one on every read, so waits
 * do make the delay non-zero.
 *
 * <p>The negative check runs two of the operations on a test-local pool whose handle returns a
 * permit on every close, and expects Lincheck to find the third permit.
 *
 * <p>Run: {@code ./mvnw -B -pl overload-asqm test -Dtest='BudgetedSemaphoreLincheckTest'}.
 */
class BudgetedSemaphoreLincheckTest {

  static final int PERMITS = 2;

  @BeforeAll
  static void notInTheWithoutAddOpensRun() {
    // -Dtest reaches the pom's second surefire execution too; checking once is enough.
    assumeFalse(Boolean.getBoolean("spillway.asqm.withoutAddOpens"));
  }

  private static ModelCheckingOptions options() {
    return new ModelCheckingOptions()
        .iterations(10)
        .invocationsPerIteration(300)
        .threads(3)
        .actorsPerThread(2)
        .actorsBefore(1)
        .actorsAfter(1)
        .sequentialSpecification(NeverExceeded.class);
  }

  @Test
  void neverMoreHoldersThanPermitsAndNoPermitLeaks() {
    options().check(Holders.class);
  }

  @Test
  void aPermitReturnedOnEveryCloseIsFound() {
    LincheckAssertionError failure = assertThrows(LincheckAssertionError.class,
        () -> options().check(ReleasesOnEveryClose.class));
    assertTrue(failure.getMessage().contains("free 3")
        || failure.getMessage().contains("Invalid execution results"), failure.getMessage());
  }

  /**
   * Resizes while permits are taken and returned: a release that has an acquisition behind it is
   * never refused ({@code takeAndReturn} returns 1 if it was), and a semaphore left at 3 permits
   * ends with all 3 free.
   */
  @Test
  void aResizeNeverRefusesARightfulRelease() {
    new ModelCheckingOptions()
        .iterations(20)
        .invocationsPerIteration(300)
        .threads(3)
        .actorsPerThread(2)
        .actorsBefore(1)
        .actorsAfter(0)
        .sequentialSpecification(NeverRefused.class)
        .check(Resized.class);
  }

  // ---- the operations ----------------------------------------------------------------------

  /** Holders of a {@link BudgetedSemaphore}; each operation returns the excess it saw. */
  public static class Holders {
    private final BudgetedSemaphore semaphore =
        new BudgetedSemaphore(PERMITS, new BudgetedLockLincheckTest.FakeClock());
    private final AtomicInteger inside = new AtomicInteger();

    private int hold() {
      int excess = Math.max(0, inside.incrementAndGet() - PERMITS);
      inside.decrementAndGet();
      return excess;
    }

    @Operation
    public int enterAcquire() {
      try (var _ = semaphore.acquire()) {
        return hold();
      }
    }

    @Operation
    public int enterInterruptibly() throws InterruptedException {
      try (var _ = semaphore.acquireInterruptibly()) {
        return hold();
      }
    }

    /** With an ample budget in scope: the congestion check runs, and admits. */
    @Operation
    public int enterWithinBudget() {
      return ScopedValue.where(RequestBudget.CURRENT, RequestBudget.of(1_000_000)).call(() -> {
        try (var _ = semaphore.acquireWithinBudget()) {
          return hold();
        }
      });
    }

    @Operation
    public int enterIfFree() {
      if (!semaphore.tryAcquire()) {
        return 0;
      }
      try {
        return hold();
      } finally {
        semaphore.release();
      }
    }

    /** Closes its handle twice: the second close must return nothing. */
    @Operation
    public int enterCloseTwice() {
      BudgetedSemaphore.Permit permit = semaphore.acquire();
      try {
        return hold();
      } finally {
        permit.close();
        permit.close();
      }
    }

    @Validate
    public void endsIdle() {
      check(semaphore.availablePermits() == PERMITS, "free " + semaphore.availablePermits());
      check(semaphore.waiters() == 0, "waiters " + semaphore.waiters());
      long delay = semaphore.queueingDelayNanos(Long.MAX_VALUE);
      check(delay == 0, "queueing delay " + delay);
    }

    private static void check(boolean ok, String message) {
      if (!ok) {
        throw new IllegalStateException(message + " after all threads are done");
      }
    }
  }

  /**
   * A broken pool: a {@link java.util.concurrent.Semaphore} whose handle returns its permit on
   * every close, so a handle closed twice makes a third permit.
   */
  public static class ReleasesOnEveryClose {
    private final java.util.concurrent.Semaphore semaphore =
        new java.util.concurrent.Semaphore(PERMITS);
    private final AtomicInteger inside = new AtomicInteger();

    @Operation
    public int enterAcquire() {
      semaphore.acquireUninterruptibly();
      try {
        int excess = Math.max(0, inside.incrementAndGet() - PERMITS);
        inside.decrementAndGet();
        return excess;
      } finally {
        semaphore.release();
      }
    }

    @Operation
    public int enterCloseTwice() {
      semaphore.acquireUninterruptibly();
      try {
        int excess = Math.max(0, inside.incrementAndGet() - PERMITS);
        inside.decrementAndGet();
        return excess;
      } finally {
        semaphore.release();
        semaphore.release();
      }
    }

    @Validate
    public void endsIdle() {
      if (semaphore.availablePermits() != PERMITS) {
        throw new IllegalStateException("free " + semaphore.availablePermits());
      }
    }
  }

  /** Takers that never block, beside resizes between 1 and 3 permits. */
  public static class Resized {
    private final BudgetedSemaphore semaphore =
        new BudgetedSemaphore(PERMITS, new BudgetedLockLincheckTest.FakeClock());

    @Operation
    public int takeAndReturn() {
      if (!semaphore.tryAcquire()) {
        return 0;
      }
      try {
        semaphore.release();
        return 0;
      } catch (IllegalStateException refused) {
        return 1;
      }
    }

    @Operation
    public void resizeTo1() {
      semaphore.setPermits(1);
    }

    @Operation
    public void resizeTo3() {
      semaphore.setPermits(3);
    }

    @Validate
    public void endsWithEveryPermitFree() {
      semaphore.setPermits(3);
      if (semaphore.availablePermits() != 3) {
        throw new IllegalStateException("free " + semaphore.availablePermits() + " of 3");
      }
    }
  }

  /** The sequential specification of {@link Resized}: no release is refused. */
  public static class NeverRefused {
    public int takeAndReturn() {
      return 0;
    }

    public void resizeTo1() { }

    public void resizeTo3() { }
  }

  /** The sequential specification: nobody ever sees more holders than permits. */
  public static class NeverExceeded {
    public int enterAcquire() {
      return 0;
    }

    public int enterInterruptibly() {
      return 0;
    }

    public int enterWithinBudget() {
      return 0;
    }

    public int enterIfFree() {
      return 0;
    }

    public int enterCloseTwice() {
      return 0;
    }
  }
}
