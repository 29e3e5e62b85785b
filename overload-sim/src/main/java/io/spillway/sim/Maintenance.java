package io.spillway.sim;

import java.util.SplittableRandom;

/**
 * A background holder of the shared locks (scenario keys {@code maintenance_*}): one maintenance
 * thread that, every {@code periodNanos} from {@code startNanos} on, takes the next shared lock
 * round robin (lock 0 first, so each lock every {@code locks} periods) with the plain acquire and
 * holds it for a drawn time. Its runs never overlap: one due while the previous still waits or
 * holds starts as soon as that one ends, as {@code ScheduledExecutorService.scheduleAtFixedRate}
 * runs a late task (examples-lucene's {@code LuceneServer} schedules its update batches so).
 *
 * <p>Hold times: constant ({@code sigma} 0), or lognormal with the given mean and logarithm's
 * standard deviation {@code sigma}, fitted by {@link #lognormalSigma} to a measured mean and p99
 * (a refresh's hold is a few milliseconds with a tail several times longer when segments are
 * flushed and merged; a lognormal is the two-parameter shape that matches both statistics).
 *
 * @param locks the shared locks it takes in turn
 * @param periodNanos time between two runs' due times
 * @param startNanos the first run's due time
 * @param meanHoldNanos the mean hold
 * @param sigma the lognormal's σ; 0 for a constant hold
 */
record Maintenance(int locks, long periodNanos, long startNanos, long meanHoldNanos, double sigma) {

  /** The standard normal's 99th percentile. */
  static final double Z99 = 2.3263478740408408;

  Maintenance {
    if (locks < 1 || periodNanos <= 0 || startNanos < 0 || meanHoldNanos <= 0 || !(sigma >= 0)) {
      throw new IllegalArgumentException("bad maintenance: locks " + locks + ", period "
          + periodNanos + " ns, start " + startNanos + " ns, hold " + meanHoldNanos + " ns, sigma " + sigma);
    }
  }

  /**
   * The σ of the lognormal with mean {@code mean} and 99th percentile {@code p99}: the smaller root
   * of {@code ln(p99 / mean) = σ·z₀.₉₉ − σ²/2} (the larger puts most of the mass near zero and its
   * mean in a far tail). There is one only for {@code 1 < p99 / mean ≤ exp(z₀.₉₉² / 2)} (14.96).
   *
   * @throws IllegalArgumentException if no lognormal has that mean and p99
   */
  static double lognormalSigma(double mean, double p99) {
    double log = Math.log(p99 / mean);
    double disc = Z99 * Z99 - 2 * log;
    if (!(log > 0) || disc < 0) {
      throw new IllegalArgumentException("no lognormal has mean " + mean + " and p99 " + p99
          + ": the p99 must be above the mean and at most " + Math.exp(Z99 * Z99 / 2) + " times it");
    }
    return Z99 - Math.sqrt(disc);
  }

  /** The hold's 99th percentile: the mean for a constant hold. */
  long p99Nanos() {
    return Math.round(meanHoldNanos * Math.exp(sigma * Z99 - sigma * sigma / 2));
  }

  /** Draws one hold in nanoseconds, at least 1: {@code exp(μ + σZ)} with {@code μ = ln m − σ²/2}. */
  long sampleHold(SplittableRandom random) {
    if (sigma == 0) {
      return meanHoldNanos;
    }
    return Math.max(1, Math.round(meanHoldNanos * Math.exp(sigma * random.nextGaussian() - sigma * sigma / 2)));
  }
}
