package io.spillway.peers;

import com.netflix.concurrency.limits.Limit;
import com.netflix.concurrency.limits.limit.Gradient2Limit;

/**
 * Parameters of concurrency-limits' {@code Gradient2Limit} (0.5.4). The limit tracks the ratio of
 * a long-term exponential average RTT to the latest RTT (the "gradient"), and sets {@code limit =
 * limit·gradient + queueSize}, smoothed.
 *
 * <p>{@link #defaults()} are the library builder's defaults. Immutable and thread-safe.
 *
 * @param initialLimit the limit before any sample (library default 20)
 * @param minLimit the limit never goes below this (library default 20)
 * @param maxConcurrency the limit never goes above this (library default 200)
 * @param queueSize headroom added to the gradient-scaled limit (library default 4)
 * @param smoothing weight of a new estimate in (0, 1] (library default 0.2)
 * @param rttTolerance how much slower than the long-term RTT is still fine, at least 1 (default 1.5)
 * @param longWindow samples in the long-term RTT average (library default 600)
 */
public record Gradient2Config(int initialLimit, int minLimit, int maxConcurrency, int queueSize,
    double smoothing, double rttTolerance, int longWindow) implements NetflixLimitConfig {

  public Gradient2Config {
    if (minLimit < 1 || initialLimit < minLimit || maxConcurrency < initialLimit) {
      throw new IllegalArgumentException("need 1 <= min_limit <= initial_limit <= max_limit: min="
          + minLimit + " initial=" + initialLimit + " max=" + maxConcurrency);
    }
    if (queueSize < 0 || !(smoothing > 0 && smoothing <= 1) || !(rttTolerance >= 1) || longWindow < 1) {
      throw new IllegalArgumentException("gradient2: queue_size >= 0, smoothing in (0,1], "
          + "rtt_tolerance >= 1, long_window >= 1: queue=" + queueSize + " smoothing=" + smoothing
          + " tolerance=" + rttTolerance + " window=" + longWindow);
    }
  }

  /** The library builder's defaults. */
  public static Gradient2Config defaults() {
    return new Gradient2Config(20, 20, 200, 4, 0.2, 1.5, 600);
  }

  /** These values with other limit bounds. */
  public Gradient2Config withLimits(int initial, int min, int max) {
    return new Gradient2Config(initial, min, max, queueSize, smoothing, rttTolerance, longWindow);
  }

  /** These values with another queue size. */
  public Gradient2Config withQueueSize(int size) {
    return new Gradient2Config(initialLimit, minLimit, maxConcurrency, size, smoothing, rttTolerance,
        longWindow);
  }

  /** These values with another smoothing. */
  public Gradient2Config withSmoothing(double value) {
    return new Gradient2Config(initialLimit, minLimit, maxConcurrency, queueSize, value, rttTolerance,
        longWindow);
  }

  /** These values with another RTT tolerance. */
  public Gradient2Config withRttTolerance(double value) {
    return new Gradient2Config(initialLimit, minLimit, maxConcurrency, queueSize, smoothing, value,
        longWindow);
  }

  @Override
  public String schemeName() {
    return "netflix-gradient2";
  }

  @Override
  public Limit newLimit() {
    int queue = queueSize;
    return Gradient2Limit.newBuilder()
        .initialLimit(initialLimit)
        .minLimit(minLimit)
        .maxConcurrency(maxConcurrency)
        .queueSizeFunction(limit -> queue)
        .smoothing(smoothing)
        .rttTolerance(rttTolerance)
        .longWindow(longWindow)
        .build();
  }
}
