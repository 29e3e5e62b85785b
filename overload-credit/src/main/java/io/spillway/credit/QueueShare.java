package io.spillway.credit;

import io.spillway.api.ServiceTimeTracker;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The queue's share of the SLO: d_t and the AQM threshold that leave room for the handlers.
 *
 * <p>Breakwater sets d_t and the AQM threshold to 40 % and 80 % of the SLO (breakwater-osdi20
 * §5.1), which leaves a fifth of it for the handler and the network: right where a handler
 * computes for microseconds, as in the paper, but not where it blocks for a good part of the SLO on
 * a downstream call. A handler that holds its request for 30 ms under a 50 ms SLO would let 40 ms
 * of queueing through, and every request admitted at overload would miss its SLO. So where the SLO
 * is known and hosts report when handlers start ({@link io.spillway.api.ServerPermit#started}),
 * the queue gets what the handlers leave: the AQM threshold is the SLO less the handlers' residence
 * (start to completion), never above the configured threshold nor below an eighth of it, and d_t
 * scales with it. The lower bound keeps a service whose handlers alone exceed a too-short SLO
 * serving what finds no queue. Measured in the simulator (scenarios/blocking-handlers.conf,
 * docs/results/grpc.md).
 *
 * <p>Which residence depends on what else bounds a request ({@link #typical}, {@link #tail}).
 * Requests of Spillway-aware clients carry a queueing budget their client derived from the p99 of
 * its answers (the handlers' tail included), and the server aborts them once it is spent: for
 * them the gate steers to the <em>median</em> residence, every request's typical share, and leaves
 * the tail to the budgets and to Breakwater's fifth. A p99 there shrinks the queue for service-time
 * tails that the fifth already covers: on docs/results/robustness.md's matrix it cost goodput in
 * the exponential 1 ms cells, whose p99 was already within the SLO, where the median leaves all
 * 150 cells as they were. Plain clients' requests carry no budget, so the AQM threshold
 * is the only bound on them and takes the <em>p99</em>, as protego-nsdi23 §3.2 subtracts the p99
 * service time from a request's budget; it also holds the waits the signal may not see, such as a
 * virtual thread's wait for a carrier after it blocked where the carriers are not measured. A
 * handler that blocks on a downstream call takes about the same time every call, so for it the
 * two are close.
 *
 * <p>Aware requests also wait in their client's queue before they are sent, for at least a tenth
 * of the SLO when the p99 of their answers leaves less ({@link #CLIENT_SHARE_DIVISOR}), so their
 * AQM threshold leaves that tenth as well: where handlers hold a request for most of the SLO, a
 * threshold of the SLO less the residence lets the server's queue and the handlers' tail take the
 * whole of it, the client's timeout sits at its floor, and the p99 passes the SLO by up to the
 * tenth (docs/results/grpc.md, "Handlers that block"). Where handlers are short, the configured
 * threshold, 0.8 of the SLO, already leaves it.
 *
 * <p>One instance is shared by the gates of one server that steer by the same queue (the default
 * scheme's credit half and plain-client half); both feed it. Thread-safe: samples are recorded from
 * any thread, the targets are recomputed by the gates' control loops and read on admission.
 */
final class QueueShare {

  private final long sloNanos;
  private final long configuredTargetNanos;
  private final long configuredDropNanos;
  /**
   * The median residence, estimated as ServiceTimeTracker estimates its p99 (Robbins–Monro). Every
   * completion writes it with a release store, as the tracker writes its estimate.
   */
  private volatile long median;
  private static final VarHandle MEDIAN;

  static {
    try {
      MEDIAN = MethodHandles.lookup().findVarHandle(QueueShare.class, "median", long.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }
  /**
   * The p99 residence, which a stall of every running handler raises to its length at once: the
   * tail threshold is the only bound on plain requests, and a stall that recurs is left room for
   * here instead of passing into their tail (ServiceTimeTracker#raisedByStalls).
   */
  private final ServiceTimeTracker p99 = ServiceTimeTracker.raisedByStalls();
  private final Targets typical;
  private final Targets tail;

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
    this.typical = new Targets(sloNanos / CLIENT_SHARE_DIVISOR); // from the configured values
    this.tail = new Targets(0);
  }

  /** The targets for requests that carry a budget: the median residence leaves them room. */
  Targets typical() {
    return typical;
  }

  /** The targets for requests that carry none: the p99 residence leaves them room. */
  Targets tail() {
    return tail;
  }

  /** The median residence measured so far; 0 before any, or without an SLO. */
  long typicalResidenceNanos() {
    return median;
  }

  /** A handler held its request {@code residenceNanos}, from its start to its completion now. */
  void record(long residenceNanos, long nowNanos) {
    if (sloNanos == 0 || residenceNanos < 0) {
      return; // without an SLO the targets never move: nothing to estimate for
    }
    p99.record(residenceNanos, nowNanos);
    long e = median;
    if (e == 0) {
      MEDIAN.setRelease(this, Math.max(residenceNanos, 1));
      return;
    }
    long step = Math.max(e >> 5, 500); // half of ServiceTimeTracker's step, each way
    MEDIAN.setRelease(this, residenceNanos > e ? e + step : Math.max(1, e - step));
  }

  /** Recomputes both targets from the residence measured so far (class comment). */
  void retarget(long nowNanos) {
    if (sloNanos == 0) {
      return;
    }
    typical.follow(median);
    tail.follow(p99.p99Nanos(nowNanos));
  }

  /**
   * The SLO's share left to a Spillway-aware client's own queue, one part in this many: the least
   * its queue timeout may be ({@link BreakwaterClientGate#queueTimeoutNanos}). Its requests leave
   * it that room: the AQM threshold is the SLO less the median residence and less this share.
   */
  static final int CLIENT_SHARE_DIVISOR = 10;

  /** d_t and the AQM threshold for one kind of request. Thread-safe. */
  final class Targets {
    private volatile long targetDelayNanos = configuredTargetNanos;
    private volatile long dropThresholdNanos = configuredDropNanos;
    /** What the requests need of the SLO beyond the server's queue and its handlers. */
    private final long reserveNanos;

    private Targets(long reserveNanos) {
      this.reserveNanos = reserveNanos;
    }

    private void follow(long residenceNanos) {
      if (residenceNanos == 0) {
        return; // no handler has said when it started
      }
      long drop = Math.max(configuredDropNanos / 8,
          Math.min(configuredDropNanos, sloNanos - residenceNanos - reserveNanos));
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
}
