package io.spillway.credit;

/**
 * Protego's performance-driven credit management (protego-nsdi23 §3.1, Algorithm 1) as pure
 * functions: numbers in, decision out, no state, no locks, no clock. {@link ProtegoServerGate}
 * calls these once per iteration; the unit tests feed them literal numbers.
 *
 * <pre>
 * Algorithm 1, line by line (protego-nsdi23.txt):
 *    1  t_e  efficiency threshold                       ProtegoConfig.efficiencyThreshold (10 %)
 *    2  t_d  maximum drop threshold                     ProtegoConfig.maxDropRate (100 %)
 *    3  C    size of the credit pool                    BreakwaterServerGate.poolSize()
 *    4  in_{last,cur}  incoming requests per iteration  inLast, inCur
 *    5  out_{last,cur} outgoing responses per iteration outLast, outCur
 *    6  drop_cur  request drops in this iteration       dropCur
 *    7  a    increment step size                        increment(), §3.3: 0.1 % of sessions, ≥ 1
 *    8  d    multiplicative decrement factor            ProtegoConfig.decreaseFactor (2 %)
 *   10  repeat every 4 · end-to-end RTT                 ProtegoServerGate's control loop
 *   11  if drop_cur &gt; t_d · in_cur                       → {@link Decision#SHRINK_DROPS}
 *   12      C ← (1 − d) · C
 *   13  else if (in_cur − in_last)(out_cur − out_last) &gt; 0
 *   14      if |out_cur − out_last| &gt; t_e · |in_cur − in_last|   → {@link Decision#GROW}
 *   15          C ← C + a
 *   16      else                                        → {@link Decision#SHRINK_NO_GAIN}
 *   17          C ← (1 − d) · C
 *   19  else                                            → {@link Decision#SHRINK_NO_TREND}
 *   20      C ← (1 − d) · C
 *   22  C ← max(C, C_min)                               {@link CreditPolicy#clampPoolSize}
 *   23  C ← min(C, C_max)                               (C_min: parallelism; C_max: cap · n_c)
 *   24  in_last ← in_cur; 25 out_last ← out_cur          ProtegoServerGate, after the decision
 * </pre>
 *
 * <p>Line 13 asks that load and throughput moved the same way; line 14 that throughput moved by
 * more than t_e of the change in load, i.e. the efficiency e = Δout/Δin of §3.1 exceeds t_e. The
 * products are taken in {@code double} so that no count overflows. Line 12's (1 − d)·C is rounded
 * down, as {@link CreditPolicy#nextPoolSize} rounds Breakwater's decrease.
 *
 * <p>Inputs may be counts per iteration or rates; only their ratios matter, provided {@code in},
 * {@code out} and {@code drop} share one unit (the gate passes rates, so that iterations of
 * slightly different lengths compare fairly).
 */
final class ProtegoPolicy {

  /** Which branch of Algorithm 1 an iteration took. */
  enum Decision {
    /** Line 15: throughput rose (or fell) with load by more than t_e of it: C ← C + a. */
    GROW,
    /** Line 12: drops above t_d of the incoming load: C ← (1 − d)·C. */
    SHRINK_DROPS,
    /** Line 17: load and throughput moved together, but throughput by t_e of load or less. */
    SHRINK_NO_GAIN,
    /** Line 20: load and throughput did not move the same way (or one did not move at all). */
    SHRINK_NO_TREND;

    /** Whether C grows. */
    boolean grows() {
      return this == GROW;
    }
  }

  private ProtegoPolicy() { }

  /**
   * Lines 11–21 of Algorithm 1: which way the pool moves.
   *
   * @param inCur in_cur, requests admitted in this iteration
   * @param inLast in_last, requests admitted in the previous one
   * @param outCur out_cur, successful responses in this iteration (throughput)
   * @param outLast out_last
   * @param dropCur drop_cur, admitted requests dropped in this iteration
   * @param efficiencyThreshold t_e, in [0, 1]
   * @param maxDropRate t_d, in [0, 1]
   */
  static Decision decide(double inCur, double inLast, double outCur, double outLast,
      double dropCur, double efficiencyThreshold, double maxDropRate) {
    if (dropCur > maxDropRate * inCur) {                                        // line 11
      return Decision.SHRINK_DROPS;
    }
    double deltaIn = inCur - inLast;
    double deltaOut = outCur - outLast;
    if (deltaIn * deltaOut > 0) {                                                // line 13
      if (Math.abs(deltaOut) > efficiencyThreshold * Math.abs(deltaIn)) {       // line 14
        return Decision.GROW;
      }
      return Decision.SHRINK_NO_GAIN;
    }
    return Decision.SHRINK_NO_TREND;
  }

  /**
   * a, the additive step of line 15: 0.1 % of the client sessions (§3.3 "Universal parameters"),
   * at least one credit (§5 "Parameter settings" uses a = 1 with 1,000 clients).
   */
  static long increment(double increaseFraction, int sessions) {
    return CreditPolicy.additiveIncrease(increaseFraction, sessions);
  }

  /**
   * One iteration's new C before clamping (lines 12, 15, 17, 20).
   *
   * @param pool C now
   * @param decision from {@link #decide}
   * @param increment a, from {@link #increment}
   * @param decreaseFactor d, in (0, 1)
   */
  static long nextPoolSize(long pool, Decision decision, long increment, double decreaseFactor) {
    if (decision.grows()) {
      return pool + increment;
    }
    return (long) ((1.0 - decreaseFactor) * pool);
  }
}
