package io.spillway.credit;

/**
 * Protego's performance-driven credit management (protego-nsdi23 §3.1, Algorithm 1) as pure
 * functions: numbers in, decision out, no state, no locks, no clock. {@link ProtegoServerGate}
 * calls these once per iteration; the unit tests feed them literal numbers. Two rules
 * ({@link ProtegoConfig.Rule}): the iteration of the authors' server (the default) and Algorithm 1
 * as the paper prints it.
 *
 * <pre>
 * Algorithm 1, line by line (protego-nsdi23.txt)       here; [A] = the authors' code differs
 *    1  t_e  efficiency threshold                       ProtegoConfig.efficiencyThreshold (10 %)
 *    2  t_d  maximum drop threshold                     ProtegoConfig.maxDropRate (100 %)
 *    3  C    size of the credit pool                    BreakwaterServerGate.poolSize()
 *    4  in_{last,cur}  incoming requests per iteration  inLast, inCur
 *    5  out_{last,cur} outgoing responses per iteration outLast, outCur
 *    6  drop_cur  request drops in this iteration       dropCur
 *    7  a    increment step size                        {@link #increment}: 0.1 % of sessions, ≥ 1
 *    8  d    multiplicative decrement factor            ProtegoConfig.decreaseFactor (2 %)   [A5]
 *   10  repeat every 4 · end-to-end RTT                 ProtegoServerGate's control loop
 *   11  if drop_cur &gt; t_d · in_cur                       → {@link Decision#SHRINK_DROPS}       [A6]
 *   12      C ← (1 − d) · C
 *   13  else if (in_cur − in_last)(out_cur − out_last) &gt; 0                                   [A1–A3]
 *   14      if |out_cur − out_last| &gt; t_e · |in_cur − in_last|   → {@link Decision#GROW}       [A2]
 *   15          C ← C + a                                                                 [A4]
 *   16      else                                        → {@link Decision#SHRINK_NO_GAIN}
 *   17          C ← (1 − d) · C                                                           [A5]
 *   19  else                                            → {@link Decision#SHRINK_NO_TREND}
 *   20      C ← (1 − d) · C                                                               [A5]
 *   22  C ← max(C, C_min)                               {@link CreditPolicy#clampPoolSize}
 *   23  C ← min(C, C_max)                               (C_min: parallelism; C_max: 64 · n_c)
 *   24  in_last ← in_cur; 25 out_last ← out_cur          ProtegoServerGate, after the decision
 * </pre>
 *
 * <p>The authors' server ({@code srpc_update_credit_pool}, {@code incr_credit_pool} and
 * {@code decr_credit_pool} in {@code breakwater/src/bw2_server.c} of GT-ANSR-Lab/svalinn-shenango,
 * since commit d67e7d0 "Use Inho's protego credit pool update code and not the paper's
 * pseudocode"; the same code is in ppppaidy/Caladan-Adapted) departs from the printed lines:
 * <pre>
 * [A1] in_cur = 0 grows the pool ({@link Decision#GROW_IDLE}): "if (in_cnt == 0)
 *      new_cp = incr_credit_pool(0, 0)". An idle server has nothing to measure; shrinking it
 *      (line 20, product 0) would leave the first requests after a lull without credits.
 * [A2] Two phases by the sign of Δin instead of the sign of the product (line 13):
 *      "INCR phase", in_cur ≥ in_last: grow iff out_cur &gt; out_last and
 *        SLOPE_INV·(out_cur − out_last) ≥ in_cur − in_last;
 *      "DECR phase", in_cur &lt; in_last: grow iff out_last &gt; out_cur and
 *        SLOPE_INV·(out_last − out_cur) &gt; in_last − in_cur;
 *      with SLOPE_INV = 1/t_e (SRPC_CM_SLOPE_INV = 10 with SRPC_CM_SLOPE_THRESH = 0.1 in the
 *      Svalinn evaluation configs, scripts/ovld_configs/bw2_config.h). This is lines 13–14 with
 *      one difference: Δin = 0 with Δout &gt; 0 grows (the product is 0, so line 13 shrinks); and
 *      the INCR comparison is ≥, the DECR one &gt;.
 * [A3] A growing branch also needs the pool to be fully handed out, "credit_used &gt;= new_cp"
 *      (credit_used = the credits held by sessions, C_issued; new_cp = C before the update);
 *      otherwise the pool shrinks ({@link Decision#SHRINK_POOL_UNUSED}). Credits nobody holds
 *      cannot have caused the gain, and growing an unused pool only stores credits that a later
 *      burst would spend at once.
 * [A4] C ← C + max(a·n_c, 1) with the fractional part carried to the next increase
 *      ("credit_carry += MAX(num_sess * SBW_AI, 1.0)"; its integer part is added).
 * [A5] Every decrease is additive, C ← C − max(⌊a·n_c⌋, 1), and clears the carry
 *      ("credit_pool -= MAX(1, (int)(num_sess * SBW_AI)); credit_carry = 0.0"), not (1 − d)·C.
 * [A6] The drop check is commented out (drops are shed at admission by the delay budget and
 *      counted in in_cur but not out_cur). Both rules keep line 11 here: with the default
 *      t_d = 100 % it never fires, since the drops are a subset of the incoming requests.
 * [A7] Not in the iteration but with it: the per-session distribution ({@code srpc_update_credit})
 *      lets a session whose credit would fall to 0 on a response that is not a drop keep
 *      max(unused/n_c, 1) ("prioritize the session"), so only dropped sessions drain. [A3] needs
 *      it: [A3] holds C at about C_issued, which is one credit per idle session, and without [A7]
 *      every dip of C below that drains idle sessions, whose next requests wait an iteration
 *      for an explicit credit (ProtegoContractTest: 17 of 10,000 requests expired at half load
 *      with 50 clients). The price: C then bounds only the credits beyond one per session, and a
 *      server that never drops (no ASQM, no AQM) cannot shed; the authors' server always has the
 *      admission-time drop on its delay budget (srpc_recv_one). {@link ProtegoServerGate} turns
 *      it on with this rule ({@link BreakwaterServerGate}'s package-private constructor).
 * </pre>
 *
 * <p>Why the authors' rule is the default: with 1,000 sessions the printed rule starves
 * (scenarios/protego-two-path: 0.03 × capacity served at 1.4× demand, 98 % of requests
 * expired at the clients). A pool that one credit barely moves gives Δin and Δout that are
 * measurement noise, and at a steady load they agree in sign about half the time; then each
 * (1 − d) takes 2 % of C while each growth adds a = 1, so C settles where 0.02·C ≈ 1, a few
 * credits, whatever it starts at, far below the one credit per active session that 1,000 sessions
 * need. The authors' additive steps make the pool a random walk whose drift is the sign of the
 * measured slope, so noise alone neither grows nor collapses it. Both halves are needed there:
 * the authors' decisions with (1 − d) still starve (0.08–0.2 × capacity), and the printed
 * decisions with additive steps starve at 0.5× and 1× (0.003), where iterations see so few
 * requests that in_cur = 0 or Δin = 0 is common and line 20 shrinks on each ([A1], [A2]).
 *
 * <p>Inputs may be counts per iteration or rates; only their ratios matter, provided {@code in},
 * {@code out} and {@code drop} share one unit (the gate passes rates, so that iterations of
 * slightly different lengths compare fairly). Products are taken in {@code double}, so no count
 * overflows. Line 12's (1 − d)·C is rounded down, as {@link CreditPolicy#nextPoolSize} rounds
 * Breakwater's decrease.
 */
final class ProtegoPolicy {

  /** Which branch an iteration took. */
  enum Decision {
    /** [A1] Nothing came in: grow (authors' rule only). */
    GROW_IDLE,
    /** Line 15 / [A2]: throughput moved with load by more than t_e of it: grow by a. */
    GROW,
    /** Line 12: drops above t_d of the incoming load. */
    SHRINK_DROPS,
    /** Line 17: load and throughput moved together, but throughput by t_e of load or less. */
    SHRINK_NO_GAIN,
    /** Line 20 / [A2]: throughput did not move the way load did (or neither moved). */
    SHRINK_NO_TREND,
    /** [A3] The slope asked for growth, but the pool was not fully handed out (authors' rule). */
    SHRINK_POOL_UNUSED;

    /** Whether C grows. */
    boolean grows() {
      return this == GROW || this == GROW_IDLE;
    }
  }

  /** A pool size and the authors' fractional carry of the increase ([A4]). */
  record Step(long pool, double carry) { }

  private ProtegoPolicy() { }

  /**
   * Lines 11–21 of Algorithm 1 as printed ({@link ProtegoConfig.Rule#PAPER}).
   *
   * @param inCur in_cur, requests admitted in this iteration
   * @param inLast in_last, requests admitted in the previous one
   * @param outCur out_cur, successful responses in this iteration (throughput)
   * @param outLast out_last
   * @param dropCur drop_cur, admitted requests dropped in this iteration
   * @param efficiencyThreshold t_e, in [0, 1]
   * @param maxDropRate t_d, in [0, 1]
   */
  static Decision decidePaper(double inCur, double inLast, double outCur, double outLast,
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
   * The authors' iteration ({@link ProtegoConfig.Rule#AUTHORS}; bw2_server.c,
   * {@code srpc_update_credit_pool}): line 11, then [A1]–[A3].
   *
   * @param issued C_issued, credits held by sessions when the iteration ends (credit_used)
   * @param pool C before this update (new_cp as read before the decision)
   * @see #decidePaper for the other parameters
   */
  static Decision decideAuthors(double inCur, double inLast, double outCur, double outLast,
      double dropCur, long issued, long pool, double efficiencyThreshold, double maxDropRate) {
    if (dropCur > maxDropRate * inCur) {                                        // line 11 [A6]
      return Decision.SHRINK_DROPS;
    }
    if (inCur == 0) {                                                            // [A1]
      return Decision.GROW_IDLE;
    }
    double slopeInverse = 1.0 / efficiencyThreshold; // SRPC_CM_SLOPE_INV; ∞ for t_e = 0
    if (inCur >= inLast) {                                                       // INCR phase
      if (!(outCur > outLast)) {
        return Decision.SHRINK_NO_TREND;
      }
      if (!(slopeInverse * (outCur - outLast) >= inCur - inLast)) {
        return Decision.SHRINK_NO_GAIN;
      }
    } else {                                                                     // DECR phase
      if (!(outLast > outCur)) {
        return Decision.SHRINK_NO_TREND;
      }
      if (!(slopeInverse * (outLast - outCur) > inLast - inCur)) {
        return Decision.SHRINK_NO_GAIN;
      }
    }
    return issued >= pool ? Decision.GROW : Decision.SHRINK_POOL_UNUSED;        // [A3]
  }

  /**
   * a, the additive step of line 15: 0.1 % of the client sessions (§3.3 "Universal parameters"),
   * at least one credit (§5 "Parameter settings" uses a = 1 with 1,000 clients).
   */
  static long increment(double increaseFraction, int sessions) {
    return CreditPolicy.additiveIncrease(increaseFraction, sessions);
  }

  /**
   * One iteration's new C under the printed rule, before clamping (lines 12, 15, 17, 20).
   *
   * @param pool C now
   * @param decision from {@link #decidePaper}
   * @param increment a, from {@link #increment}
   * @param decreaseFactor d, in (0, 1)
   */
  static long nextPoolSize(long pool, Decision decision, long increment, double decreaseFactor) {
    if (decision.grows()) {
      return pool + increment;
    }
    return (long) ((1.0 - decreaseFactor) * pool);
  }

  /**
   * One iteration's new C under the authors' rule, before clamping: {@code incr_credit_pool} [A4]
   * or {@code decr_credit_pool} [A5].
   *
   * @param pool C now
   * @param carry the fraction of a credit carried from earlier increases, in [0, 1)
   * @param decision from {@link #decideAuthors}
   * @param increaseFraction a as a fraction of the sessions (SBW_AI, 0.001)
   * @param sessions n_c
   */
  static Step authorsStep(long pool, double carry, Decision decision, double increaseFraction,
      int sessions) {
    if (decision.grows()) {
      double owed = carry + Math.max(sessions * increaseFraction, 1.0);
      long whole = (long) owed;
      return new Step(pool + whole, owed - whole);
    }
    return new Step(pool - Math.max((long) (sessions * increaseFraction), 1L), 0.0);
  }
}
