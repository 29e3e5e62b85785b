package io.spillway.api.testing;

import io.spillway.api.Cancellable;
import io.spillway.api.Scheduler;
import io.spillway.api.Ticker;
import java.util.PriorityQueue;

/**
 * A fake clock that is both the {@link Ticker} and the {@link Scheduler} of a test: time moves
 * only when the test advances it, and tasks run, in time order (ties in scheduling order), on the
 * advancing thread. Start it near {@link Long#MAX_VALUE} to check that code survives wrap-around.
 *
 * <p>Its readings wrap, as {@link Ticker} allows; the time it has advanced ({@link #elapsed()}) and
 * every task's due time do not: they saturate at {@link Long#MAX_VALUE} nanoseconds (292 years),
 * so a task scheduled {@code Long.MAX_VALUE} ahead (as "never", in practice) is not due until
 * then, and advancing by more than is left moves time to that end, never back.
 *
 * <p>Not thread-safe: drive it from the test thread.
 */
public final class VirtualClock implements Ticker, Scheduler {

  private final PriorityQueue<Task> tasks = new PriorityQueue<>();
  private final long origin;
  private long elapsed;
  private long sequence;

  /** A clock reading {@code origin} now. */
  public VirtualClock(long origin) {
    this.origin = origin;
  }

  /** A clock reading 0 now. */
  public VirtualClock() {
    this(0);
  }

  @Override
  public long read() {
    return origin + elapsed;
  }

  /** Nanoseconds advanced since creation (never wraps: saturates, see the class comment). */
  public long elapsed() {
    return elapsed;
  }

  @Override
  public Cancellable schedule(Runnable task, long delayNanos) {
    if (delayNanos < 0) {
      throw new IllegalArgumentException("negative delay: " + delayNanos);
    }
    Task t = new Task(later(elapsed, delayNanos), sequence++, task);
    tasks.add(t);
    return () -> t.cancelled = true;
  }

  /** Advances time by {@code nanos}, running every task that falls due, in order. */
  public void advance(long nanos) {
    if (nanos < 0) {
      throw new IllegalArgumentException("cannot go back in time: " + nanos);
    }
    long target = later(elapsed, nanos);
    while (!tasks.isEmpty() && tasks.peek().due <= target) {
      Task t = tasks.poll();
      elapsed = t.due;
      if (!t.cancelled) {
        t.task.run();
      }
    }
    elapsed = target;
  }

  /** {@code elapsed + nanos}, both non-negative, saturated at {@link Long#MAX_VALUE}. */
  private static long later(long elapsed, long nanos) {
    long sum = elapsed + nanos;
    return sum < 0 ? Long.MAX_VALUE : sum;
  }

  /** Tasks waiting, cancelled ones included. */
  public int pendingTasks() {
    return tasks.size();
  }

  private static final class Task implements Comparable<Task> {
    final long due;
    final long seq;
    final Runnable task;
    boolean cancelled;

    Task(long due, long seq, Runnable task) {
      this.due = due;
      this.seq = seq;
      this.task = task;
    }

    @Override
    public int compareTo(Task o) {
      int c = Long.compare(due, o.due);
      return c != 0 ? c : Long.compare(seq, o.seq);
    }
  }
}
