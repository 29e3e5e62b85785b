package io.spillway.peers;

import com.netflix.concurrency.limits.Limit;
import com.netflix.concurrency.limits.limit.VegasLimit;

/**
 * Parameters of concurrency-limits' {@code VegasLimit} (0.5.4): TCP Vegas on request latency. The
 * queue estimate is {@code limit·(1 − rtt_noload/rtt)}; below a threshold the limit grows, above
 * β = 6·log10(limit) it shrinks, and any drop shrinks it. α, β, threshold and the increase and
 * decrease functions stay the library's log10-based defaults.
 *
 * <p><b>Probing is switched off.</b> The library re-probes its no-load RTT every {@code
 * probeMultiplier·limit·jitter} samples, with the jitter drawn from {@code ThreadLocalRandom}, which
 * cannot be seeded; that would make every run irreproducible. Spillway therefore builds the limit
 * with a probe multiplier so large that the probe never fires: {@code rtt_noload} is then the
 * smallest RTT ever seen, as in Vegas before its probe was added.
 *
 * <p>Immutable and thread-safe.
 *
 * @param initialLimit the limit before any sample (library default 20)
 * @param maxConcurrency the limit never goes above this (library default 1000)
 * @param smoothing weight of a new estimate in (0, 1] (library default 1.0)
 */
public record VegasConfig(int initialLimit, int maxConcurrency, double smoothing)
    implements NetflixLimitConfig {

  /** Large enough that {@code probeJitter·multiplier·limit} (jitter ≥ 0.5) is never reached. */
  static final int NO_PROBE = Integer.MAX_VALUE;

  public VegasConfig {
    if (initialLimit < 1 || maxConcurrency < initialLimit || !(smoothing > 0 && smoothing <= 1)) {
      throw new IllegalArgumentException("vegas: need 1 <= initial_limit <= max_limit and smoothing "
          + "in (0,1]: initial=" + initialLimit + " max=" + maxConcurrency + " smoothing=" + smoothing);
    }
  }

  /** The library builder's defaults (probing aside, see the class comment). */
  public static VegasConfig defaults() {
    return new VegasConfig(20, 1000, 1.0);
  }

  /** These values with other limit bounds. */
  public VegasConfig withLimits(int initial, int max) {
    return new VegasConfig(initial, max, smoothing);
  }

  /** These values with another smoothing. */
  public VegasConfig withSmoothing(double value) {
    return new VegasConfig(initialLimit, maxConcurrency, value);
  }

  @Override
  public String schemeName() {
    return "netflix-vegas";
  }

  @Override
  public Limit newLimit() {
    return VegasLimit.newBuilder()
        .initialLimit(initialLimit)
        .maxConcurrency(maxConcurrency)
        .smoothing(smoothing)
        .probeMultiplier(NO_PROBE)
        .build();
  }
}
