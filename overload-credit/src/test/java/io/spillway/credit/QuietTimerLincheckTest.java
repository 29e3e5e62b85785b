package io.spillway.credit;

import java.util.concurrent.atomic.AtomicReference;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.StressOptions;
import org.jetbrains.lincheck.datastructures.Validate;
import org.junit.jupiter.api.Test;

/**
 * Checks that {@link QuietTimer} loses no wake-up: a caller publishes work and wakes the loop while
 * the loop's run, which found no work, turns it quiet. Whatever the interleaving, published work
 * leaves the loop at its period, never asleep for a quiet period (the class comment's two-sided
 * check: each side writes a volatile, then reads the other's).
 *
 * <p>Stress mode, on real threads, as {@link CreditLedgerLincheckTest}.
 *
 * <p>Run: {@code ./mvnw -B -pl overload-credit test -Dtest=QuietTimerLincheckTest}.
 */
class QuietTimerLincheckTest {

  public static class WakeDuringRun {
    private volatile boolean published;
    /** The run the loop scheduled at its start; fired by an operation, not by time. */
    private final AtomicReference<Runnable> scheduled = new AtomicReference<>();
    private final QuietTimer timer = new QuietTimer((task, delay) -> {
      scheduled.compareAndSet(null, task);
      return () -> { };
    }, () -> 0, 1_000_000, 100_000_000, () -> false, () -> published);

    public WakeDuringRun() {
      timer.start();
    }

    @Operation
    public void publishAndWake() {
      published = true;
      timer.wake();
    }

    @Operation
    public void run() {
      scheduled.get().run(); // the run finds nothing: the work was not there when it looked
    }

    @Validate
    public void publishedWorkKeepsTheLoopAwake() {
      if (published && timer.isQuiet()) {
        throw new AssertionError("work was published and the loop went to sleep on it");
      }
    }
  }

  @Test
  void aWakeUpDuringARunIsNeverLost() {
    new StressOptions()
        .iterations(20)
        .invocationsPerIteration(1_000)
        .threads(2)
        .actorsPerThread(1)
        .actorsBefore(0)
        .actorsAfter(0)
        .check(WakeDuringRun.class);
  }
}
