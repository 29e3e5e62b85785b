package io.spillway.transport;

import io.netty.channel.EventLoop;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.Ticker;
import io.spillway.api.TimestampedQueue;
import java.util.concurrent.TimeUnit;

/**
 * The dispatcher threading model on the event loop itself ({@link Threading#LOOP_QUEUE}): admitted
 * requests wait in a timestamped queue and run on the loop in short slices, between which the loop
 * goes back to its sockets. Breakwater's structure (breakwater-osdi20 §3.1, §4: decode and AQM at
 * receive, a queue of requests whose oldest stamp is the signal, workers draining it) without a
 * thread hand-off per request, which on a server with one core cost ~2.7× its capacity here.
 *
 * <p>Because reads happen between slices, requests move from socket buffers into this queue
 * within one slice, and the queue's age ({@code now − oldest}) is their queueing delay, which the
 * server adds to its overload signal.
 *
 * <p>Confined to its loop, except {@link #queueingDelayNanos}, which any thread may read.
 */
final class LoopQueue implements QueueDelaySignal {

  private final EventLoop loop;
  private final Ticker ticker;
  private final long sliceNanos;
  private final TimestampedQueue<Task> queue = new TimestampedQueue<>(1024);
  private final Runnable drain = this::drain;
  private boolean drainScheduled;

  LoopQueue(EventLoop loop, Ticker ticker, long sliceNanos) {
    this.loop = loop;
    this.ticker = ticker;
    this.sliceNanos = sliceNanos;
    if (loop instanceof io.netty.util.concurrent.SingleThreadEventExecutor executor) {
      // A loop that shuts down cancels its scheduled tasks, the next slice among them; its shutdown
      // hooks run after that, and after its last read, so every request still queued ends here.
      executor.addShutdownHook(this::abandonAll);
    }
  }

  /** A queued request. */
  interface Task extends Runnable {
    /**
     * Runs the request; {@code nowNanos} is the loop's latest clock reading, taken just before, for
     * the request to use instead of reading the clock again.
     */
    void runAt(long nowNanos);

    /** Ends the request without running it: its loop is stopping, or the workers refused it. On the loop. */
    void abandon();
  }

  /** Queues a request admitted at {@code nowNanos}. On the loop. */
  void submit(Task request, long nowNanos) {
    queue.offer(request, nowNanos);
    if (!drainScheduled) {
      drainScheduled = true;
      // Scheduled, not executed: Netty takes scheduled tasks once per iteration, after I/O.
      loop.schedule(drain, 0, TimeUnit.NANOSECONDS);
    }
  }

  private void drain() {
    drainScheduled = false;
    long start = ticker.read();
    long now = start;
    Task next;
    while ((next = queue.poll()) != null) {
      next.runAt(now);
      now = ticker.read(); // one reading: the slice's end test and the next request's start
      if (now - start >= sliceNanos && !queue.isEmpty()) {
        break;
      }
    }
    if (!queue.isEmpty()) {
      drainScheduled = true;
      loop.schedule(drain, 0, TimeUnit.NANOSECONDS); // let the loop read its sockets first
    }
  }

  /**
   * Hands every queued request to {@code sink}, oldest first, each with its enqueue stamp, leaving
   * the queue empty (a switch to the dispatch model moves them to the workers in order). On the loop.
   */
  void drainTo(java.util.function.ObjLongConsumer<? super Task> sink) {
    while (!queue.isEmpty()) {
      long stamp = queue.oldestEnqueueNanos();
      sink.accept(queue.poll(), stamp);
    }
  }

  /** Ends every queued request unrun (docs/design.md: every admitted request ends exactly once). On the loop. */
  private void abandonAll() {
    Task next;
    while ((next = queue.poll()) != null) {
      next.abandon();
    }
  }

  @Override
  public long queueingDelayNanos(long nowNanos) {
    return queue.queueingDelayNanos(nowNanos);
  }

  int queued() {
    return queue.size();
  }
}
