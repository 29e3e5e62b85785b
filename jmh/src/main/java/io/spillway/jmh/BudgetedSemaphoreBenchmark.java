package io.spillway.jmh;

import io.spillway.api.RequestBudget;
import io.spillway.asqm.BudgetedSemaphore;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The uncontended cost of a {@link BudgetedSemaphore} permit (Protego's ASQM at a pool,
 * protego-nsdi23 §3.2) against a {@link Semaphore} measured in the same run: one acquisition and
 * one release per operation, one semaphore of 10 permits per thread, so a permit is always free.
 *
 * <ul>
 *   <li>{@code semaphore}: {@code acquireUninterruptibly()} + {@code release()}.
 *   <li>{@code budgetedTryAcquire}: {@code tryAcquire()} + {@code release()}, no handle.
 *   <li>{@code budgetedAcquire}: {@code acquire().close()}, the {@link BudgetedSemaphore.Permit}
 *       handle included (one allocation, one CAS on close).
 *   <li>{@code semaphoreBatch} vs {@code budgetedWithinBudgetBatch}: {@value #BATCH} pairs per
 *       invocation, the budgeted one {@code acquireWithinBudget().close()} inside one {@code
 *       ScopedValue.where(CURRENT, budget)} per batch (a server binds it once per request).
 * </ul>
 *
 * <p>Run: {@code ./spillway jmh BudgetedSemaphoreBenchmark -prof gc}
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
public class BudgetedSemaphoreBenchmark {

  static final int BATCH = 1_000;

  /** One semaphore of each kind per thread: never contended. */
  @State(Scope.Thread)
  public static class Uncontended {
    final Semaphore plain = new Semaphore(10);
    final BudgetedSemaphore budgeted = new BudgetedSemaphore(10);
    final RequestBudget budget = RequestBudget.of(1_000_000_000L);
    final Runnable budgetedBatch = () -> {
      for (int i = 0; i < BATCH; i++) {
        budgeted.acquireWithinBudget().close();
      }
    };
  }

  @Benchmark
  public void semaphore(Uncontended s) {
    s.plain.acquireUninterruptibly();
    s.plain.release();
  }

  @Benchmark
  public boolean budgetedTryAcquire(Uncontended s) {
    boolean got = s.budgeted.tryAcquire();
    s.budgeted.release();
    return got;
  }

  @Benchmark
  public void budgetedAcquire(Uncontended s) {
    s.budgeted.acquire().close();
  }

  @Benchmark
  @OperationsPerInvocation(BATCH)
  public void semaphoreBatch(Uncontended s) {
    for (int i = 0; i < BATCH; i++) {
      s.plain.acquireUninterruptibly();
      s.plain.release();
    }
  }

  @Benchmark
  @OperationsPerInvocation(BATCH)
  public void budgetedWithinBudgetBatch(Uncontended s) {
    ScopedValue.where(RequestBudget.CURRENT, s.budget).run(s.budgetedBatch);
  }
}
