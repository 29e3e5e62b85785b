package io.spillway.peers;

import com.netflix.concurrency.limits.Limit;
import com.netflix.concurrency.limits.limit.AIMDLimit;
import java.util.concurrent.TimeUnit;

/**
 * Parameters of concurrency-limits' {@code AIMDLimit} (0.5.4): the limit grows by one per sample
 * while at least half of it is in use, and is multiplied by the backoff ratio on a drop or on a
 * sample slower than the timeout.
 *
 * <p>{@link #defaults()} are the library builder's defaults, whose 5 s timeout never fires at µs
 * scale (only drops then shrink the limit); scenarios tune it (see scenarios/peers-fig3.conf).
 *
 * <p>Immutable and thread-safe.
 *
 * @param initialLimit the limit before any sample (library default 20)
 * @param minLimit the limit never goes below this (library default 20)
 * @param maxLimit the limit never goes above this (library default 200)
 * @param backoffRatio the factor applied on a drop or a late sample, in [0.5, 1) (default 0.9)
 * @param timeoutNanos a sample slower than this counts as a drop (library default 5 s)
 */
public record AimdConfig(int initialLimit, int minLimit, int maxLimit, double backoffRatio,
    long timeoutNanos) implements NetflixLimitConfig {

  public AimdConfig {
    if (minLimit < 1 || initialLimit < minLimit || maxLimit < initialLimit) {
      throw new IllegalArgumentException("need 1 <= min_limit <= initial_limit <= max_limit: min="
          + minLimit + " initial=" + initialLimit + " max=" + maxLimit);
    }
    if (!(backoffRatio >= 0.5 && backoffRatio < 1) || timeoutNanos <= 0) {
      throw new IllegalArgumentException("aimd: backoff in [0.5,1) and a positive timeout: backoff="
          + backoffRatio + " timeout=" + timeoutNanos);
    }
  }

  /** The library builder's defaults. */
  public static AimdConfig defaults() {
    return new AimdConfig(20, 20, 200, 0.9, TimeUnit.SECONDS.toNanos(5));
  }

  /** These values with other limit bounds. */
  public AimdConfig withLimits(int initial, int min, int max) {
    return new AimdConfig(initial, min, max, backoffRatio, timeoutNanos);
  }

  /** These values with another backoff ratio. */
  public AimdConfig withBackoffRatio(double ratio) {
    return new AimdConfig(initialLimit, minLimit, maxLimit, ratio, timeoutNanos);
  }

  /** These values with another timeout. */
  public AimdConfig withTimeout(long nanos) {
    return new AimdConfig(initialLimit, minLimit, maxLimit, backoffRatio, nanos);
  }

  @Override
  public String schemeName() {
    return "netflix-aimd";
  }

  @Override
  public Limit newLimit() {
    return AIMDLimit.newBuilder()
        .initialLimit(initialLimit)
        .minLimit(minLimit)
        .maxLimit(maxLimit)
        .backoffRatio(backoffRatio)
        .timeout(timeoutNanos, TimeUnit.NANOSECONDS)
        .build();
  }
}
