package io.spillway.baselines;

/**
 * DAGOR's parameters as breakwater-osdi20 §5.1 scaled them down for µs-scale RPCs: the level is
 * updated every 1 ms (instead of 1 s) or every 2,000 requests, α = 5 %, β = 1 %, random priorities
 * 1–128, and DAGOR_q tuned per workload (70 µs for exponential 10 µs service, whose SLO is 200 µs).
 *
 * <p>Immutable and thread-safe.
 *
 * @param queueingThresholdNanos DAGOR_q: a window whose average queueing time reaches it is overloaded
 * @param periodNanos the longest window
 * @param windowRequests the most requests in a window
 * @param alpha the fraction of admitted requests shed per overloaded window
 * @param beta the fraction of admitted requests added per window without overload
 * @param maxPriority priorities run from 1 (most important) to this
 */
public record DagorConfig(long queueingThresholdNanos, long periodNanos, int windowRequests,
    double alpha, double beta, int maxPriority) {

  /** DAGOR's priority range with one business priority (SoCC 2018; breakwater-osdi20 §5.1). */
  public static final int DEFAULT_MAX_PRIORITY = 128;

  public DagorConfig {
    if (queueingThresholdNanos <= 0 || periodNanos <= 0) {
      throw new IllegalArgumentException("DAGOR threshold and period must be positive: "
          + queueingThresholdNanos + ", " + periodNanos);
    }
    if (windowRequests < 1) {
      throw new IllegalArgumentException("DAGOR window must hold at least one request: " + windowRequests);
    }
    if (!(alpha > 0 && alpha < 1) || !(beta > 0)) {
      throw new IllegalArgumentException("DAGOR alpha must be in (0, 1) and beta positive: " + alpha + ", " + beta);
    }
    if (maxPriority < 1) {
      throw new IllegalArgumentException("DAGOR max priority must be at least 1: " + maxPriority);
    }
  }

  /**
   * The paper's tuning for a workload with the given SLO: DAGOR_q = 35 % of the SLO (70 µs for the
   * 200 µs SLO of §5.1), 1 ms or 2,000 requests, α = 5 %, β = 1 %, priorities 1–128.
   */
  public static DagorConfig forSlo(long sloNanos) {
    if (sloNanos <= 0) {
      throw new IllegalArgumentException("SLO must be positive: " + sloNanos);
    }
    return new DagorConfig(sloNanos * 7 / 20, 1_000_000L, 2_000, 0.05, 0.01, DEFAULT_MAX_PRIORITY);
  }

  public DagorConfig withQueueingThreshold(long nanos) {
    return new DagorConfig(nanos, periodNanos, windowRequests, alpha, beta, maxPriority);
  }

  public DagorConfig withPeriod(long nanos) {
    return new DagorConfig(queueingThresholdNanos, nanos, windowRequests, alpha, beta, maxPriority);
  }

  public DagorConfig withWindowRequests(int v) {
    return new DagorConfig(queueingThresholdNanos, periodNanos, v, alpha, beta, maxPriority);
  }

  public DagorConfig withAlpha(double v) {
    return new DagorConfig(queueingThresholdNanos, periodNanos, windowRequests, v, beta, maxPriority);
  }

  public DagorConfig withBeta(double v) {
    return new DagorConfig(queueingThresholdNanos, periodNanos, windowRequests, alpha, v, maxPriority);
  }

  @Override
  public String toString() {
    return "DagorConfig[q=" + queueingThresholdNanos / 1000.0 + "us, period=" + periodNanos / 1000.0
        + "us, windowRequests=" + windowRequests + ", alpha=" + alpha + ", beta=" + beta
        + ", maxPriority=" + maxPriority + "]";
  }
}
