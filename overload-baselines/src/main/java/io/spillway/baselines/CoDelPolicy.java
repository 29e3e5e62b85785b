package io.spillway.baselines;

/**
 * CoDel's drop decision (Nichols and Jacobson, "Controlling Queue Delay", ACM Queue 2012; RFC 8289
 * §4 and §5), applied to RPC requests at admission rather than to packets at dequeue, as
 * breakwater-osdi20 §2.2 uses it: "CoDel maintains the queuing delay within a specific target
 * value, dropping requests if the queuing delay exceeds the target".
 *
 * <pre>
 * [1] The queue is "above target" at t when its queueing delay d(t) ≥ target.
 * [2] ok_to_drop once the queue has stayed above target for a whole interval
 *     (first_above_time = t + interval when it first goes above; reset when it goes below).
 * [3] Entering the dropping state drops the request and sets drop_next = control_law(t, count),
 *     where count restarts at 1, or at the drops of the last episode beyond its start if that
 *     episode ended less than 16 intervals ago (RFC 8289 §5.5, "count - lastcount").
 * [4] While dropping: leave the state as soon as not ok_to_drop; otherwise drop the first request
 *     that arrives at or after drop_next, count += 1, drop_next = control_law(drop_next, count).
 * [5] control_law(t, count) = t + interval / √count.
 * </pre>
 *
 * <p>Spillway decides at admission (the "drop as early as possible" principle, Breakwater §3.2.3),
 * so d(t) is the server's queueing-delay signal, the oldest waiting item's age summed over its
 * stages, read when the request's header is decoded, and a request is one "dequeue". Between two
 * arrivals CoDel's dequeue loop would drop at most the packets it dequeues; here at most the
 * request at hand is dropped, so a burst of arrivals after a quiet spell is paced by the control
 * law instead of being dropped wholesale.
 *
 * <p>Times are ticker readings and are only compared by difference, so they may wrap.
 *
 * <p>Not thread-safe: the gate serialises calls.
 */
final class CoDelPolicy {

  private final long targetNanos;
  private final long intervalNanos;

  private boolean above;
  private long firstAboveTime;
  private boolean dropping;
  private long dropNext;
  private int count;
  private int lastCount;
  private boolean droppedBefore;

  CoDelPolicy(long targetNanos, long intervalNanos) {
    if (targetNanos <= 0 || intervalNanos <= 0) {
      throw new IllegalArgumentException("target and interval must be positive: " + targetNanos
          + ", " + intervalNanos);
    }
    this.targetNanos = targetNanos;
    this.intervalNanos = intervalNanos;
  }

  /**
   * Decides on one request arriving at {@code nowNanos} while the queueing delay is {@code
   * delayNanos}: {@code true} to drop it.
   */
  boolean shouldDrop(long delayNanos, long nowNanos) {
    boolean okToDrop = okToDrop(delayNanos, nowNanos);
    if (dropping) {
      if (!okToDrop) {
        dropping = false;                                        // [4] leave
        return false;
      }
      if (nowNanos - dropNext >= 0) {
        count++;                                                  // [4] drop on schedule
        dropNext = controlLaw(dropNext, count);
        return true;
      }
      return false;
    }
    if (!okToDrop) {
      return false;
    }
    dropping = true;                                              // [3] enter
    int delta = count - lastCount;
    boolean recent = droppedBefore && nowNanos - dropNext < 16 * intervalNanos;
    count = recent && delta > 1 ? delta : 1;
    lastCount = count;
    droppedBefore = true;
    dropNext = controlLaw(nowNanos, count);
    return true;
  }

  /** [1], [2]. */
  private boolean okToDrop(long delayNanos, long nowNanos) {
    if (delayNanos < targetNanos) {
      above = false;
      return false;
    }
    if (!above) {
      above = true;
      firstAboveTime = nowNanos + intervalNanos;
      return false;
    }
    return nowNanos - firstAboveTime >= 0;
  }

  /** [5]: {@code t + interval/√count}. */
  static long controlLaw(long t, long intervalNanos, int count) {
    return t + (long) (intervalNanos / Math.sqrt(count));
  }

  private long controlLaw(long t, int n) {
    return controlLaw(t, intervalNanos, n);
  }

  /** Whether the policy is in CoDel's dropping state. */
  boolean isDropping() {
    return dropping;
  }

  /** Drops in the current (or last) dropping episode, CoDel's {@code count}. */
  int count() {
    return count;
  }

  /** When the next scheduled drop is due (meaningful while dropping). */
  long dropNext() {
    return dropNext;
  }
}
