package io.spillway.sim;

import org.HdrHistogram.Histogram;

/**
 * Counters and a latency histogram for one stretch of simulated time (the steady measurement, or
 * one time-series window). Latencies are recorded in nanoseconds in an HdrHistogram with three
 * significant digits; percentiles are read from it, never averaged. Shared by the simulator and
 * the real-socket harness. Not thread-safe: one writer.
 */
public final class Tally {
  public long offered;
  public long sent;
  public long received;
  public long dropped;
  public long completed;
  public long good;
  public long expired;
  public long rejectsReceived;
  public long rejectDelaySumNanos;
  public long messagesIn;
  public long messagesOut;
  public long creditMessages;
  public long demandMessages;
  /** Requests sent a second time, to a replica, after a fast reject. */
  public long retried;
  /** Rejects received that ended their request (not retried). */
  public long rejectedFinal;
  /** Answers their clients never read, their callers having given up ({@code lost_answers}). */
  public long unread;
  public final Histogram latency = new Histogram(3);
  /** Reject delays (from a request leaving its client to its reject arriving); made at the first. */
  private Histogram rejectDelay;

  /** Records a reject's delay, nanoseconds. */
  public void recordRejectDelay(long nanos) {
    if (rejectDelay == null) {
      rejectDelay = new Histogram(3);
    }
    rejectDelay.recordValue(Math.max(1, nanos));
  }

  public void add(Tally other) {
    offered += other.offered;
    sent += other.sent;
    received += other.received;
    dropped += other.dropped;
    completed += other.completed;
    good += other.good;
    expired += other.expired;
    rejectsReceived += other.rejectsReceived;
    rejectDelaySumNanos += other.rejectDelaySumNanos;
    messagesIn += other.messagesIn;
    messagesOut += other.messagesOut;
    creditMessages += other.creditMessages;
    demandMessages += other.demandMessages;
    retried += other.retried;
    rejectedFinal += other.rejectedFinal;
    unread += other.unread;
    latency.add(other.latency);
    if (other.rejectDelay != null) {
      if (rejectDelay == null) {
        rejectDelay = new Histogram(3);
      }
      rejectDelay.add(other.rejectDelay);
    }
  }

  double percentileMicros(double percentile) {
    return latency.getTotalCount() == 0 ? 0 : latency.getValueAtPercentile(percentile) / 1000.0;
  }

  /** Server rejects ÷ requests the server received; NaN when it received none. */
  double dropRate() {
    return ratio(dropped, received);
  }

  /**
   * {@code part ÷ whole}, or NaN when {@code whole} is 0: a ratio over nothing has no value, and
   * 0 would read as a measured 0 % (a server that refused none of the requests it never saw).
   * results.json writes NaN as null, which the report shows as a dash.
   */
  public static double ratio(long part, long whole) {
    return whole == 0 ? Double.NaN : (double) part / whole;
  }

  double rejectDelayP99Micros() {
    return rejectDelay == null ? 0 : rejectDelay.getValueAtPercentile(99) / 1000.0;
  }

  double meanRejectDelayMicros() {
    return rejectsReceived == 0 ? 0 : rejectDelaySumNanos / 1000.0 / rejectsReceived;
  }
}
