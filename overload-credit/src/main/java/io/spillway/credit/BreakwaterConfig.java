package io.spillway.credit;

/**
 * Breakwater's parameters. {@link #forSlo} gives the paper's defaults (breakwater-osdi20 §5.1
 * "Parameter tuning"): α = 0.1 %, β = 2 %, target delay d_t = 40 % of the SLO, AQM drop threshold
 * 2·d_t, the control period one network RTT. The paper reproductions run with these (and the values
 * they tune); {@link Spillway}, the scheme a user gets, departs from them where the robustness
 * matrix (docs/results/robustness.md) showed them failing, among others with the {@linkplain
 * #adaptiveClientTimeout adaptive client queue timeout}.
 *
 * <p>Immutable and thread-safe.
 *
 * @param alpha α, aggressiveness of the additive increase (eq. 3)
 * @param beta β, sensitivity of the multiplicative decrease (eq. 2)
 * @param targetDelayNanos d_t, the queueing delay the pool steers to
 * @param dropThresholdNanos AQM drops requests arriving when queueing delay is at or above this
 * @param controlPeriodNanos how often C_total is updated (the paper: every RTT)
 * @param perSessionCap the largest window one session may hold (the authors' implementation: 64);
 *     for {@link Spillway}'s defaults a share, not a ceiling (see {@link BreakwaterServerGate})
 * @param clientQueueTimeoutNanos how long a request may wait in the client queue before it expires
 * @param demandSpeculation speculate on demand and overcommit (§3.2.2); {@code false} is demand
 *     synchronisation: explicit demand messages and no overcommit
 * @param aqm whether delay-based AQM is on (§3.2.3)
 * @param requestBudgetNanos beyond the paper: the end-to-end queueing budget every request
 *     carries (docs/design.md, "Request budget"), or {@link #NO_REQUEST_BUDGET}. The client
 *     sends what is left of it after the request's wait in the client queue; the server aborts the
 *     request, without running it, if it is still queued when that is spent. See {@link
 *     BreakwaterClientGate}.
 * @param adaptiveClientTimeout whether the client queue timeout follows the workload: the SLO
 *     minus the p99 of what a request still needs once it leaves the queue (from send to response,
 *     measured by the client on its responses) and minus that estimate's step, a sixteenth of it
 *     (see {@link BreakwaterClientGate}), at most {@code clientQueueTimeoutNanos} and at least a
 *     tenth of the SLO. The paper fixes the timeout per workload (§5.1; the authors' client
 *     uses 100 µs for a 200 µs SLO); a fixed half of the SLO lets a request that waited that long
 *     still spend d_t to 2·d_t in the server's queue, its service time and an RTT, which together
 *     exceed the SLO wherever the service time's tail or the RTT is not small beside it
 *     (docs/results/simulation.md: Fig. 4 and Fig. 6 needed 50 µs instead of 100 µs; the
 *     robustness matrix, docs/results/robustness.md, measures the rest). {@code false}: the fixed
 *     timeout, as the paper, and {@link #forSlo}'s: with 10,000 clients on four cores at 2× demand
 *     the shorter timeout raised Breakwater's p99 past the SLO (200.8 µs for 200), where the pool's
 *     overshoot, not the client queue, sets the tail; {@link Spillway} turns it on.
 * @param adaptiveRequestBudget beyond the paper, with the adaptive timeout and no fixed {@code
 *     requestBudgetNanos}: every request carries a queueing budget derived from what the client
 *     measures, the SLO less the p99 of what a request needs beyond the queues (its send-to-response
 *     p99 less d_t, the server queue the pool steers to) and less that estimate's step. See {@link
 *     BreakwaterClientGate}; {@link Spillway} turns it on.
 */
public record BreakwaterConfig(double alpha, double beta, long targetDelayNanos,
    long dropThresholdNanos, long controlPeriodNanos, int perSessionCap,
    long clientQueueTimeoutNanos, boolean demandSpeculation, boolean aqm,
    long requestBudgetNanos, boolean adaptiveClientTimeout, boolean adaptiveRequestBudget) {

  /** {@link #requestBudgetNanos} when requests carry no budget: the paper's Breakwater. */
  public static final long NO_REQUEST_BUDGET = Long.MAX_VALUE;

  /** The authors' per-session window limit (SRPC_MAX_WINDOW). */
  public static final int DEFAULT_PER_SESSION_CAP = 64;

  public BreakwaterConfig {
    if (!(alpha > 0) || !(beta > 0)) {
      throw new IllegalArgumentException("alpha and beta must be positive: " + alpha + ", " + beta);
    }
    if (targetDelayNanos <= 0 || dropThresholdNanos <= 0 || controlPeriodNanos <= 0
        || clientQueueTimeoutNanos <= 0) {
      throw new IllegalArgumentException("delays must be positive: target=" + targetDelayNanos
          + " drop=" + dropThresholdNanos + " period=" + controlPeriodNanos
          + " clientTimeout=" + clientQueueTimeoutNanos);
    }
    if (perSessionCap < 1) {
      throw new IllegalArgumentException("perSessionCap must be at least 1: " + perSessionCap);
    }
    if (requestBudgetNanos <= 0) {
      throw new IllegalArgumentException("requestBudgetNanos must be positive (or NO_REQUEST_BUDGET): "
          + requestBudgetNanos);
    }
    if (adaptiveRequestBudget && !adaptiveClientTimeout) {
      throw new IllegalArgumentException("an adaptive request budget needs the adaptive client timeout,"
          + " whose estimate it uses");
    }
  }

  /** As the canonical constructor, with no adaptive request budget. */
  public BreakwaterConfig(double alpha, double beta, long targetDelayNanos,
      long dropThresholdNanos, long controlPeriodNanos, int perSessionCap,
      long clientQueueTimeoutNanos, boolean demandSpeculation, boolean aqm,
      long requestBudgetNanos, boolean adaptiveClientTimeout) {
    this(alpha, beta, targetDelayNanos, dropThresholdNanos, controlPeriodNanos, perSessionCap,
        clientQueueTimeoutNanos, demandSpeculation, aqm, requestBudgetNanos, adaptiveClientTimeout,
        false);
  }

  /** As the canonical constructor, with a fixed client queue timeout (the paper's). */
  public BreakwaterConfig(double alpha, double beta, long targetDelayNanos,
      long dropThresholdNanos, long controlPeriodNanos, int perSessionCap,
      long clientQueueTimeoutNanos, boolean demandSpeculation, boolean aqm,
      long requestBudgetNanos) {
    this(alpha, beta, targetDelayNanos, dropThresholdNanos, controlPeriodNanos, perSessionCap,
        clientQueueTimeoutNanos, demandSpeculation, aqm, requestBudgetNanos, false);
  }

  /** As the canonical constructor, with no request budget and a fixed client queue timeout (the paper's Breakwater). */
  public BreakwaterConfig(double alpha, double beta, long targetDelayNanos,
      long dropThresholdNanos, long controlPeriodNanos, int perSessionCap,
      long clientQueueTimeoutNanos, boolean demandSpeculation, boolean aqm) {
    this(alpha, beta, targetDelayNanos, dropThresholdNanos, controlPeriodNanos, perSessionCap,
        clientQueueTimeoutNanos, demandSpeculation, aqm, NO_REQUEST_BUDGET, false);
  }

  /** Whether requests carry an end-to-end queueing budget ({@link #requestBudgetNanos}). */
  public boolean hasRequestBudget() {
    return requestBudgetNanos != NO_REQUEST_BUDGET;
  }

  /**
   * The paper's defaults for a workload with the given SLO and network RTT. The client queue
   * timeout is half the SLO: a request that has queued that long at the client is unlikely to make
   * its SLO once it is served (the authors' client uses 100 µs for the 200 µs SLO).
   */
  public static BreakwaterConfig forSlo(long sloNanos, long rttNanos) {
    if (sloNanos <= 0 || rttNanos <= 0) {
      throw new IllegalArgumentException("SLO and RTT must be positive: " + sloNanos + ", " + rttNanos);
    }
    long target = sloNanos * 2 / 5;
    return new BreakwaterConfig(0.001, 0.02, target, 2 * target, rttNanos,
        DEFAULT_PER_SESSION_CAP, sloNanos / 2, true, true);
  }

  /** A builder starting from these values. */
  public Builder toBuilder() {
    return new Builder(this);
  }

  /** Builds a {@link BreakwaterConfig}; start from {@link BreakwaterConfig#forSlo}. Not thread-safe. */
  public static final class Builder {
    private double alpha;
    private double beta;
    private long targetDelayNanos;
    private long dropThresholdNanos;
    private long controlPeriodNanos;
    private int perSessionCap;
    private long clientQueueTimeoutNanos;
    private boolean demandSpeculation;
    private boolean aqm;
    private long requestBudgetNanos;
    private boolean adaptiveClientTimeout;
    private boolean adaptiveRequestBudget;

    private Builder(BreakwaterConfig c) {
      alpha = c.alpha;
      beta = c.beta;
      targetDelayNanos = c.targetDelayNanos;
      dropThresholdNanos = c.dropThresholdNanos;
      controlPeriodNanos = c.controlPeriodNanos;
      perSessionCap = c.perSessionCap;
      clientQueueTimeoutNanos = c.clientQueueTimeoutNanos;
      demandSpeculation = c.demandSpeculation;
      aqm = c.aqm;
      requestBudgetNanos = c.requestBudgetNanos;
      adaptiveClientTimeout = c.adaptiveClientTimeout;
      adaptiveRequestBudget = c.adaptiveRequestBudget;
    }

    public Builder alpha(double value) { alpha = value; return this; }

    public Builder beta(double value) { beta = value; return this; }

    /** Sets d_t and moves the drop threshold to 2·d_t; set the threshold afterwards to override. */
    public Builder targetDelayNanos(long value) {
      targetDelayNanos = value;
      dropThresholdNanos = 2 * value;
      return this;
    }

    public Builder dropThresholdNanos(long value) { dropThresholdNanos = value; return this; }

    public Builder controlPeriodNanos(long value) { controlPeriodNanos = value; return this; }

    public Builder perSessionCap(int value) { perSessionCap = value; return this; }

    /**
     * A fixed client queue timeout (the paper's way); turns {@link #adaptiveClientTimeout} off, and
     * with it {@link #adaptiveRequestBudget}.
     */
    public Builder clientQueueTimeoutNanos(long value) {
      clientQueueTimeoutNanos = value;
      adaptiveClientTimeout = false;
      adaptiveRequestBudget = false;
      return this;
    }

    /** See {@link BreakwaterConfig#adaptiveClientTimeout}; the timeout set is then its ceiling. */
    public Builder adaptiveClientTimeout(boolean value) { adaptiveClientTimeout = value; return this; }

    /** See {@link BreakwaterConfig#adaptiveRequestBudget}; a fixed {@link #requestBudgetNanos} takes precedence. */
    public Builder adaptiveRequestBudget(boolean value) { adaptiveRequestBudget = value; return this; }

    public Builder demandSpeculation(boolean value) { demandSpeculation = value; return this; }

    public Builder aqm(boolean value) { aqm = value; return this; }

    /** See {@link BreakwaterConfig#requestBudgetNanos}; {@link #NO_REQUEST_BUDGET} turns it off. */
    public Builder requestBudgetNanos(long value) { requestBudgetNanos = value; return this; }

    /** @throws IllegalArgumentException if a value is out of range */
    public BreakwaterConfig build() {
      return new BreakwaterConfig(alpha, beta, targetDelayNanos, dropThresholdNanos,
          controlPeriodNanos, perSessionCap, clientQueueTimeoutNanos, demandSpeculation, aqm,
          requestBudgetNanos, adaptiveClientTimeout, adaptiveRequestBudget);
    }
  }

  @Override
  public String toString() {
    return "BreakwaterConfig[alpha=" + alpha + ", beta=" + beta
        + ", targetDelay=" + targetDelayNanos / 1000.0 + "us"
        + ", dropThreshold=" + dropThresholdNanos / 1000.0 + "us"
        + ", period=" + controlPeriodNanos / 1000.0 + "us, perSessionCap=" + perSessionCap
        + ", clientQueueTimeout=" + (adaptiveClientTimeout ? "adaptive, at most " : "")
        + clientQueueTimeoutNanos / 1000.0 + "us"
        + ", demandSpeculation=" + demandSpeculation + ", aqm=" + aqm
        + (hasRequestBudget() ? ", requestBudget=" + requestBudgetNanos / 1000.0 + "us"
            : adaptiveRequestBudget ? ", requestBudget=adaptive" : "") + "]";
  }
}
