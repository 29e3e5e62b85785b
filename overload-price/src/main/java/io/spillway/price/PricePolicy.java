package io.spillway.price;

/**
 * Rajomon's local price update (rajomon-nsdi25 §3.4 "Proportional Price Updates"), pure
 * arithmetic: once per update interval the server compares its queueing delay {@code d} with the
 * threshold {@code θ} and moves its local price {@code p} in proportion to the difference, with
 * gain {@code k = increaseTokens / increaseUnitNanos}:
 *
 * <pre>
 *   d &gt; θ   p ← p + ⌈(d − θ) · k⌉                                + w · k · (d − d_prev)
 *   d &lt; θ   p ← p − max(step, ⌈(θ − d) · k⌉) · 2^(n − 1)          + w · k · (d − d_prev)
 *   d = θ   p ← p                                                + w · k · (d − d_prev)
 * </pre>
 *
 * kept within [0, {@link #MAX_PRICE}], where {@code d_prev} is the delay read at the previous
 * update and {@code w} the trend weight. The trend term is rounded up in magnitude and left out
 * when neither {@code d} nor {@code d_prev} is above θ, so the price never rises while the delay is
 * at or under θ. With {@code w = 0} it is replaced by a hold: while {@code d > θ} and {@code d <
 * d_prev} the price is unchanged (see below). No increase takes {@code p} above {@code c + 1},
 * {@code c} being the most tokens any request brought to the server in the last few intervals
 * beyond the price of its callees (the ceiling, kept by {@link RajomonServerGate}; a price already
 * above it holds). {@code n} is 1 unless the price is unwinding: then it counts the consecutive
 * updates, this one included, at which the queue was short ({@code d < θ/2}), so the fall doubles
 * at each. A price unwinds from the update at which it stood above its ceiling until the first
 * update after a short queue at which the queue is no longer short (the gate keeps that state).
 *
 * <p>What we follow, and why:
 *
 * <ul>
 *   <li><b>The increase</b> is the paper's: "the greater the queuing delay in excess of the
 *       threshold, the greater the price increase" (≈ 3–13 tokens per ms of excess in its
 *       deployment), rounded up so that any excess moves the price (at µs scale a truncated
 *       increase would often be 0).
 *   <li><b>The decrease</b> is the authors' code, not the paper's prose. The paper says the price
 *       "decreases by 1 token" below θ/2 and holds in [θ/2, θ]; that is the authors' {@code "step"}
 *       strategy ({@code UpdateOwnPrice}). Their proportional strategy, the one the paper
 *       describes for increases ({@code UpdatePrice} in {@code tokenAndPrice.go}), moves the price
 *       by {@code (d − θ)µs · priceStep / 10000} in both directions with no dead band, so a server
 *       with an empty queue lowers its price by the same gain it raises it with. The asymmetric
 *       version (up by the gain, down by 1) let a price that overshot during a surge stay high
 *       for hundreds of intervals while the server idled: in the simulator's hotel graph at 2×
 *       load the hotspot's price rose to 886 within 40 ms and was still 309 900 ms later, with
 *       70–85 % of search requests refused at the clients and goodput at 0.3–0.4 of capacity. The
 *       decrease is at least {@code step}, so a price always drains once the queue is short.
 *   <li><b>The trend term</b> is ours, taken from PIE (RFC 8033 §4.2: {@code p += α · (cur_del −
 *       ref_del) + β · (cur_del − old_del)}, recommended α = 0.125 Hz and β = 1.25 Hz, so β = 10α):
 *       the price also moves by {@code w} times the gain for every nanosecond the delay moved
 *       since the last update, as long as the delay, now or then, is above θ. Above θ it
 *       telescopes (over a run of updates it adds {@code w · k · (d_last − d_first)}): it puts
 *       {@code w · k · d} on top of the integral while the queue is long and takes it off as the
 *       queue drains. That is the damping an integrator lacks. The delay signal is the age of the
 *       oldest waiting item, which keeps growing for as long as that item waited after the price
 *       already sheds enough, and an integrator on it overshoots by about as much. At 3× load the
 *       price swung between shedding nothing and shedding 75–94 % every 200–300 ms. In the
 *       harness's split hotel graph (three surges to 3×, docs/results/rajomon.md, "The trend
 *       term"), goodput rose from 1,027–1,115 rps per run to 1,154–1,187, the spread of its 100 ms
 *       windows fell from 136–207 rps to 110–127, and 7 of 9 surges recovered within 1 s, against
 *       13 of 24. Below θ the term is left out: there it turned delay noise into a price (a price
 *       of 0 rose at every short burst, and the clamp at 0 kept what the term had added), and in
 *       the simulator's isolation run reserve at 0.8× kept 0.681 of its capacity against 0.777.
 *   <li><b>Holding while the delay falls</b>, the rule with {@code w = 0}, is the trend term's
 *       simplest form. Clients learn a new price only from
 *       responses, a few per client per second at the paper's scale, so for many intervals after
 *       a surge the queue stays long although the price already sheds enough: a pure integrator
 *       keeps adding and overshoots. In the simulator's single-server surge to 2× the price
 *       climbed to 1,396 tokens in the first 20 ms against 300 in steady state, and goodput in
 *       that window fell to 0.2 of capacity. Not raising the price while the queue is already
 *       shrinking removes most of the overshoot; a growing or steady queue still raises it every
 *       interval.
 *   <li><b>The ceiling</b> is ours too: anti-windup, as a controller stops integrating once its
 *       actuator saturates. At {@code c + 1} the server already refuses every request it saw
 *       lately; a higher price sheds nothing more, but it is what callers hear, and a client
 *       that heard it cannot send again until its wallet holds that much (§3.3: a client pays the
 *       price it knows). During a stall the delay grows at every update while nothing drains it,
 *       so a pure integrator climbs far above any wallet: in {@code RajomonControlLoopTest}
 *       without a ceiling, a 5 ms stall at 2× drove the price about a hundred times above its
 *       level before and had the clients refuse 99 % of their requests 15–45 ms after it
 *       (docs/results/rajomon.md, "Anti-windup").
 *   <li><b>The unwinding</b> is ours as well, and finishes what the ceiling starts. The ceiling
 *       is the richest request of late, and at 2× the spread of tokens (§3.3) puts it an order
 *       of magnitude above the price that sheds half: in the control-loop test, 29,261 against
 *       about 2,000. Falling from there by the plain gain takes hundreds of intervals with the
 *       server idle. Doubling the fall at each short queue brings it back within a few, and
 *       only a price that saturated does so, so a price that is steering a queue near θ keeps
 *       the plain, symmetric fall above: doubling it always halves goodput at 2× in that test
 *       (0.39 of capacity), by dropping the price to 0 whenever the queue empties for a few
 *       intervals. After a 5 ms stall at 2×, goodput 5–15 ms later was
 *       1.00 of capacity with it and 0.14 without (RajomonControlLoopTest, seed 42).
 * </ul>
 *
 * <p>Prices saturate at {@link #MAX_PRICE}, so a local price plus a downstream price never
 * overflows.
 *
 * <p>Immutable and thread-safe.
 *
 * @param thresholdNanos θ, the queueing delay the price steers towards
 * @param increaseTokens tokens the price moves per {@code increaseUnitNanos} of delay away from θ
 * @param increaseUnitNanos see {@code increaseTokens}
 * @param decreaseStep the least the price falls by per interval while the delay is below θ
 * @param trendWeight {@code w}: the price also moves by {@code w} times the gain for each unit of
 *     change in the delay since the last update, while the delay is or was above θ; 0 holds the
 *     price while the queue drains instead
 */
record PricePolicy(long thresholdNanos, long increaseTokens, long increaseUnitNanos,
    long decreaseStep, long trendWeight) {

  /** The most {@link #trendWeight} may be. */
  static final long MAX_TREND_WEIGHT = 1_000;

  /** The highest price any table holds: a quarter of {@link Long#MAX_VALUE}. */
  static final long MAX_PRICE = Long.MAX_VALUE / 4;

  PricePolicy {
    if (thresholdNanos <= 0 || increaseTokens <= 0 || increaseUnitNanos <= 0 || decreaseStep <= 0) {
      throw new IllegalArgumentException("price policy parameters must be positive: threshold="
          + thresholdNanos + " increase=" + increaseTokens + "/" + increaseUnitNanos
          + "ns decrease=" + decreaseStep);
    }
    if (trendWeight < 0 || trendWeight > MAX_TREND_WEIGHT) {
      throw new IllegalArgumentException("price trend weight must be in [0, " + MAX_TREND_WEIGHT
          + "], got " + trendWeight);
    }
    if (Math.multiplyHigh(increaseTokens, increaseUnitNanos) != 0
        || increaseTokens * increaseUnitNanos < 0) {
      throw new IllegalArgumentException("price increase " + increaseTokens + " tokens per "
          + increaseUnitNanos + "ns is too large: their product must fit in a long");
    }
  }

  /** A policy without the trend term: the price holds while the queue drains. */
  PricePolicy(long thresholdNanos, long increaseTokens, long increaseUnitNanos, long decreaseStep) {
    this(thresholdNanos, increaseTokens, increaseUnitNanos, decreaseStep, 0);
  }

  static PricePolicy of(RajomonConfig config) {
    return new PricePolicy(config.delayThresholdNanos(), config.priceIncreaseTokens(),
        config.priceIncreaseUnitNanos(), config.priceDecreaseStep(), config.priceTrendWeight());
  }

  /**
   * The local price after one update interval in which the queueing delay was {@code delayNanos},
   * having been {@code previousDelayNanos} at the update before.
   */
  long next(long price, long delayNanos, long previousDelayNanos) {
    return next(price, delayNanos, previousDelayNanos, MAX_PRICE, 1);
  }

  /**
   * As {@link #next(long, long, long)}, with no increase above {@code ceiling + 1}, where {@code
   * ceiling} is the most tokens a request brought lately beyond its callees' price (0 if none
   * came): at {@code ceiling + 1} every one of them would have been refused; and with a decrease
   * that doubles with each consecutive update at which the queue was short ({@code shortUpdates},
   * from {@link #shortUpdates}; 1 or less: the plain decrease).
   */
  long next(long price, long delayNanos, long previousDelayNanos, long ceiling, int shortUpdates) {
    long move; // each term within ±MAX_PRICE, so price + move cannot overflow
    if (delayNanos > thresholdNanos) {
      if (trendWeight == 0 && delayNanos < previousDelayNanos) {
        return price; // the queue is draining at this price
      }
      move = increase(delayNanos - thresholdNanos);
    } else if (delayNanos < thresholdNanos) {
      move = -doubled(Math.max(decreaseStep, increase(thresholdNanos - delayNanos)),
          shortUpdates - 1);
    } else {
      move = 0;
    }
    // the trend only where the queue is or was above θ: below it, delay noise would raise a price
    // of 0 at every short burst, and the clamp at 0 would keep what it added
    long trend = Math.max(delayNanos, previousDelayNanos) > thresholdNanos
        ? trend(delayNanos - previousDelayNanos) : 0;
    long next = Math.clamp(price + move + trend, 0, MAX_PRICE);
    if (next <= price) {
      return next;
    }
    long saturated = ceiling >= MAX_PRICE ? MAX_PRICE : Math.max(0, ceiling) + 1;
    return Math.max(price, Math.min(next, saturated)); // never lowered by the ceiling
  }

  /**
   * {@code w · k · change}, rounded up in magnitude, within ±{@link #MAX_PRICE}; 0 if {@code w =
   * 0}.
   */
  private long trend(long changeNanos) {
    if (trendWeight == 0 || changeNanos == 0) {
      return 0;
    }
    long magnitude = increase(Math.abs(changeNanos)); // delays are never negative: no overflow
    long weighted = magnitude > MAX_PRICE / trendWeight ? MAX_PRICE : magnitude * trendWeight;
    return changeNanos > 0 ? weighted : -weighted;
  }

  /**
   * How many consecutive updates, this one included, have seen a short queue (a delay under half
   * the threshold, the paper's "below half"), given the count at the update before.
   */
  int shortUpdates(int before, long delayNanos) {
    if (delayNanos >= thresholdNanos / 2) {
      return 0;
    }
    return before == Integer.MAX_VALUE ? before : before + 1;
  }

  /** How much the price falls at the first update with an empty queue. */
  long fallAtEmptyQueue() {
    return Math.max(decreaseStep, increase(thresholdNanos));
  }

  /**
   * The lowest {@code price} can be after {@code intervals} updates: what it becomes if every one
   * of them saw an empty queue, the fall doubling at each, {@code price − fall · (2^intervals −
   * 1)}. The trend term can take a price lower still, once, by {@code w · k} times the delay read
   * at the update before; a caller ageing a callee's price cannot see that delay, so the bound
   * leaves it out and errs towards shedding.
   */
  long lowestAfter(long price, long intervals) {
    if (intervals <= 0) {
      return price;
    }
    long fall = fallAtEmptyQueue();
    // fall · (1 + 2 + … + 2^(intervals − 1)) = fall · 2^intervals − fall; saturated: all of it
    long next = doubled(fall, (int) Math.min(intervals, 62));
    return next == MAX_PRICE ? 0 : Math.max(0, price - (next - fall));
  }

  /** {@code fall · 2^times}, saturating at {@link #MAX_PRICE}; {@code fall} for 0 or fewer. */
  private static long doubled(long fall, int times) {
    if (times <= 0) {
      return fall;
    }
    return times >= 62 || fall > MAX_PRICE >> times ? MAX_PRICE : fall << times;
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
