package io.spillway.api;

import java.util.Objects;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Runs a task after a delay. Controllers that tick (Breakwater updates its credit pool every RTT)
 * take a scheduler instead of starting threads, so the simulator and tests can drive them in
 * virtual time.
 *
 * <p>Implementations must be thread-safe. Tasks run on the scheduler's own thread(s), or, in the
 * simulator and in tests, on the thread that advances virtual time. Periodic work reschedules
 * itself; see {@link #every}.
 */
@FunctionalInterface
public interface Scheduler {

  /**
   * Runs {@code task} once, {@code delayNanos} from now (as read by the scheduler's clock).
   *
   * @throws IllegalArgumentException if {@code delayNanos} is negative
   */
  Cancellable schedule(Runnable task, long delayNanos);

  /**
   * Runs {@code task} every {@code periodNanos}, first after one period, until the returned handle
   * is cancelled. A run that throws an exception does not stop the repetition: a control loop
   * that stopped on one exception (from a user's metrics callback, say) would freeze its scheme
   * for good, silently. The first exception of each repetition is logged at WARNING (logger
   * {@code io.spillway.api.Scheduler}), later ones at DEBUG. An {@link Error} still stops it.
   */
  default Cancellable every(long periodNanos, Runnable task) {
    if (periodNanos <= 0) {
      throw new IllegalArgumentException("period must be positive: " + periodNanos);
    }
    Objects.requireNonNull(task, "task");
    final class Repeating implements Runnable, Cancellable {
      private volatile boolean cancelled;
      private volatile Cancellable next;
      private boolean failedBefore; // runs are sequential: each schedules the next

      @Override
      public void run() {
        if (cancelled) {
          return;
        }
        try {
          task.run();
        } catch (RuntimeException e) {
          System.getLogger(Scheduler.class.getName()).log(failedBefore
              ? System.Logger.Level.DEBUG : System.Logger.Level.WARNING,
              "a periodic task failed; it keeps running every " + periodNanos + " ns", e);
          failedBefore = true;
        }
        if (!cancelled) {
          next = schedule(this, periodNanos);
        }
      }

      @Override
      public void cancel() {
        cancelled = true;
        Cancellable n = next;
        if (n != null) {
          n.cancel();
        }
      }
    }
    Repeating repeating = new Repeating();
    repeating.next = schedule(repeating, periodNanos);
    return repeating;
  }

  /**
   * Adapts a {@link ScheduledExecutorService}; its tasks run on the executor's threads. An
   * exception a task throws is logged at WARNING (logger {@code io.spillway.api.Scheduler}), not
   * dropped into a future nobody reads.
   */
  static Scheduler of(ScheduledExecutorService executor) {
    Objects.requireNonNull(executor, "executor");
    return (task, delayNanos) -> {
      if (delayNanos < 0) {
        throw new IllegalArgumentException("negative delay: " + delayNanos);
      }
      Runnable logged = () -> {
        try {
          task.run();
        } catch (RuntimeException | Error e) {
          System.getLogger(Scheduler.class.getName()).log(System.Logger.Level.WARNING,
              "a scheduled task failed", e);
          throw e;
        }
      };
      ScheduledFuture<?> future = executor.schedule(logged, delayNanos, TimeUnit.NANOSECONDS);
      return () -> future.cancel(false);
    };
  }
}
