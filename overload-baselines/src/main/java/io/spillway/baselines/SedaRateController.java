package io.spillway.baselines;

import java.util.Arrays;

/**
 * SEDA's response-time controller (Welsh and Culler, "Adaptive Overload Control for Busy Internet
 * Servers", USITS 2003, §4.2, Fig. 4), with the changes breakwater-osdi20 §5.1 made for µs-scale
 * RPCs: it tracks the 99th instead of the 90th percentile, its timeout is 1 ms instead of 1 s, and
 * adj_i and adj_d are tuned per workload. Breakwater runs it at each client, setting the client's
 * sending rate.
 *
 * <pre>
 * Each response adds its response time to a buffer. After nreq samples, or on the first response
 * at least `timeout` after the last update, the controller runs:
 *   [1] p    = the 99th percentile (nearest rank) of the samples since the last update
 *   [2] cur  ← α·cur + (1 − α)·p                       (EWMA filter, α = 0.7; cur starts at 0)
 *   [3] err  = (cur − target) / target
 *   [4] rate ← rate / adj_d                      if err &gt; err_d   (err_d = 0)
 *   [5] rate ← rate − (err − c_i)·adj_i          if err &lt; err_i   (err_i = −0.5, c_i = −0.1)
 *   [6] rate ← max(rate, rate_min)
 * and the buffer is cleared.
 * </pre>
 *
 * <p>[5] adds between 0.4·adj_i (at err = −0.5) and 0.9·adj_i (at err = −1) requests per second:
 * the further below target, the faster the rate grows. Between err_i and err_d the rate holds.
 *
 * <p>Times are ticker readings, compared only by difference. Not thread-safe: one per client
 * session, confined to its thread.
 */
final class SedaRateController {

  /** SEDA's EWMA weight on the old value, α. */
  static final double ALPHA = 0.7;
  /** SEDA's error that triggers a decrease, err_d. */
  static final double ERR_D = 0.0;
  /** SEDA's error that triggers an increase, err_i. */
  static final double ERR_I = -0.5;
  /** SEDA's weight on the additive increase, c_i. */
  static final double C_I = -0.1;

  private final long targetNanos;
  private final long timeoutNanos;
  private final double adjI;
  private final double adjD;
  private final double minRate;
  private final long[] samples;
  private int count;
  private double smoothedNanos;
  private double rate;
  private long lastUpdate;
  private boolean updatedBefore;

  /**
   * @param targetNanos the response time the 99th percentile is steered to
   * @param timeoutNanos the longest time between updates while responses arrive
   * @param nreq samples that trigger an update
   * @param adjI additive increase, requests per second
   * @param adjD multiplicative decrease, a divisor above 1
   * @param minRate the lowest rate, requests per second
   * @param initialRate the starting rate, requests per second
   */
  SedaRateController(long targetNanos, long timeoutNanos, int nreq, double adjI, double adjD,
      double minRate, double initialRate) {
    this.targetNanos = targetNanos;
    this.timeoutNanos = timeoutNanos;
    this.adjI = adjI;
    this.adjD = adjD;
    this.minRate = minRate;
    this.samples = new long[nreq];
    this.rate = Math.max(initialRate, minRate);
  }

  /**
   * Records one response time; runs the controller if nreq samples have accumulated or the timeout
   * has passed. Returns whether it ran.
   */
  boolean onResponse(long responseNanos, long nowNanos) {
    samples[count++] = responseNanos;
    if (count == samples.length || !updatedBefore || nowNanos - lastUpdate >= timeoutNanos) {
      update(nowNanos);
      return true;
    }
    return false;
  }

  private void update(long nowNanos) {
    long p = percentile99(samples, count);                            // [1]
    smoothedNanos = smooth(smoothedNanos, p);                         // [2]
    rate = nextRate(rate, smoothedNanos, targetNanos, adjI, adjD, minRate);
    count = 0;
    lastUpdate = nowNanos;
    updatedBefore = true;
  }

  /** [1]: the nearest-rank 99th percentile of the first {@code n} values (sorts them). */
  static long percentile99(long[] values, int n) {
    if (n <= 0) {
      throw new IllegalArgumentException("no samples");
    }
    Arrays.sort(values, 0, n);
    int rank = (int) Math.ceil(0.99 * n); // 1-based
    return values[rank - 1];
  }

  /** [2]. */
  static double smooth(double previous, double sample) {
    return ALPHA * previous + (1 - ALPHA) * sample;
  }

  /** [3]–[6]. */
  static double nextRate(double rate, double smoothedNanos, long targetNanos, double adjI,
      double adjD, double minRate) {
    double err = (smoothedNanos - targetNanos) / targetNanos;
    double next = rate;
    if (err > ERR_D) {
      next = rate / adjD;
    } else if (err < ERR_I) {
      next = rate - (err - C_I) * adjI;
    }
    return Math.max(next, minRate);
  }

  /** The current rate, requests per second. */
  double rate() {
    return rate;
  }

  /** The filtered 99th-percentile response time, cur. */
  double smoothedNanos() {
    return smoothedNanos;
  }
}
