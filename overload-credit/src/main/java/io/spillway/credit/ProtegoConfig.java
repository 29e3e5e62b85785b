package io.spillway.credit;

/**
 * Protego's admission-control parameters (protego-nsdi23 §3.3 "System Parameters" and §5
 * "Parameter settings"). {@link #forSlo} gives the defaults: the authors' iteration
 * ({@link Rule#AUTHORS}), t_e = 10 %, t_d = 100 %, a = 0.1 % of the client sessions (at least 1;
 * §5 uses a = 1 with 1,000 clients), d = 2 % (used by {@link Rule#PAPER} only), one iteration
 * every 4 end-to-end RTTs (Algorithm 1 line 10 and footnote 1), the first RTT of each iteration
 * left out of the measures (§4 "Performance measurement"), and an initial pool of 10 credits per
 * core (the authors' server).
 *
 * <p>The per-session window cap and the client queue timeout belong to the credit machinery Protego
 * takes from Breakwater (§3.1 "Operation"); they have Breakwater's values.
 *
 * <p>Immutable and thread-safe.
 *
 * @param rule which iteration decides C: the authors' code (default) or Algorithm 1 as printed
 * @param efficiencyThreshold t_e in [0, 1]: grow only if Δout &gt; t_e · Δin (Alg. 1 line 14; the
 *     authors' SRPC_CM_SLOPE_INV is 1/t_e)
 * @param maxDropRate t_d in [0, 1]: shrink if drops exceed t_d · in (Alg. 1 line 11)
 * @param increaseFraction a as a fraction of the client sessions (Alg. 1 line 15; §3.3: 0.001; the
 *     authors' SBW_AI); under {@link Rule#AUTHORS} also the size of the additive decrease
 * @param decreaseFactor d in (0, 1): C ← (1 − d)·C (Alg. 1 lines 12, 17, 20; §3.3: 0.02); unused
 *     by {@link Rule#AUTHORS}, whose decrease is additive
 * @param rttsPerIteration iteration length in end-to-end RTTs (Alg. 1 line 10: 4); at least 2,
 *     since the first RTT of an iteration is not measured
 * @param initialRttNanos the end-to-end RTT assumed until the first credit-id samples arrive;
 *     the defaults use the unloaded one, {@code max(network RTT, SLO/10)}, since Spillway's SLO is
 *     10 × (mean service + RTT) (DESIGN.md "Measures", Breakwater §5.1; Protego §5 sets its target
 *     delay the same way)
 * @param maxRttNanos RTT samples longer than this are discarded: a response later than the SLO
 *     is no "successful response return" (§3.1); the defaults use the SLO
 * @param initialPoolPerCore C before the first iteration, per core (the authors' server sets
 *     {@code 10 * runtime_max_cores()} when the first session arrives)
 * @param perSessionCap the largest window one session may hold (Breakwater's SRPC_MAX_WINDOW, 64)
 * @param clientQueueTimeoutNanos how long a request may wait in the client queue
 */
public record ProtegoConfig(Rule rule, double efficiencyThreshold, double maxDropRate,
    double increaseFraction, double decreaseFactor, int rttsPerIteration, long initialRttNanos,
    long maxRttNanos, int initialPoolPerCore, int perSessionCap, long clientQueueTimeoutNanos) {

  /**
   * Which iteration sets the credit pool. Both share the measures, the iteration timing and the
   * credit machinery; they differ in lines 11–21 of Algorithm 1 and in the steps
   * ({@link ProtegoPolicy} has the two side by side).
   */
  public enum Rule {
    /**
     * The Protego authors' server, {@code srpc_update_credit_pool} in {@code bw2_server.c}: phases
     * by the sign of Δin, grow only while the pool is fully handed out, additive steps both ways;
     * and, from {@code srpc_update_credit}, a session keeps its last credit unless dropped. The
     * default: Algorithm 1 as printed starves with 1,000 clients (ProtegoPolicy's javadoc).
     */
    AUTHORS,
    /** Algorithm 1 as printed in protego-nsdi23 §3.1: AIMD with C ← (1 − d)·C. */
    PAPER
  }

  /** The authors' initial pool per core ({@code 10 * runtime_max_cores()} in bw2_server.c). */
  public static final int DEFAULT_INITIAL_POOL_PER_CORE = 10;

  public ProtegoConfig {
    if (rule == null) {
      throw new NullPointerException("rule");
    }
    if (!(efficiencyThreshold >= 0 && efficiencyThreshold <= 1)
        || !(maxDropRate >= 0 && maxDropRate <= 1)) {
      throw new IllegalArgumentException("t_e and t_d must be in [0, 1]: " + efficiencyThreshold
          + ", " + maxDropRate);
    }
    if (!(increaseFraction > 0) || !(decreaseFactor > 0 && decreaseFactor < 1)) {
      throw new IllegalArgumentException("a must be positive and d in (0, 1): "
          + increaseFraction + ", " + decreaseFactor);
    }
    if (rttsPerIteration < 2) {
      throw new IllegalArgumentException("an iteration needs at least 2 RTTs: " + rttsPerIteration);
    }
    if (initialRttNanos <= 0 || maxRttNanos < initialRttNanos || clientQueueTimeoutNanos <= 0) {
      throw new IllegalArgumentException("need 0 < initialRtt <= maxRtt and a positive client"
          + " timeout: " + initialRttNanos + ", " + maxRttNanos + ", " + clientQueueTimeoutNanos);
    }
    if (initialPoolPerCore < 1 || perSessionCap < 1) {
      throw new IllegalArgumentException("initialPoolPerCore and perSessionCap must be at least 1: "
          + initialPoolPerCore + ", " + perSessionCap);
    }
  }

  /**
   * The defaults for a workload with the given SLO and network RTT. The initial end-to-end RTT is
   * {@code max(rtt, SLO/10)}: with the SLO at 10 × (mean service + RTT), SLO/10 is the unloaded
   * credit-to-response time, which the network RTT alone underestimates by the service time. The
   * client queue timeout is half the SLO, as {@link BreakwaterConfig#forSlo} sets it.
   */
  public static ProtegoConfig forSlo(long sloNanos, long rttNanos) {
    if (sloNanos <= 0 || rttNanos <= 0 || rttNanos > sloNanos) {
      throw new IllegalArgumentException("need 0 < RTT <= SLO: " + rttNanos + ", " + sloNanos);
    }
    return new ProtegoConfig(Rule.AUTHORS, 0.10, 1.00, 0.001, 0.02, 4,
        Math.max(rttNanos, sloNanos / 10), sloNanos, DEFAULT_INITIAL_POOL_PER_CORE,
        BreakwaterConfig.DEFAULT_PER_SESSION_CAP, sloNanos / 2);
  }

  /** These values with another rule. */
  public ProtegoConfig withRule(Rule value) {
    return new ProtegoConfig(value, efficiencyThreshold, maxDropRate, increaseFraction,
        decreaseFactor, rttsPerIteration, initialRttNanos, maxRttNanos, initialPoolPerCore,
        perSessionCap, clientQueueTimeoutNanos);
  }

  /** These values with another t_e (the §5.4 Fig. 12 sweep runs 1 %–50 %). */
  public ProtegoConfig withEfficiencyThreshold(double value) {
    return new ProtegoConfig(rule, value, maxDropRate, increaseFraction, decreaseFactor,
        rttsPerIteration, initialRttNanos, maxRttNanos, initialPoolPerCore, perSessionCap,
        clientQueueTimeoutNanos);
  }

  /** These values with another t_d. */
  public ProtegoConfig withMaxDropRate(double value) {
    return new ProtegoConfig(rule, efficiencyThreshold, value, increaseFraction, decreaseFactor,
        rttsPerIteration, initialRttNanos, maxRttNanos, initialPoolPerCore, perSessionCap,
        clientQueueTimeoutNanos);
  }

  /** These values with another initial pool per core. */
  public ProtegoConfig withInitialPoolPerCore(int value) {
    return new ProtegoConfig(rule, efficiencyThreshold, maxDropRate, increaseFraction,
        decreaseFactor, rttsPerIteration, initialRttNanos, maxRttNanos, value, perSessionCap,
        clientQueueTimeoutNanos);
  }

  /** These values with another client queue timeout (how long a request may wait for a credit). */
  public ProtegoConfig withClientQueueTimeout(long nanos) {
    return new ProtegoConfig(rule, efficiencyThreshold, maxDropRate, increaseFraction,
        decreaseFactor, rttsPerIteration, initialRttNanos, maxRttNanos, initialPoolPerCore,
        perSessionCap, nanos);
  }

  /**
   * The Breakwater parameters of the shared credit machinery: demand speculation with overcommit
   * (lazy distribution, eq. 4–6, explicit credits to drained sessions), no delay-based AQM (Protego
   * sheds with ASQM inside the handler instead, §3.2). Breakwater's own control loop is never
   * started by {@link ProtegoServerGate}, so its delay target and period are placeholders.
   */
  BreakwaterConfig creditMachinery() {
    return new BreakwaterConfig(0.001, 0.02, maxRttNanos, 2 * maxRttNanos, initialRttNanos,
        perSessionCap, clientQueueTimeoutNanos, true, false);
  }

  @Override
  public String toString() {
    return "ProtegoConfig[rule=" + rule + ", t_e=" + efficiencyThreshold + ", t_d=" + maxDropRate
        + ", a=" + increaseFraction + "·n_c, d=" + decreaseFactor
        + ", iteration=" + rttsPerIteration + "·RTT, initialRtt=" + initialRttNanos / 1000.0
        + "us, maxRtt=" + maxRttNanos / 1000.0 + "us, initialPool=" + initialPoolPerCore
        + "·cores, perSessionCap=" + perSessionCap
        + ", clientQueueTimeout=" + clientQueueTimeoutNanos / 1000.0 + "us]";
  }
}
