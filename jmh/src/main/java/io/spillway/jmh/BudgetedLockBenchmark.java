package io.spillway.jmh;

import io.spillway.api.RequestBudget;
import io.spillway.asqm.BudgetedLock;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Group;
import org.openjdk.jmh.annotations.GroupThreads;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The cost of Protego's ASQM lock (protego-nsdi23 §4, {@code mutex_lock_if_uncongested}) against
 * a plain {@link ReentrantLock} measured in the same run (the bar: uncontended
 * {@code lockIfUncongested()}+{@code unlock()} within 1.2× of {@code lock()}+{@code unlock()}).
 *
 * <ul>
 *   <li>{@code reentrantLock} vs {@code budgetedNoBudget}: uncontended, one pair per invocation,
 *       with no {@link RequestBudget} in scope ({@code lockIfUncongested()} then is {@code lock()}
 *       plus one {@code ScopedValue.isBound()}).
 *   <li>{@code reentrantLockBatch} vs {@code budgetedWithBudgetBatch}: {@value #BATCH} pairs per
 *       invocation, the budgeted one inside one {@code ScopedValue.where(CURRENT, budget).run(...)}
 *       per batch, so the binding (which a server pays once per request, not per lock) is
 *       amortised; the plain lock runs the same loop so both carry the same loop overhead.
 *   <li>{@code budgetedBindPerCall}: the honest worst case, a fresh {@code where(...).run(...)}
 *       around every single pair.
 *   <li>{@code contended*}: two threads on one lock ({@code @Group} with {@code @GroupThreads(2)}),
 *       an empty critical section; for the budgeted lock each thread has a budget in scope (bound
 *       once per batch, as above) so the slow path stamps waiters and checks the budget.
 *   <li>{@code queueingDelayRead}: {@link BudgetedLock#queueingDelayNanos} on an idle lock, the
 *       read a server's delay signal does per request; the time is a field, not the clock.
 * </ul>
 *
 * <p>Budgets are large, so nothing is ever refused: the benchmark measures the admission path, not
 * aborts. Uncontended, 1 s (nothing waits, so nothing is charged); contended, unbounded ({@link
 * ThreadBudget}).
 *
 * <p>Run: {@code ./spillway jmh BudgetedLockBenchmark -prof gc}
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
public class BudgetedLockBenchmark {

  static final int BATCH = 1_000;
  private static final long ONE_SECOND = 1_000_000_000L;

  /** One lock of each kind per thread: never contended. */
  @State(Scope.Thread)
  public static class Uncontended {
    final ReentrantLock reentrant = new ReentrantLock();
    final BudgetedLock budgeted = new BudgetedLock();
    final RequestBudget budget = RequestBudget.of(ONE_SECOND);
    final Runnable budgetedPair = () -> {
      budgeted.lockIfUncongested();
      budgeted.unlock();
    };
    final Runnable budgetedBatch = () -> {
      for (int i = 0; i < BATCH; i++) {
        budgeted.lockIfUncongested();
        budgeted.unlock();
      }
    };
    long now = 123_456_789L;
  }

  /** One lock of each kind shared by the threads of a group. */
  @State(Scope.Group)
  public static class Shared {
    final ReentrantLock reentrant = new ReentrantLock();
    final BudgetedLock budgeted = new BudgetedLock();
  }

  /**
   * Per-thread budget for the contended group. One budget serves the whole trial and every wait is
   * charged to it, so a 1 s budget would run out after 1 s of waiting in total; {@code
   * lockIfUncongested()} would then refuse and {@code unlock()} throw.
   */
  @State(Scope.Thread)
  public static class ThreadBudget {
    final RequestBudget budget = RequestBudget.of(Long.MAX_VALUE / 4);
  }

  @Benchmark
  public void reentrantLock(Uncontended s) {
    s.reentrant.lock();
    s.reentrant.unlock();
  }

  @Benchmark
  public boolean budgetedNoBudget(Uncontended s) {
    boolean acquired = s.budgeted.lockIfUncongested();
    s.budgeted.unlock();
    return acquired;
  }

  @Benchmark
  @OperationsPerInvocation(BATCH)
  public void reentrantLockBatch(Uncontended s) {
    for (int i = 0; i < BATCH; i++) {
      s.reentrant.lock();
      s.reentrant.unlock();
    }
  }

  @Benchmark
  @OperationsPerInvocation(BATCH)
  public void budgetedWithBudgetBatch(Uncontended s) {
    ScopedValue.where(RequestBudget.CURRENT, s.budget).run(s.budgetedBatch);
  }

  @Benchmark
  public void budgetedBindPerCall(Uncontended s) {
    ScopedValue.where(RequestBudget.CURRENT, s.budget).run(s.budgetedPair);
  }

  @Benchmark
  public long queueingDelayRead(Uncontended s) {
    return s.budgeted.queueingDelayNanos(s.now);
  }

  @Benchmark
  @Group("contendedReentrant")
  @GroupThreads(2)
  @OperationsPerInvocation(BATCH)
  public void contendedReentrant(Shared s) {
    for (int i = 0; i < BATCH; i++) {
      s.reentrant.lock();
      s.reentrant.unlock();
    }
  }

  @Benchmark
  @Group("contendedBudgeted")
  @GroupThreads(2)
  @OperationsPerInvocation(BATCH)
  public void contendedBudgeted(Shared s, ThreadBudget b) {
    BudgetedLock lock = s.budgeted;
    ScopedValue.where(RequestBudget.CURRENT, b.budget).run(() -> {
      for (int i = 0; i < BATCH; i++) {
        lock.lockIfUncongested();
        lock.unlock();
      }
    });
  }
}
