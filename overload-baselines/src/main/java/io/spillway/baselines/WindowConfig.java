package io.spillway.baselines;

/**
 * The window scheme's parameters (breakwater-osdi20 §2.2, "We optimized the parameters (i.e.
 * additive factor and multiplicative factor) to achieve the highest goodput").
 *
 * <p>Immutable and thread-safe.
 *
 * @param additiveIncrease {@code ai}: the window grows by this much per window of good responses
 * @param multiplicativeDecrease {@code md} in (0, 1): the window is multiplied by it on a late response
 * @param latencyThresholdNanos a response slower than this (from the request leaving the client)
 *     counts as late; §2.2 uses the SLO
 * @param maxWindow the largest window, at least 1
 * @param clientQueueTimeoutNanos how long a request may wait for a window slot before it expires
 */
public record WindowConfig(double additiveIncrease, double multiplicativeDecrease,
    long latencyThresholdNanos, int maxWindow, long clientQueueTimeoutNanos) {

  /** The largest window by default: Breakwater's per-session cap, so both bound a session alike. */
  public static final int DEFAULT_MAX_WINDOW = 64;

  public WindowConfig {
    if (!(additiveIncrease > 0)) {
      throw new IllegalArgumentException("window additive increase must be positive: " + additiveIncrease);
    }
    if (!(multiplicativeDecrease > 0 && multiplicativeDecrease < 1)) {
      throw new IllegalArgumentException("window multiplicative decrease must be in (0, 1): "
          + multiplicativeDecrease);
    }
    if (latencyThresholdNanos <= 0 || clientQueueTimeoutNanos <= 0) {
      throw new IllegalArgumentException("window latency threshold and client timeout must be positive: "
          + latencyThresholdNanos + ", " + clientQueueTimeoutNanos);
    }
    if (maxWindow < 1) {
      throw new IllegalArgumentException("window max must be at least 1: " + maxWindow);
    }
  }

  /**
   * Defaults for a workload with the given SLO: the SLO as the lateness threshold (§2.2), the client
   * queue timeout at SLO/2 as Breakwater's client, and ai/md as tuned in Spillway's simulator for
   * the §5.2 synthetic workload (scenarios/baselines-fig3.conf).
   */
  public static WindowConfig forSlo(long sloNanos) {
    if (sloNanos <= 0) {
      throw new IllegalArgumentException("SLO must be positive: " + sloNanos);
    }
    return new WindowConfig(1.0, 0.5, sloNanos, DEFAULT_MAX_WINDOW, sloNanos / 2);
  }

  public WindowConfig withAdditiveIncrease(double v) {
    return new WindowConfig(v, multiplicativeDecrease, latencyThresholdNanos, maxWindow, clientQueueTimeoutNanos);
  }

  public WindowConfig withMultiplicativeDecrease(double v) {
    return new WindowConfig(additiveIncrease, v, latencyThresholdNanos, maxWindow, clientQueueTimeoutNanos);
  }

  public WindowConfig withLatencyThreshold(long nanos) {
    return new WindowConfig(additiveIncrease, multiplicativeDecrease, nanos, maxWindow, clientQueueTimeoutNanos);
  }

  public WindowConfig withMaxWindow(int v) {
    return new WindowConfig(additiveIncrease, multiplicativeDecrease, latencyThresholdNanos, v, clientQueueTimeoutNanos);
  }

  public WindowConfig withClientQueueTimeout(long nanos) {
    return new WindowConfig(additiveIncrease, multiplicativeDecrease, latencyThresholdNanos, maxWindow, nanos);
  }

  @Override
  public String toString() {
    return "WindowConfig[ai=" + additiveIncrease + ", md=" + multiplicativeDecrease
        + ", threshold=" + latencyThresholdNanos / 1000.0 + "us, max=" + maxWindow
        + ", clientTimeout=" + clientQueueTimeoutNanos / 1000.0 + "us]";
  }
}
