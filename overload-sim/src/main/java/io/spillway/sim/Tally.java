package io.spillway.sim;

import org.HdrHistogram.Histogram;

/**
 * Counters and a latency histogram for one stretch of simulated time (the steady measurement, or
 * one time-series window). Latencies are recorded in nanoseconds in an HdrHistogram with three
 * significant digits; percentiles are read from it, never averaged.
 */
final class Tally {
  long offered;
  long sent;
  long received;
  long dropped;
  long completed;
  long good;
  long expired;
  long rejectsReceived;
  long rejectDelaySumNanos;
  long messagesIn;
  long messagesOut;
  long creditMessages;
  long demandMessages;
  final Histogram latency = new Histogram(3);

  void add(Tally other) {
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
