package io.spillway.asqm;

import static io.spillway.asqm.WaiterLineLincheckTest.op;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import io.spillway.api.RequestBudget;
import io.spillway.api.Ticker;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.jetbrains.kotlinx.lincheck.execution.ExecutionScenario;
import org.jetbrains.lincheck.LincheckAssertionError;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Validate;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Model-checks {@link BudgetedLock}'s mutual exclusion with Lincheck: a plain (non-atomic)
 * counter incremented under each acquisition form ({@code lock}, {@code lockInterruptibly},
 * {@code lockIfUncongested}, {@code acquireWithinBudget} with a budget in scope, a reentrant
 * {@code acquire}) must be linearizable against a sequential counter, so no update is lost and no
 * value handed out twice. After every explored interleaving ({@code @Validate}) the lock is free,
 * {@code waiters()} is 0 and {@code queueingDelayNanos} is 0. The ticker is a fake clock that
 * advances by one on every read, so a waiting thread does make the delay non-zero.
 *
 * <p>The negative check runs the same counter under a test-local check-then-act "lock" and
 * expects Lincheck to report the lost update.
 *
 * <p>Run: {@code ./mvnw -B -pl overload-asqm test -Dtest='BudgetedLockLincheckTest'}.
 */
class BudgetedLockLincheckTest {

  @BeforeAll
  static void notInTheWithoutAddOpensRun() {
    // -Dtest reaches the pom's second surefire execution too; checking once is enough.
    assumeFalse(Boolean.getBoolean("spillway.asqm.withoutAddOpens"));
  }

  private static ModelCheckingOptions options() {
    return new ModelCheckingOptions()
        .iterations(8)
        .invocationsPerIteration(300)
        .threads(2)
        .actorsPerThread(2)
        .actorsBefore(1)
        .actorsAfter(1)
        .sequentialSpecification(Counter.class);
  }

  @Test
  void nonFairLockExcludesAndEndsIdle() {
    Class<?> ops = NonFair.class;
    ExecutionScenario threeContenders = new ExecutionScenario(
        List.of(),
        List.of(
            List.of(op(ops, "incIfUncongested")),
            List.of(op(ops, "incWithinBudget")),
            List.of(op(ops, "incLock"))),
        List.of(), null);
    options().addCustomScenario(threeContenders).check(ops);
  }

  @Test
  void fairLockExcludesAndEndsIdle() {
    options().iterations(5).check(Fair.class);
  }

  @Test
  void checkThenActLockLosesUpdates() {
    LincheckAssertionError failure =
        assertThrows(LincheckAssertionError.class, () -> options().check(CheckThenAct.class));
    assertTrue(failure.getMessage().contains("Invalid execution results"), failure.getMessage());
  }

  // ---- the operations ----------------------------------------------------------------------

  /** A counter guarded by a {@link BudgetedLock}; each operation returns the incremented value. */
  public abstract static class Guarded {
    private final FakeClock clock = new FakeClock();
    private final BudgetedLock lock;
    private int counter; // plain on purpose: only the lock makes the increments atomic

    Guarded(boolean fair) {
      lock = new BudgetedLock(clock, fair);
    }

    @Operation
    public int incLock() {
      lock.lock();
      try {
        return ++counter;
      } finally {
        lock.unlock();
      }
    }

    @Operation
    public int incInterruptibly() throws InterruptedException {
      lock.lockInterruptibly();
      try {
        return ++counter;
      } finally {
        lock.unlock();
      }
    }

    /** With no budget in scope: always admitted. */
    @Operation
    public int incIfUncongested() {
      if (!lock.lockIfUncongested()) {
        return -1;
      }
      try {
        return ++counter;
      } finally {
        lock.unlock();
      }
    }

    /** With an ample budget in scope: the congestion check runs, and admits. */
    @Operation
    public int incWithinBudget() {
      return ScopedValue.where(RequestBudget.CURRENT, RequestBudget.of(1_000_000)).call(() -> {
        try (var _ = lock.acquireWithinBudget()) {
          return ++counter;
        }
      });
    }

    /** Holds the lock twice. */
    @Operation
    public int incReentrant() {
      try (var _ = lock.acquire(); var _ = lock.acquire()) {
        return ++counter;
      }
    }

    @Validate
    public void endsIdle() {
      check(!lock.isLocked(), "lock still held");
      check(lock.waiters() == 0, "waiters " + lock.waiters());
      long delay = lock.queueingDelayNanos(clock.read() + 1_000);
      check(delay == 0, "queueing delay " + delay);
    }

    private static void check(boolean ok, String message) {
      if (!ok) {
        throw new IllegalStateException(message + " after all threads are done");
      }
    }
  }

  /** A fake clock that advances by one on every read (a named class: Lincheck can trace it). */
  static final class FakeClock implements Ticker {
    private final AtomicLong now = new AtomicLong();

    @Override
    public long read() {
      return now.incrementAndGet();
    }
  }

  /** A non-fair {@link BudgetedLock}. */
  public static class NonFair extends Guarded {
    public NonFair() {
      super(false);
    }
  }

  /** A fair {@link BudgetedLock}. */
  public static class Fair extends Guarded {
    public Fair() {
      super(true);
    }
  }

  /** A broken lock (test, then set): two threads can both see it free. */
  public static class CheckThenAct {
    private volatile boolean held;
    private int counter;

    @Operation
    public int incLock() {
      while (held) {
        Thread.onSpinWait();
      }
      held = true;
      try {
        return ++counter;
      } finally {
        held = false;
      }
    }
  }

  /** The sequential specification: every operation increments and returns the counter. */
  public static class Counter {
    private int counter;

    public int incLock() {
      return ++counter;
    }

    public int incInterruptibly() {
      return ++counter;
    }

    public int incIfUncongested() {
      return ++counter;
    }

    public int incWithinBudget() {
      return ++counter;
    }

    public int incReentrant() {
      return ++counter;
    }
  }
}
