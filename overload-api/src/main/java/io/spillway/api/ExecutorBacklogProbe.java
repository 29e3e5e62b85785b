package io.spillway.api;

import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;

/**
 * How long a single-threaded task executor (an event loop) has been held, as a queueing-delay
 * stage (breakwater-osdi20 §3.1: "packets are queued while they await processing to create a
 * request"), for loops that do not timestamp what waits in them.
 *
 * <p>Driven by the work, never by a timer: when the loop starts on a request while no probe is
 * pending, the caller stamps the time it already read ({@link #arrived}) and the probe submits
 * itself to the loop. A loop runs submitted tasks after the I/O of its current iteration and after
 * the tasks queued before, so while the probe waits, {@code now − stamp} is how long the requests
 * at the end of the batch have waited. An idle loop reads zero and costs nothing; a busy one pays
 * one task per iteration, not per request. Netty's timers are too coarse to probe at microsecond
 * scale (a task scheduled 50 µs ahead on an idle loop ran about 1 ms late with epoll and io_uring,
 * 12 ms with NIO, measured on this project's machines), which is why it is not timer-driven.
 *
 * <p>Thread-safety: {@link #pending} and {@link #arrived} are called on the probed loop only (the
 * probe's own task resets it there); {@link #queueingDelayNanos} may be read from any thread.
 */
public final class ExecutorBacklogProbe implements QueueDelaySignal {

  private final Executor loop;
  private final Runnable reset = () -> this.pending = false;
  private volatile long stamp;
  private volatile boolean pending;

  /** @param loop the single-threaded executor to probe; its callers call {@link #arrived} */
  public ExecutorBacklogProbe(Executor loop) {
    this.loop = Objects.requireNonNull(loop, "loop");
  }

  /**
   * Whether a probe is already waiting in the loop: then {@link #arrived} would do nothing, and a
   * caller that has not read the clock yet need not.
   */
  public boolean pending() {
    return pending;
  }

  /**
   * Called on the loop as it starts on a request, with a reading of the signal's ticker: stamps it
   * and submits the probe unless one is pending. A loop that is shutting down is not probed.
   */
  public void arrived(long nowNanos) {
    if (pending) {
      return;
    }
    stamp = nowNanos;
    pending = true;
    try {
      loop.execute(reset);
    } catch (RejectedExecutionException shuttingDown) {
      pending = false;
    }
  }

  @Override
  public long queueingDelayNanos(long nowNanos) {
    if (!pending) {
      return 0;
    }
    long waited = nowNanos - stamp;
    return waited > 0 ? waited : 0;
  }
}
