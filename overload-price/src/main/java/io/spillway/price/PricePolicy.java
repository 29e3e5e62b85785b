package io.spillway.price;

/**
 * Rajomon's local price update (rajomon-nsdi25 §3.4 "Proportional Price Updates"), pure
 * arithmetic: once per update interval the server compares its queueing delay {@code d} with the
 * threshold {@code θ} and moves its local price {@code p}:
 *
 * <pre>
 *   d &gt; θ        p ← p + ⌈(d − θ) · increaseTokens / increaseUnitNanos⌉   ("proportional to the excess")
 *   d &lt; θ / 2    p ← max(0, p − decreaseStep)                               ("decreases by 1 token")
 *   otherwise    p unchanged
 * </pre>
 *
 * <p>The paper's gain: "when queuing delay exceeds the threshold by 1ms, the price increases by
 * approximately 3 to 13 tokens", i.e. {@code increaseTokens} per {@code increaseUnitNanos} = 1 ms.
 *
 * <p>Where the authors' code differs ({@code tokenAndPrice.go}, {@code UpdatePrice}): it moves the
 * price by {@code (d − θ)µs · priceStep / 10000} in <em>both</em> directions (so a delay far
 * below the threshold lowers the price by many tokens at once), truncating toward zero, with no
 * dead band. We follow the paper: decrease by one step below θ/2, hold in [θ/2, θ], and round the
 * increase up so that any excess moves the price (at µs scale a truncated increase would
 * often be zero). Its {@code "step"} strategy ({@code UpdateOwnPrice}) is the special case of a
 * constant increase.
 *
 * <p>Prices saturate at {@link #MAX_PRICE}, so a local price plus a downstream price never
 * overflows.
 *
 * <p>Immutable and thread-safe.
 *
 * @param thresholdNanos θ, the queueing delay above which the price rises
 * @param increaseTokens tokens added per {@code increaseUnitNanos} of delay above θ
 * @param increaseUnitNanos the excess delay that costs {@code increaseTokens}
 * @param decreaseStep tokens removed per interval while the delay is below θ/2
 */
record PricePolicy(long thresholdNanos, long increaseTokens, long increaseUnitNanos,
    long decreaseStep) {

  /** The highest price any table holds: a quarter of {@link Long#MAX_VALUE}. */
  static final long MAX_PRICE = Long.MAX_VALUE / 4;

  PricePolicy {
    if (thresholdNanos <= 0 || increaseTokens <= 0 || increaseUnitNanos <= 0 || decreaseStep <= 0) {
      throw new IllegalArgumentException("price policy parameters must be positive: threshold="
          + thresholdNanos + " increase=" + increaseTokens + "/" + increaseUnitNanos
          + "ns decrease=" + decreaseStep);
    }
    if (Math.multiplyHigh(increaseTokens, increaseUnitNanos) != 0
        || increaseTokens * increaseUnitNanos < 0) {
      throw new IllegalArgumentException("price increase " + increaseTokens + " tokens per "
          + increaseUnitNanos + "ns is too large: their product must fit in a long");
    }
  }

  static PricePolicy of(RajomonConfig config) {
    return new PricePolicy(config.delayThresholdNanos(), config.priceIncreaseTokens(),
        config.priceIncreaseUnitNanos(), config.priceDecreaseStep());
  }

  /** The local price after one update interval in which the queueing delay was {@code delayNanos}. */
  long next(long price, long delayNanos) {
    if (delayNanos > thresholdNanos) {
      return Math.min(MAX_PRICE, price + increase(delayNanos - thresholdNanos));
    }
    if (delayNanos < thresholdNanos - delayNanos) { // d < θ/2, exactly, for odd θ too
      return Math.max(0, price - decreaseStep);
    }
    return price;
  }

  /** ⌈excess · increaseTokens / increaseUnitNanos⌉, saturating at {@link #MAX_PRICE}. */
  long increase(long excessNanos) {
    long whole = excessNanos / increaseUnitNanos;
    long part = excessNanos % increaseUnitNanos;
    if (whole >= MAX_PRICE / increaseTokens) {
      return MAX_PRICE;
    }
    // part < increaseUnitNanos, and increaseTokens · increaseUnitNanos is bounded by the config,
    // so the product fits.
    return whole * increaseTokens + Math.ceilDiv(part * increaseTokens, increaseUnitNanos);
  }
}
