package io.spillway.credit;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongConsumer;

/**
 * A gate's update that rides on admissions: it runs at most once an interval, on whichever thread
 * first finds the interval passed, and never on two threads at once. A CAS on the last update's
 * time claims the interval (one volatile read on every admission that finds it not passed); a
 * {@code tryLock} then keeps the claimant from waiting behind an update still running on another
 * thread: it skips, and the next interval's claimant runs it. A {@link RuntimeException} from the
 * update (a metrics callback) is logged ({@link FailureLog}) and does not reach the admission that
 * ran it, any more than it may stop a timer ({@code Scheduler#every}).
 *
 * <p>A timer that must run beside the admissions' updates takes {@link #lock()} and {@link #claim}s
 * the interval itself.
 *
 * <p>Thread-safe.
 */
final class DueUpdate {

  private final AtomicLong last;
  private final ReentrantLock lock = new ReentrantLock();
  private final LongConsumer update;
  private final FailureLog failures;

  /**
   * @param nowNanos when the first interval begins
   * @param update the update, given the time it runs at; runs under {@link #lock()}
   */
  DueUpdate(long nowNanos, LongConsumer update, FailureLog failures) {
    this.last = new AtomicLong(nowNanos);
    this.update = update;
    this.failures = failures;
  }

  /** Runs the update if {@code intervalNanos} have passed since the last and no thread runs one. */
  void runIfDue(long nowNanos, long intervalNanos) {
    if (claim(nowNanos, intervalNanos) && lock.tryLock()) {
      try {
        update.accept(nowNanos);
      } catch (RuntimeException e) {
        failures.log(e);
      } finally {
        lock.unlock();
      }
    }
  }

  /** Claims the interval if {@code intervalNanos} have passed since the last claim: true once. */
  boolean claim(long nowNanos, long intervalNanos) {
    long l = last.get();
    return nowNanos - l >= intervalNanos && last.compareAndSet(l, nowNanos);
  }

  /** Begins the first interval again at {@code nowNanos} (a gate's start). */
  void restart(long nowNanos) {
    last.set(nowNanos);
  }

  /** Held while an update runs: the state it writes is written only under it. */
  ReentrantLock lock() {
    return lock;
  }
}
