package io.spillway.api;

import java.util.List;
import java.util.Objects;

/**
 * The overload signal Breakwater uses (breakwater-osdi20 §3.1): how long the oldest item in a
 * queue has waited, {@code now - oldestEnqueueTime}, or zero when the queue is empty. A server
 * with several queueing stages (event-loop backlog, dispatch queue, carrier queue) sums them with
 * {@link #sum}, so the delay a request accumulates as it moves from stage to stage is counted
 * once per stage.
 *
 * <p>Implementations are read from many threads and must be thread-safe and cheap: no locks, no
 * allocation. Under concurrent enqueue/dequeue a reading may be momentarily stale; it is exact
 * whenever the queue is quiescent.
 */
@FunctionalInterface
public interface QueueDelaySignal {

  /** A signal that never reports delay. */
  QueueDelaySignal NONE = now -> 0L;

  /**
   * Returns the queueing delay in nanoseconds at {@code nowNanos}, never negative.
   *
   * @param nowNanos a reading of the same {@link Ticker} the queue stamps its items with
   */
  long queueingDelayNanos(long nowNanos);

  /** The sum of the stages' delays, read at the same instant. */
  static QueueDelaySignal sum(QueueDelaySignal... stages) {
    List<QueueDelaySignal> copy = List.of(stages);
    copy.forEach(s -> Objects.requireNonNull(s, "stage"));
    QueueDelaySignal[] array = copy.toArray(QueueDelaySignal[]::new);
    if (array.length == 1) {
      return array[0];
    }
    return now -> {
      long total = 0;
      for (QueueDelaySignal stage : array) {
        total += stage.queueingDelayNanos(now);
      }
      return total;
    };
  }
}
