package io.spillway.transport;

import io.netty.channel.EventLoop;
import io.spillway.api.ExecutorBacklogProbe;
import io.spillway.api.QueueDelaySignal;

/**
 * The event loop's backlog as a queueing-delay stage (Breakwater §3.1: "packets are queued while
 * they await processing to create a request"): an {@link ExecutorBacklogProbe} on one loop, fed by
 * the frames it decodes.
 *
 * <p>Netty does not timestamp bytes waiting in sockets, so the first frame a loop decodes in an
 * iteration stamps the time (the clock reading the request needs anyway) and submits the probe;
 * Netty runs submitted tasks after the iteration's I/O, so while the probe is pending, {@code now −
 * stamp} is how long the current batch of reads has held the loop, i.e. how long the frames at its
 * end waited.
 *
 * <p>Thread-safe: {@link #onDecode} runs on the probe's loop; the signal is read from any thread.
 */
final class EventLoopDelayProbe implements QueueDelaySignal {

  private final ExecutorBacklogProbe probe;

  EventLoopDelayProbe(EventLoop loop) {
    this.probe = new ExecutorBacklogProbe(loop);
  }

  /** Called on the loop when it decodes a frame, with the time already read for that frame. */
  void onDecode(long nowNanos) {
    probe.arrived(nowNanos);
  }

  @Override
  public long queueingDelayNanos(long nowNanos) {
    return probe.queueingDelayNanos(nowNanos);
  }
}
