package io.spillway.asqm;

import static io.spillway.asqm.WaiterLineLincheckTest.op;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import io.spillway.api.RequestBudget;
import io.spillway.asqm.BudgetedLockLincheckTest.FakeClock;
import java.util.List;
import org.jetbrains.kotlinx.lincheck.Actor;
import org.jetbrains.kotlinx.lincheck.execution.ExecutionScenario;
import org.jetbrains.lincheck.LincheckAssertionError;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Validate;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Model-checks that {@link BudgetedCondition} loses no wake-up: takers wait on the condition
 * until a token is there (checking under the lock), putters add a token and {@code signal()} one
 * waiter. In every interleaving Lincheck explores, every taker must return (Lincheck reports a
 * hang otherwise), the results must match a sequential token counter, and afterwards
 * ({@code @Validate}) the condition and the lock have no waiter and no queueing delay left. The
 * takers use each wait form: {@code await}, {@code awaitUninterruptibly}, {@code
 * awaitIfUncongested} and {@code awaitWithinBudget} (these two with an ample budget in scope).
 *
 * <p>Only fixed scenarios run, as a taker with no putter would wait forever by design. The
 * negative check uses a taker that checks for a token under the lock but releases the lock before
 * waiting, and expects Lincheck to find the interleaving where its wake-up is lost (a hang).
 *
 * <p>Run: {@code ./mvnw -B -pl overload-asqm test -Dtest='BudgetedConditionLincheckTest'}.
 */
class BudgetedConditionLincheckTest {

  @BeforeAll
  static void notInTheWithoutAddOpensRun() {
    // -Dtest reaches the pom's second surefire execution too; checking once is enough.
    assumeFalse(Boolean.getBoolean("spillway.asqm.withoutAddOpens"));
  }

  private static ModelCheckingOptions options() {
    return new ModelCheckingOptions()
        .iterations(0)
        .invocationsPerIteration(1_000)
        .sequentialSpecification(Tokens.class);
  }

  @Test
  void signalAfterACheckUnderTheLockIsNeverLost() {
    Class<?> ops = Handoff.class;
    options()
        .addCustomScenario(scenario(
            List.of(op(ops, "take")),
            List.of(op(ops, "put"))))
        .addCustomScenario(scenario(
            List.of(op(ops, "takeUninterruptibly"), op(ops, "takeIfUncongested")),
            List.of(op(ops, "put"), op(ops, "put"))))
        .addCustomScenario(scenario(
            List.of(op(ops, "take")),
            List.of(op(ops, "takeWithinBudget")),
            List.of(op(ops, "put"), op(ops, "put"))))
        .check(ops);
  }

  @Test
  void checkingThenWaitingOutsideTheLockLosesTheWakeUp() {
    Class<?> ops = CheckThenWait.class;
    LincheckAssertionError failure = assertThrows(LincheckAssertionError.class,
        () -> options()
            .addCustomScenario(scenario(List.of(op(ops, "take")), List.of(op(ops, "put"))))
            .check(ops));
    assertTrue(failure.getMessage().contains("The execution has hung"), failure.getMessage());
  }

  private static ExecutionScenario scenario(List<Actor> first, List<Actor> second) {
    return new ExecutionScenario(List.of(), List.of(first, second), List.of(), null);
  }

  private static ExecutionScenario scenario(
      List<Actor> first, List<Actor> second, List<Actor> third) {
    return new ExecutionScenario(List.of(), List.of(first, second, third), List.of(), null);
  }

  // ---- the operations ----------------------------------------------------------------------

  /**
   * A token counter guarded by a {@link BudgetedLock}, with one condition "a token is there";
   * each operation returns the tokens left after it.
   */
  public static class Handoff {
    final FakeClock clock = new FakeClock();
    final BudgetedLock lock = new BudgetedLock(clock);
    final BudgetedCondition tokenThere = lock.newCondition();
    int tokens; // guarded by lock

    @Operation
    public int put() {
      lock.lock();
      try {
        tokens++;
        tokenThere.signal();
        return tokens;
      } finally {
        lock.unlock();
      }
    }

    @Operation
    public int take() throws InterruptedException {
      lock.lock();
      try {
        while (tokens == 0) {
          tokenThere.await();
        }
        return --tokens;
      } finally {
        lock.unlock();
      }
    }

    @Operation
    public int takeUninterruptibly() {
      lock.lock();
      try {
        while (tokens == 0) {
          tokenThere.awaitUninterruptibly();
        }
        return --tokens;
      } finally {
        lock.unlock();
      }
    }

    /** With no budget in scope: waits as {@code await} does. */
    @Operation
    public int takeIfUncongested() throws InterruptedException {
      lock.lock();
      try {
        while (tokens == 0) {
          if (!tokenThere.awaitIfUncongested()) {
            return -1;
          }
        }
        return --tokens;
      } finally {
        lock.unlock();
      }
    }

    /** With an ample budget in scope: the congestion check runs, and lets it wait. */
    @Operation
    public int takeWithinBudget() throws InterruptedException {
      return ScopedValue.where(RequestBudget.CURRENT, RequestBudget.of(1_000_000)).call(() -> {
        lock.lock();
        try {
          while (tokens == 0) {
            tokenThere.awaitWithinBudget();
          }
          return --tokens;
        } finally {
          lock.unlock();
        }
      });
    }

    @Validate
    public void endsIdle() {
      long later = clock.read() + 1_000;
      check(tokenThere.waiters() == 0, "condition waiters " + tokenThere.waiters());
      check(tokenThere.queueingDelayNanos(later) == 0, "condition delay");
      check(lock.waiters() == 0, "lock waiters " + lock.waiters());
      check(lock.queueingDelayNanos(later) == 0, "lock delay");
      check(!lock.isLocked(), "lock held");
    }

    private static void check(boolean ok, String message) {
      if (!ok) {
        throw new IllegalStateException(message + " after all threads are done");
      }
    }
  }

  /** A broken taker: it sees no token under the lock, then waits after re-locking. */
  public static class CheckThenWait extends Handoff {
    @Override
    @Operation
    public int take() throws InterruptedException {
      lock.lock();
      boolean none;
      try {
        none = tokens == 0;
      } finally {
        lock.unlock();
      }
      lock.lock();
      try {
        if (none) {
          tokenThere.await(); // the put's signal may have come and gone while unlocked
        }
        return --tokens;
      } finally {
        lock.unlock();
      }
    }
  }

  /**
   * The sequential specification: a token counter. Taking when there is none throws, so the
   * verifier only accepts orders where each take follows enough puts (a real take waits).
   */
  public static class Tokens {
    private int tokens;

    public int put() {
      return ++tokens;
    }

    public int take() {
      if (tokens == 0) {
        throw new IllegalStateException("a take cannot complete before a put");
      }
      return --tokens;
    }

    public int takeUninterruptibly() {
      return take();
    }

    public int takeIfUncongested() {
      return take();
    }

    public int takeWithinBudget() {
      return take();
    }
  }
}
