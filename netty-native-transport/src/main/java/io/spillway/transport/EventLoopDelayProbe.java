package io.spillway.transport;

import io.netty.channel.EventLoop;
import io.spillway.api.QueueDelaySignal;
import java.util.concurrent.RejectedExecutionException;

/**
 * The event loop's backlog as a queueing-delay stage (Breakwater §3.1: "packets are queued while
 * they await processing to create a request").
 *
 * <p>Netty does not timestamp bytes waiting in sockets, and its timers are far too coarse to probe
 * at microsecond scale (a task scheduled 50 µs ahead on an idle loop ran ~1 ms late with epoll and
 * io_uring, ~12 ms with NIO, measured here). So the probe is driven by the work itself: the first
 * frame a loop decodes in an iteration stamps the time (the clock reading the request needs
 * anyway) and submits this probe with {@code execute}; Netty runs submitted tasks after the
 * iteration's I/O, so while the probe is pending, {@code now − stamp} is how long the current batch
 * of reads has held the loop, i.e. how long the frames at its end waited. An idle loop reads zero
 * and costs nothing; a busy one pays one task per iteration, not per request.
 *
 * <p>Thread-safe: {@link #onDecode} and {@link #run} run on the probe's loop; the signal is read
 * from any thread.
 */
final class EventLoopDelayProbe implements QueueDelaySignal, Runnable {

  private final EventLoop loop;
  private volatile long stamp;
  private volatile boolean pending;

  EventLoopDelayProbe(EventLoop loop) {
    this.loop = loop;
  }

  /** Called on the loop when it decodes a frame, with the time already read for that frame. */
  void onDecode(long nowNanos) {
    if (pending) {
      return;
    }
    stamp = nowNanos;
    pending = true;
    try {
      loop.execute(this);
    } catch (RejectedExecutionException shuttingDown) {
      pending = false;
    }
  }

  @Override
  public void run() {
    pending = false;
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
