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
  public final Histogram latency = new Histogram(3);

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
    latency.add(other.latency);
  }

  double percentileMicros(double percentile) {
    return latency.getTotalCount() == 0 ? 0 : latency.getValueAtPercentile(percentile) / 1000.0;
  }

  double dropRate() {
    return received == 0 ? 0 : (double) dropped / received;
  }

  double meanRejectDelayMicros() {
    return rejectsReceived == 0 ? 0 : rejectDelaySumNanos / 1000.0 / rejectsReceived;
  }
}
