package io.spillway.price;

import java.util.Objects;

/**
 * Rajomon's parameters (rajomon-nsdi25 §3.3–§3.4, §4 "Parameter Tuning"). Start from {@link
 * #builder()} (the paper's millisecond-scale values) or from {@link #forSlo} (scaled to a
 * workload's SLO and RTT).
 *
 * <p>Defaults and where they come from:
 *
 * <table>
 *   <caption>defaults</caption>
 *   <tr><th>parameter</th><th>default</th><th>source</th></tr>
 *   <tr><td>{@code priceUpdateIntervalNanos}</td><td>10 ms</td>
 *       <td>authors' {@code priceUpdateRate} ({@code initOptions.go}); paper §3.4: 1–20 ms</td></tr>
 *   <tr><td>{@code delayThresholdNanos}</td><td>10 ms</td>
 *       <td>paper §3.4: "typically range from 1ms to 20ms" (the authors' default, 0, is a placeholder
 *       every experiment overrides)</td></tr>
 *   <tr><td>{@code priceIncreaseTokens} per {@code priceIncreaseUnitNanos}</td><td>8 per 1 ms</td>
 *       <td>paper §3.4: "exceeds the threshold by 1ms, the price increases by approximately 3 to 13
 *       tokens"; 8 is the middle. The same gain lowers the price below θ ({@link PricePolicy},
 *       authors' {@code UpdatePrice})</td></tr>
 *   <tr><td>{@code priceDecreaseStep}</td><td>1</td><td>the least the price falls per interval
 *       below θ: paper §3.4 "decreases by 1 token"</td></tr>
 *   <tr><td>{@code priceTrendWeight}</td><td>10</td><td>ours, from PIE (RFC 8033 §4.2: β = 10α):
 *       above θ the price also follows the change in delay since the last update, at 10× the
 *       gain ({@link PricePolicy}, "the trend term"); 0 holds the price while the queue drains
 *       instead</td></tr>
 *   <tr><td>{@code tokenRefill}</td><td>{@link TokenRefill#POISSON}</td><td>paper §3.3 (the
 *       authors' code defaults to {@code "fixed"})</td></tr>
 *   <tr><td>{@code tokensPerRefill}, {@code refillIntervalNanos}</td><td>10 per 10 ms</td>
 *       <td>paper §3.5 example: "10 tokens every 10ms" (authors' code: 1 per 10 ms)</td></tr>
 *   <tr><td>{@code initialTokens}</td><td>10</td><td>authors' {@code tokensLeft}</td></tr>
 *   <tr><td>{@code maxTokens}</td><td>10,000 refills</td><td>ours; the paper sets no cap. It
 *       follows {@code tokensPerRefill} unless set (see {@link Builder#maxTokens})</td></tr>
 *   <tr><td>{@code clientWaitTimeoutNanos}</td><td>0 (fail fast)</td><td>authors'
 *       {@code clientTimeOut} (0 disables waiting)</td></tr>
 *   <tr><td>{@code priceAttachment}</td><td>every 5th response</td><td>authors' {@code
 *       priceFreq = 5}; paper §3.4 "e.g., 20%"</td></tr>
 *   <tr><td>{@code allInterfacePrices}</td><td>on</td><td>paper §3.4: the controller attaches
 *       "its price information ... updating the upstream services with the current local prices";
 *       the authors' code sends only the called method's ("rather than a whole pricetable"). With
 *       it off, a client whose wallet cannot cover a stale price never sends to that interface
 *       again to hear the price fall (docs/results/rajomon.md, "Stale prices after a
 *       stall")</td></tr>
 *   <tr><td>{@code listLowersAfterIntervals}</td><td>100</td><td>ours: a listed price raises a
 *       client's known price at once, and lowers it only once the known one is this many price
 *       intervals old (docs/results/rajomon.md, "A listed price lowers only a stale one")</td></tr>
 *   <tr><td>{@code tokenAudit}, {@code auditSlackTokens}</td><td>off, 4 refills</td><td>ours (paper
 *       §6 "Malicious Clients" leaves it open)</td></tr>
 * </table>
 *
 * <p>Immutable and thread-safe.
 *
 * @param delayThresholdNanos θ: above it the local price rises; below it, it falls (§3.4)
 * @param priceUpdateIntervalNanos how often the server updates its local price
 * @param priceIncreaseTokens tokens the price moves by per {@code priceIncreaseUnitNanos} of
 *     queueing delay above or below θ (rounded up)
 * @param priceIncreaseUnitNanos see {@code priceIncreaseTokens}
 * @param priceDecreaseStep the least the price falls by per interval while the delay is below θ
 * @param priceTrendWeight how many times the gain the price moves by per unit of change in the
 *     delay since the last update while the delay is or was above θ, in [0, 1000]; 0 holds it
 *     while the queue drains instead
 * @param tokenRefill how client wallets are replenished (§3.3)
 * @param tokensPerRefill tokens per refill event
 * @param refillIntervalNanos the mean time between refill events
 * @param initialTokens a new client wallet's balance
 * @param maxTokens the most a client wallet holds (and the audit's per-session ceiling)
 * @param clientWaitTimeoutNanos how long a request may wait at the client for tokens; 0 refuses it
 *     at once (fail fast). Requests never wait beyond the SLO either way
 * @param priceAttachment which successful responses carry the price (rejects always do)
 * @param allInterfacePrices whether a response that carries a price also carries the prices of the
 *     server's other interfaces ({@link io.spillway.api.InterfacePrices})
 * @param listLowersAfterIntervals how old, in price update intervals, a client's known price of an
 *     interface must be before a listed price (another interface's response) may lower it; a
 *     listed price above the known one replaces it at once. 0: a listed price always replaces it
 * @param tokenAudit whether the server caps each session's tokens at what it could have earned
 * @param auditSlackTokens tokens the audit allows beyond the mean accrual (refill variance)
 * @param seed seeds every random generator the scheme makes (per session for clients)
 */
public record RajomonConfig(long delayThresholdNanos, long priceUpdateIntervalNanos,
    long priceIncreaseTokens, long priceIncreaseUnitNanos, long priceDecreaseStep,
    long priceTrendWeight, TokenRefill tokenRefill, long tokensPerRefill, long refillIntervalNanos,
    long initialTokens, long maxTokens, long clientWaitTimeoutNanos,
    PriceAttachment priceAttachment, boolean allInterfacePrices, long listLowersAfterIntervals,
    boolean tokenAudit, long auditSlackTokens, long seed) {

  /** The largest wallet allowed, 2^40 tokens: keeps every token sum far from overflow. */
  public static final long MAX_TOKENS = 1L << 40;

  /** The most price intervals {@code listLowersAfterIntervals} may be: about a million. */
  public static final long MAX_LIST_AGE_INTERVALS = 1L << 20;

  private static final long MS = 1_000_000;

  public RajomonConfig {
    requirePositive("delayThresholdNanos", delayThresholdNanos);
    requirePositive("priceUpdateIntervalNanos", priceUpdateIntervalNanos);
    requirePositive("priceIncreaseTokens", priceIncreaseTokens);
    requirePositive("priceIncreaseUnitNanos", priceIncreaseUnitNanos);
    requirePositive("priceDecreaseStep", priceDecreaseStep);
    Objects.requireNonNull(tokenRefill, "tokenRefill");
    requirePositive("tokensPerRefill", tokensPerRefill);
    requirePositive("refillIntervalNanos", refillIntervalNanos);
    Objects.requireNonNull(priceAttachment, "priceAttachment");
    if (maxTokens < 1 || maxTokens > MAX_TOKENS) {
      throw new IllegalArgumentException("maxTokens must be in [1, " + MAX_TOKENS + "], got "
          + maxTokens);
    }
    if (tokensPerRefill > maxTokens) {
      throw new IllegalArgumentException("tokensPerRefill (" + tokensPerRefill
          + ") must not exceed maxTokens (" + maxTokens + ")");
    }
    if (initialTokens < 0 || initialTokens > maxTokens) {
      throw new IllegalArgumentException("initialTokens must be in [0, maxTokens=" + maxTokens
          + "], got " + initialTokens);
    }
    if (clientWaitTimeoutNanos < 0) {
      throw new IllegalArgumentException("clientWaitTimeoutNanos must not be negative (0 fails "
          + "fast), got " + clientWaitTimeoutNanos);
    }
    if (listLowersAfterIntervals < 0 || listLowersAfterIntervals > MAX_LIST_AGE_INTERVALS) {
      throw new IllegalArgumentException("listLowersAfterIntervals must be in [0, "
          + MAX_LIST_AGE_INTERVALS + "], got " + listLowersAfterIntervals);
    }
    if (auditSlackTokens < 0 || auditSlackTokens > MAX_TOKENS) {
      throw new IllegalArgumentException("auditSlackTokens must be in [0, " + MAX_TOKENS
          + "], got " + auditSlackTokens);
    }
    if (priceTrendWeight < 0 || priceTrendWeight > PricePolicy.MAX_TREND_WEIGHT) {
      throw new IllegalArgumentException("priceTrendWeight must be in [0, "
          + PricePolicy.MAX_TREND_WEIGHT + "], got " + priceTrendWeight);
    }
    // checks that the increase arithmetic cannot overflow
    new PricePolicy(delayThresholdNanos, priceIncreaseTokens, priceIncreaseUnitNanos,
        priceDecreaseStep, priceTrendWeight);
  }

  /** {@value #CAP_REFILLS} refills, within [1, {@link #MAX_TOKENS}]. */
  private static long defaultCap(long tokensPerRefill) {
    return tokensPerRefill <= 0 ? 1
        : tokensPerRefill >= MAX_TOKENS / CAP_REFILLS ? MAX_TOKENS : tokensPerRefill * CAP_REFILLS;
  }

  private static void requirePositive(String name, long value) {
    if (value <= 0) {
      throw new IllegalArgumentException(name + " must be positive, got " + value);
    }
  }

  /** A builder holding the defaults in the table above. */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Parameters scaled to a workload whose end-to-end SLO is {@code sloNanos} and network RTT
   * {@code rttNanos}. The paper tunes its knobs per application by Bayesian optimisation (§4
   * "Parameter Tuning": a surge from 80 % to 200 % of capacity, objective goodput − 10 ·
   * max(0, latency − SLO)). These are what a search of that kind found on a call graph in
   * Spillway's simulator (the hotel-reservation graph of rajomon-nsdi25 Table 2, 1,000 clients,
   * SLO ≈ 13–15 ms), expressed relative to the SLO so that they carry over to other time scales:
   *
   * <ul>
   *   <li>θ = SLO / 4. The price steers the queueing delay towards θ, leaving three quarters of
   *       the SLO for service, network and the overshoot while prices propagate. SLO/4 did best on
   *       both workloads searched (SLO/8 next; SLO/2 and 3·SLO/8 worse).
   *   <li>Update interval = max(RTT, θ/2): updating faster than a price can reach a caller and
   *       come back as changed load only adds noise; θ/2 keeps two updates within one threshold.
   *   <li>Gain = 160 tokens per θ of delay away from θ, at least 10 down per interval below it.
   *   <li>Wallets refill 10 tokens per update interval (Poisson) and hold at most 10,000 refills.
   *       Only the ratio of gain to refill matters (tokens are a unit): 16 refills per θ. On the
   *       graph, ratios from 5 to 32 scored within 3 % of each other, 1.6 lost 14 %, 0.4 failed
   *       (p95 far above the SLO: the price climbed too slowly); a refill of 10 rather than 1
   *       lets the price round finely.
   *   <li>Every response carries the price. The paper attaches it to about 20 % of responses to
   *       save the cost of writing it; in the simulator that cost is nil and the best settings
   *       on both workloads attached it to every response.
   * </ul>
   *
   * <p>The gain does not carry over to a single server with many cores and µs requests: on
   * Breakwater's synthetic workload (SLO 200 µs, 1,000 clients) the best ratio was 1/30 refill per
   * θ, 500× lower (updates every 12 µs, 10 tokens per θ, 300 per refill; 0.98 of capacity as
   * goodput through the surge, against 0.90 with these defaults, whose price then swings enough
   * to make the server reject 23 % of what reaches it). {@code scenarios/} carries tuned values.
   *
   * <p>What a client spends per admitted request settles near {@code refill rate × clients ÷
   * capacity}, so the price scale depends on the workload; the cap only has to stay above it
   * ({@link RajomonClientGate} on what happens when it does not).
   *
   * @throws IllegalArgumentException if the SLO or RTT is not positive, or the SLO is under 4 ns
   */
  public static RajomonConfig forSlo(long sloNanos, long rttNanos) {
    if (sloNanos <= 0 || rttNanos <= 0) {
      throw new IllegalArgumentException("SLO and RTT must be positive: slo=" + sloNanos
          + "ns rtt=" + rttNanos + "ns");
    }
    if (sloNanos < 4) {
      throw new IllegalArgumentException("SLO too small to derive a threshold: " + sloNanos + "ns");
    }
    long threshold = sloNanos / 4;
    long interval = updateIntervalFor(threshold, rttNanos);
    return builder()
        .delayThresholdNanos(threshold)
        .priceUpdateIntervalNanos(interval)
        .priceIncrease(FOR_SLO_GAIN, threshold)
        .priceDecreaseStep(FOR_SLO_REFILL)
        .refill(TokenRefill.POISSON, FOR_SLO_REFILL, interval)
        .priceAttachment(PriceAttachment.always())
        .build();
  }

  /**
   * {@link #forSlo}'s price update interval for a threshold: max(RTT, threshold / 2), at least
   * 1 ns (see there for why).
   */
  public static long updateIntervalFor(long thresholdNanos, long rttNanos) {
    return Math.max(rttNanos, Math.max(1, thresholdNanos / 2));
  }

  /** {@link #forSlo}'s gain, tokens per threshold of delay away from the threshold. */
  static final long FOR_SLO_GAIN = 160;

  /** {@link #forSlo}'s tokens per refill, one refill per update interval. */
  static final long FOR_SLO_REFILL = 10;

  /** The default trend weight: PIE's β / α (RFC 8033 §4.2). */
  static final long DEFAULT_TREND_WEIGHT = 10;

  /** A wallet's default cap, in refills. */
  static final long CAP_REFILLS = 10_000;

  /** A builder starting from these values. */
  public Builder toBuilder() {
    return new Builder(this);
  }

  /** Whether a client refuses a request it cannot pay for at once instead of queueing it. */
  public boolean failFast() {
    return clientWaitTimeoutNanos == 0;
  }

  /** Builds a {@link RajomonConfig}; every setter's value is checked by {@link #build()}. Not thread-safe. */
  public static final class Builder {
    private long delayThresholdNanos = 10 * MS;
    private long priceUpdateIntervalNanos = 10 * MS;
    private long priceIncreaseTokens = 8;
    private long priceIncreaseUnitNanos = MS;
    private long priceDecreaseStep = 1;
    private long priceTrendWeight = DEFAULT_TREND_WEIGHT;
    private TokenRefill tokenRefill = TokenRefill.POISSON;
    private long tokensPerRefill = 10;
    private long refillIntervalNanos = 10 * MS;
    private long initialTokens = 10;
    private long maxTokens;
    private boolean capFollowsRefill = true; // maxTokens = CAP_REFILLS × tokensPerRefill
    private long clientWaitTimeoutNanos;
    private PriceAttachment priceAttachment = PriceAttachment.everyNth(5);
    private boolean allInterfacePrices = true;
    private long listLowersAfterIntervals = 100;
    private boolean tokenAudit;
    private long auditSlackTokens = 40;
    private long seed = 0x5A70_DA1EL;

    private Builder() { }

    private Builder(RajomonConfig c) {
      delayThresholdNanos = c.delayThresholdNanos;
      priceUpdateIntervalNanos = c.priceUpdateIntervalNanos;
      priceIncreaseTokens = c.priceIncreaseTokens;
      priceIncreaseUnitNanos = c.priceIncreaseUnitNanos;
      priceDecreaseStep = c.priceDecreaseStep;
      priceTrendWeight = c.priceTrendWeight;
      tokenRefill = c.tokenRefill;
      tokensPerRefill = c.tokensPerRefill;
      refillIntervalNanos = c.refillIntervalNanos;
      initialTokens = c.initialTokens;
      // A cap that is the default for its refill keeps following the refill.
      maxTokens = c.maxTokens;
      capFollowsRefill = c.maxTokens == defaultCap(c.tokensPerRefill);
      clientWaitTimeoutNanos = c.clientWaitTimeoutNanos;
      priceAttachment = c.priceAttachment;
      allInterfacePrices = c.allInterfacePrices;
      listLowersAfterIntervals = c.listLowersAfterIntervals;
      tokenAudit = c.tokenAudit;
      auditSlackTokens = c.auditSlackTokens;
      seed = c.seed;
    }

    public Builder delayThresholdNanos(long value) { delayThresholdNanos = value; return this; }

    public Builder priceUpdateIntervalNanos(long value) { priceUpdateIntervalNanos = value; return this; }

    /** The price rises by {@code tokens} per {@code perExcessNanos} of delay above the threshold. */
    public Builder priceIncrease(long tokens, long perExcessNanos) {
      priceIncreaseTokens = tokens;
      priceIncreaseUnitNanos = perExcessNanos;
      return this;
    }

    public Builder priceDecreaseStep(long value) { priceDecreaseStep = value; return this; }

    /**
     * The price also moves by {@code weight} times the gain per unit of change in the delay since
     * the last update, while the delay is or was above θ ({@link PricePolicy}, "the trend term");
     * 0 holds it while the queue drains.
     */
    public Builder priceTrendWeight(long weight) { priceTrendWeight = weight; return this; }

    /** Client wallets get {@code tokens} per refill event, events {@code intervalNanos} apart on average. */
    public Builder refill(TokenRefill kind, long tokens, long intervalNanos) {
      tokenRefill = kind;
      tokensPerRefill = tokens;
      refillIntervalNanos = intervalNanos;
      return this;
    }

    public Builder initialTokens(long value) { initialTokens = value; return this; }

    /**
     * The most a wallet holds. Unless set, {@value RajomonConfig#CAP_REFILLS} refills: it then
     * follows {@link #refill}, so that raising the refill cannot put the price a client must
     * reach above what its wallet can hold.
     */
    public Builder maxTokens(long value) {
      maxTokens = value;
      capFollowsRefill = false;
      return this;
    }

    /** 0 fails fast; otherwise how long a request may wait at the client for tokens. */
    public Builder clientWaitTimeoutNanos(long value) { clientWaitTimeoutNanos = value; return this; }

    public Builder priceAttachment(PriceAttachment value) { priceAttachment = value; return this; }

    /**
     * Whether a response that carries its interface's price also carries the prices of all of the
     * server's interfaces (default on; off sends only the answered interface's, as the authors'
     * code does).
     */
    public Builder allInterfacePrices(boolean on) { allInterfacePrices = on; return this; }

    /**
     * How old, in price update intervals, a client's known price must be before another
     * interface's response may lower it (default 100; 0: at once). A higher listed price always
     * replaces it.
     */
    public Builder listLowersAfterIntervals(long intervals) {
      listLowersAfterIntervals = intervals;
      return this;
    }

    /** Turns the server-side token audit on, allowing {@code slackTokens} beyond the mean accrual. */
    public Builder tokenAudit(boolean on, long slackTokens) {
      tokenAudit = on;
      auditSlackTokens = slackTokens;
      return this;
    }

    public Builder seed(long value) { seed = value; return this; }

    /** @throws IllegalArgumentException naming the first value out of range */
    public RajomonConfig build() {
      return new RajomonConfig(delayThresholdNanos, priceUpdateIntervalNanos, priceIncreaseTokens,
          priceIncreaseUnitNanos, priceDecreaseStep, priceTrendWeight, tokenRefill, tokensPerRefill,
          refillIntervalNanos, initialTokens, capFollowsRefill ? defaultCap(tokensPerRefill) : maxTokens,
          clientWaitTimeoutNanos, priceAttachment, allInterfacePrices, listLowersAfterIntervals,
          tokenAudit, auditSlackTokens, seed);
    }
  }

  @Override
  public String toString() {
    return "RajomonConfig[threshold=" + delayThresholdNanos / 1000.0 + "us"
        + ", interval=" + priceUpdateIntervalNanos / 1000.0 + "us"
        + ", increase=" + priceIncreaseTokens + "/" + priceIncreaseUnitNanos / 1000.0 + "us"
        + ", decrease=" + priceDecreaseStep
        + ", trend=" + priceTrendWeight
        + ", refill=" + tokenRefill + " " + tokensPerRefill + "/" + refillIntervalNanos / 1000.0 + "us"
        + ", tokens=" + initialTokens + ".." + maxTokens
        + ", clientWait=" + (failFast() ? "fail-fast" : clientWaitTimeoutNanos / 1000.0 + "us")
        + ", attach=" + priceAttachment
        + (allInterfacePrices ? " (all interfaces, lowering after " + listLowersAfterIntervals + " intervals)" : "")
        + ", audit=" + (tokenAudit ? "slack " + auditSlackTokens : "off") + ", seed=" + seed + "]";
  }
}
