package io.spillway.credit;

/**
 * The queue's share of the SLO: d_t and the AQM threshold that leave room for the handlers.
 *
 * <p>Breakwater sets d_t and the AQM threshold to 40 % and 80 % of the SLO (breakwater-osdi20
 * §5.1), which leaves a fifth of it for the handler and the network: right where a handler
 * computes for microseconds, as in the paper, but not where it blocks for a good part of the SLO on
 * a downstream call. A handler that holds its request for 30 ms under a 50 ms SLO would let 40 ms
 * of queueing through, and every request admitted at overload would miss its SLO. So where the SLO
 * is known and hosts report when handlers start ({@link io.spillway.api.ServerPermit#started}),
 * the queue gets what the handlers leave: the AQM threshold is SLO − the handlers' median
 * residence (start to completion), never above the configured threshold nor below an eighth of it,
 * and d_t scales with it. The lower bound keeps a service whose handlers alone exceed a too-short
 * SLO serving what finds no queue. Measured in the simulator (scenarios/blocking-handlers.conf,
 * docs/results/grpc.md).
 *
 * <p>The median, not the p99 that protego-nsdi23 §3.2 subtracts from a request's budget: every
 * request adds the handler's typical time to its queueing, while the tails of the two rarely meet,
 * and Breakwater's split already leaves a fifth of the SLO for the tails. A p99 there shrinks the
 * queue for service-time tails that fifth covers: on docs/results/robustness.md's matrix it cost
 * 4–5 points of goodput in the exponential 1 ms cells, whose p99 was already within the SLO, where
 * the median leaves all 150 cells as they were. A handler that blocks on a downstream call takes
 * about the same time every call, so its median is most of its p99.
 *
 * <p>One instance is shared by the gates of one server that steer by the same queue (the default
 * scheme's credit half and plain-client half). Thread-safe: samples are recorded from any thread,
 * the targets are recomputed by the gates' control loops and read on admission.
 */
final class QueueShare {

  private final long sloNanos;
  private final long configuredTargetNanos;
  private final long configuredDropNanos;
  /** The median residence, estimated as ServiceTimeTracker estimates its p99 (Robbins–Monro). */
  private volatile long residence;
  private volatile long targetDelayNanos;
  private volatile long dropThresholdNanos;

  /**
   * @param sloNanos the SLO the queue and the handlers share; 0 keeps the configured targets
   * @param targetDelayNanos the configured d_t
   * @param dropThresholdNanos the configured AQM threshold
   */
  QueueShare(long sloNanos, long targetDelayNanos, long dropThresholdNanos) {
    if (sloNanos < 0 || targetDelayNanos <= 0 || dropThresholdNanos <= 0) {
      throw new IllegalArgumentException("the SLO must not be negative, the targets must be positive: "
          + sloNanos + ", " + targetDelayNanos + ", " + dropThresholdNanos);
    }
    this.sloNanos = sloNanos;
    this.configuredTargetNanos = targetDelayNanos;
    this.configuredDropNanos = dropThresholdNanos;
    this.targetDelayNanos = targetDelayNanos;
    this.dropThresholdNanos = dropThresholdNanos;
  }

  /** A handler held its request {@code residenceNanos}, from its start to its completion now. */
  void record(long residenceNanos, long nowNanos) {
    if (residenceNanos < 0) {
      return;
    }
    long e = residence;
    if (e == 0) {
      residence = Math.max(residenceNanos, 1);
      return;
    }
    long step = Math.max(e >> 5, 500); // half of ServiceTimeTracker's step, each way
    residence = residenceNanos > e ? e + step : Math.max(1, e - step);
  }

  /** Recomputes the targets from the residence measured so far (class comment). */
  void retarget(long nowNanos) {
    long median = residence;
    if (sloNanos == 0 || median == 0) {
      return; // no SLO given, or no handler has said when it started
    }
    long drop = Math.max(configuredDropNanos / 8, Math.min(configuredDropNanos, sloNanos - median));
    if (drop != dropThresholdNanos) {
      targetDelayNanos = Math.max(1, (long) ((double) configuredTargetNanos * drop / configuredDropNanos));
      dropThresholdNanos = drop;
    }
  }

  /** d_t now. */
  long targetDelayNanos() {
    return targetDelayNanos;
  }

  /** The AQM threshold now. */
  long dropThresholdNanos() {
    return dropThresholdNanos;
  }
}
