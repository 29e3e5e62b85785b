package io.spillway.credit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.credit.ProtegoPolicy.Decision;
import io.spillway.credit.ProtegoPolicy.Step;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * Protego's credit-pool rules with literal numbers: Algorithm 1 of protego-nsdi23 as printed, and
 * the authors' iteration (bw2_server.c, srpc_update_credit_pool, incr_credit_pool,
 * decr_credit_pool). Defaults from §3.3 and §5.
 */
class ProtegoPolicyTest {

  private static final double TE = 0.10; // §3.3: "an efficiency threshold of 10% by default"
  private static final double TD = 1.00; // §3.3: maximum drop rate 100 %
  private static final double D = 0.02;  // §3.3: "d as 2%"
  private static final double A = 0.001; // §3.3: a = 0.1 % of the sessions; SBW_AI

  @Nested
  class Paper {

    @Test
    void throughputFollowingLoadGrowsThePoolByA() {
      // Δin = 6000 − 5000 = 1000, Δout = 5200 − 4000 = 1200: same sign (line 13),
      // |1200| > 0.1·|1000| (line 14) → C ← C + a (line 15)
      assertEquals(Decision.GROW, ProtegoPolicy.decidePaper(6_000, 5_000, 5_200, 4_000, 0, TE, TD));
      assertEquals(501, ProtegoPolicy.nextPoolSize(500, Decision.GROW, 1, D));
      assertEquals(510, ProtegoPolicy.nextPoolSize(500, Decision.GROW, 10, D));
    }

    @Test
    void throughputFallingWithLoadAlsoGrowsThePool() {
      // Δin = −1000, Δout = −800: the product is positive and |−800| > 0.1·|−1000|. Load fell and
      // throughput fell almost as much: the server is on the steep part of the curve (line 15).
      assertEquals(Decision.GROW, ProtegoPolicy.decidePaper(4_000, 5_000, 3_200, 4_000, 0, TE, TD));
    }

    @Test
    void aGainOfAtMostTeOfTheLoadShrinksThePool() {
      // Δin = 1000, Δout = 100: 100 > 0.1·1000 is false (line 14) → line 17
      assertEquals(Decision.SHRINK_NO_GAIN,
          ProtegoPolicy.decidePaper(6_000, 5_000, 4_100, 4_000, 0, TE, TD));
      // Δout = 101 is just above the threshold
      assertEquals(Decision.GROW, ProtegoPolicy.decidePaper(6_000, 5_000, 4_101, 4_000, 0, TE, TD));
      // C ← (1 − 0.02)·1000 = 980
      assertEquals(980, ProtegoPolicy.nextPoolSize(1_000, Decision.SHRINK_NO_GAIN, 1, D));
    }

    @Test
    void loadAndThroughputMovingApartOrStandingStillShrinkThePool() {
      // Δin = +1000, Δout = −200: product negative (line 13 fails) → line 20
      assertEquals(Decision.SHRINK_NO_TREND,
          ProtegoPolicy.decidePaper(6_000, 5_000, 3_800, 4_000, 0, TE, TD));
      // no change at all: the product is zero → line 20
      assertEquals(Decision.SHRINK_NO_TREND,
          ProtegoPolicy.decidePaper(5_000, 5_000, 4_000, 4_000, 0, TE, TD));
      // load unchanged, throughput up: still a zero product → line 20
      assertEquals(Decision.SHRINK_NO_TREND,
          ProtegoPolicy.decidePaper(5_000, 5_000, 4_100, 4_000, 0, TE, TD));
      // nothing came in at all: line 20 as well
      assertEquals(Decision.SHRINK_NO_TREND, ProtegoPolicy.decidePaper(0, 0, 0, 0, 0, TE, TD));
      // (1 − 0.02)·10 = 9.8, rounded down
      assertEquals(9, ProtegoPolicy.nextPoolSize(10, Decision.SHRINK_NO_TREND, 1, D));
    }

    @Test
    void dropsAboveTdOfTheIncomingLoadShrinkThePoolWhateverTheSlope() {
      // t_d = 50 %: in_cur = 6000, drops 3001 > 0.5·6000 (line 11) → line 12, although the slope
      // alone would grow the pool
      assertEquals(Decision.SHRINK_DROPS,
          ProtegoPolicy.decidePaper(6_000, 5_000, 5_200, 4_000, 3_001, TE, 0.5));
      assertEquals(Decision.GROW,
          ProtegoPolicy.decidePaper(6_000, 5_000, 5_200, 4_000, 3_000, TE, 0.5));
      // with the default t_d = 100 % the drop cap never binds while drops ⊆ incoming requests
      assertEquals(Decision.GROW,
          ProtegoPolicy.decidePaper(6_000, 5_000, 5_200, 4_000, 6_000, TE, TD));
      assertEquals(980, ProtegoPolicy.nextPoolSize(1_000, Decision.SHRINK_DROPS, 1, D));
    }

    @Test
    void oneShrinkUndoesTwentyGrowthsAtAThousandCredits() {
      // The starvation of Algorithm 1 as printed, in numbers: at C = 1000 with 1,000 sessions a = 1, and one
      // (1 − d) takes 20 credits. Noise that shrinks half the time drives C down to where
      // 0.02·C ≈ 1.
      long c = 1_000;
      c = ProtegoPolicy.nextPoolSize(c, Decision.SHRINK_NO_TREND, 1, D);
      assertEquals(980, c);
      for (int i = 0; i < 19; i++) {
        c = ProtegoPolicy.nextPoolSize(c, Decision.GROW, 1, D);
      }
      assertEquals(999, c, "19 growths do not recover one shrink");
      assertEquals(49, ProtegoPolicy.nextPoolSize(50, Decision.SHRINK_NO_TREND, 1, D),
          "at C = 50 one shrink is one credit: where 1:1 noise settles");
    }
  }

  @Nested
  class Authors {

    private Decision decide(double inCur, double inLast, double outCur, double outLast,
        long issued, long pool) {
      return ProtegoPolicy.decideAuthors(inCur, inLast, outCur, outLast, 0, issued, pool, TE, TD);
    }

    @Test
    void nothingComingInGrowsThePool() {
      // [A1] "if (in_cnt == 0) new_cp = incr_credit_pool(0, 0)": even with the pool unused and
      // throughput down from last time (the paper's line 20 would shrink)
      assertEquals(Decision.GROW_IDLE, decide(0, 50, 0, 40, 10, 100));
      assertEquals(Decision.GROW_IDLE, decide(0, 0, 0, 0, 0, 4));
      assertEquals(Decision.SHRINK_NO_TREND, ProtegoPolicy.decidePaper(0, 0, 0, 0, 0, TE, TD));
    }

    @Test
    void incrPhaseGrowsWhenThroughputRoseByAtLeastTeOfTheLoad() {
      // in 60 ≥ 50: INCR phase. out 45 > 40 and 10·5 = 50 ≥ 10 → grow
      assertEquals(Decision.GROW, decide(60, 50, 45, 40, 100, 100));
      // Δin = 50: Δout = 5 is exactly t_e of it, 10·5 ≥ 50 → grow (≥; line 14's > would shrink)
      assertEquals(Decision.GROW, decide(100, 50, 45, 40, 100, 100));
      assertEquals(Decision.SHRINK_NO_GAIN, ProtegoPolicy.decidePaper(100, 50, 45, 40, 0, TE, TD));
      // Δout = 4: 10·4 = 40 < 50 → shrink
      assertEquals(Decision.SHRINK_NO_GAIN, decide(100, 50, 44, 40, 100, 100));
    }

    @Test
    void incrPhaseShrinksWhenThroughputDidNotRise() {
      assertEquals(Decision.SHRINK_NO_TREND, decide(60, 50, 40, 40, 100, 100));
      assertEquals(Decision.SHRINK_NO_TREND, decide(60, 50, 39, 40, 100, 100));
    }

    @Test
    void unchangedLoadWithRisingThroughputGrows() {
      // in = in_last is the INCR phase: out 41 > 40 and 10·1 ≥ 0 → grow. The paper's product
      // (0)(+1) is not positive: line 20.
      assertEquals(Decision.GROW, decide(50, 50, 41, 40, 100, 100));
      assertEquals(Decision.SHRINK_NO_TREND, ProtegoPolicy.decidePaper(50, 50, 41, 40, 0, TE, TD));
      // nothing moved at all: shrink under both rules
      assertEquals(Decision.SHRINK_NO_TREND, decide(50, 50, 40, 40, 100, 100));
    }

    @Test
    void decrPhaseGrowsWhenThroughputFellByMoreThanTeOfTheLoad() {
      // in 40 < 50: DECR phase. out 30 < 40 and 10·10 = 100 > 10 → grow (load is still
      // turned into throughput: the pool shrank below what the server can serve)
      assertEquals(Decision.GROW, decide(40, 50, 30, 40, 100, 100));
      // Δin = −10, Δout = −1: 10·1 > 10 is false (strict here, unlike the INCR phase) → shrink
      assertEquals(Decision.SHRINK_NO_GAIN, decide(40, 50, 39, 40, 100, 100));
      assertEquals(Decision.GROW, decide(40, 50, 38, 40, 100, 100));
    }

    @Test
    void decrPhaseShrinksWhenThroughputHeldOrRose() {
      assertEquals(Decision.SHRINK_NO_TREND, decide(40, 50, 40, 40, 100, 100));
      assertEquals(Decision.SHRINK_NO_TREND, decide(40, 50, 45, 40, 100, 100));
    }

    @Test
    void growthNeedsThePoolFullyHandedOut() {
      // [A3] "credit_used >= new_cp": 99 credits held of 100 → shrink although the slope says grow
      assertEquals(Decision.SHRINK_POOL_UNUSED, decide(60, 50, 45, 40, 99, 100));
      assertEquals(Decision.SHRINK_POOL_UNUSED, decide(40, 50, 30, 40, 99, 100));
      // held = pool, or more (overcommitted windows) → grow
      assertEquals(Decision.GROW, decide(60, 50, 45, 40, 100, 100));
      assertEquals(Decision.GROW, decide(60, 50, 45, 40, 130, 100));
      // the guard does not apply to an idle iteration [A1]
      assertEquals(Decision.GROW_IDLE, decide(0, 50, 0, 40, 0, 100));
    }

    @Test
    void aZeroThresholdGrowsOnAnyThroughputMoveWithTheLoad() {
      // t_e = 0: SLOPE_INV is infinite; out must still move the way in did
      assertEquals(Decision.GROW,
          ProtegoPolicy.decideAuthors(1_000, 50, 41, 40, 0, 100, 100, 0.0, TD));
      assertEquals(Decision.GROW,
          ProtegoPolicy.decideAuthors(40, 1_000, 39, 40, 0, 100, 100, 0.0, TD));
      assertEquals(Decision.SHRINK_NO_TREND,
          ProtegoPolicy.decideAuthors(1_000, 50, 40, 40, 0, 100, 100, 0.0, TD));
    }

    @Test
    void dropsAboveTdShrinkUnderThisRuleToo() {
      // [A6] the authors comment the check out; at the default t_d = 100 % it never fires
      assertEquals(Decision.SHRINK_DROPS,
          ProtegoPolicy.decideAuthors(60, 50, 45, 40, 31, 100, 100, TE, 0.5));
      assertEquals(Decision.GROW,
          ProtegoPolicy.decideAuthors(60, 50, 45, 40, 30, 100, 100, TE, 0.5));
      assertEquals(Decision.GROW,
          ProtegoPolicy.decideAuthors(60, 50, 45, 40, 60, 100, 100, TE, TD));
    }

    @Test
    void stepsAreAdditiveBothWays() {
      // [A4] 1,000 sessions: +max(0.001·1000, 1) = +1; [A5] −max(⌊0.001·1000⌋, 1) = −1
      assertEquals(new Step(501, 0.0), ProtegoPolicy.authorsStep(500, 0.0, Decision.GROW, A, 1_000));
      assertEquals(new Step(499, 0.0),
          ProtegoPolicy.authorsStep(500, 0.0, Decision.SHRINK_NO_TREND, A, 1_000));
      // an idle iteration grows the same way
      assertEquals(new Step(501, 0.0),
          ProtegoPolicy.authorsStep(500, 0.0, Decision.GROW_IDLE, A, 1_000));
      // few sessions: still one credit each way
      assertEquals(new Step(5, 0.0), ProtegoPolicy.authorsStep(4, 0.0, Decision.GROW, A, 50));
      assertEquals(new Step(3, 0.0), ProtegoPolicy.authorsStep(4, 0.0, Decision.SHRINK_DROPS, A, 50));
      // 2,500 sessions: −⌊2.5⌋ = −2
      assertEquals(new Step(498, 0.0),
          ProtegoPolicy.authorsStep(500, 0.0, Decision.SHRINK_NO_GAIN, A, 2_500));
      // one shrink is undone by one growth, unlike (1 − d)
      Step s = ProtegoPolicy.authorsStep(1_000, 0.0, Decision.SHRINK_NO_TREND, A, 1_000);
      assertEquals(1_000, ProtegoPolicy.authorsStep(s.pool(), s.carry(), Decision.GROW, A, 1_000)
          .pool());
    }

    @Test
    void theIncreaseCarriesItsFraction() {
      // 1,500 sessions: +1.5 a step, "credit_carry += MAX(num_sess * SBW_AI, 1.0)": +1 then +2
      Step first = ProtegoPolicy.authorsStep(500, 0.0, Decision.GROW, A, 1_500);
      assertEquals(new Step(501, 0.5), first);
      Step second = ProtegoPolicy.authorsStep(first.pool(), first.carry(), Decision.GROW, A, 1_500);
      assertEquals(new Step(503, 0.0), second);
      // a carry from before survives an increase of exactly one: 0.5 + max(0.2, 1) = 1.5
      assertEquals(new Step(11, 0.5), ProtegoPolicy.authorsStep(10, 0.5, Decision.GROW, A, 200));
      // a decrease clears it ("credit_carry[stype] = 0.0")
      assertEquals(new Step(500, 0.0),
          ProtegoPolicy.authorsStep(501, 0.5, Decision.SHRINK_POOL_UNUSED, A, 1_500));
    }
  }

  @Test
  void onlyTheGrowingDecisionsGrow() {
    assertTrue(Decision.GROW.grows());
    assertTrue(Decision.GROW_IDLE.grows());
    for (Decision d : new Decision[] {Decision.SHRINK_DROPS, Decision.SHRINK_NO_GAIN,
        Decision.SHRINK_NO_TREND, Decision.SHRINK_POOL_UNUSED}) {
      assertFalse(d.grows(), d.name());
    }
  }

  @Test
  void theIncrementIsATenthOfAPercentOfTheSessionsButAtLeastOne() {
    // §3.3: a = 0.1 % of the client sessions; §5: a = 1 with 1,000 clients
    assertEquals(1, ProtegoPolicy.increment(0.001, 1_000));
    assertEquals(1, ProtegoPolicy.increment(0.001, 50));
    assertEquals(10, ProtegoPolicy.increment(0.001, 10_000));
    assertEquals(1, ProtegoPolicy.increment(0.001, 0));
  }

  @Test
  void defaultsAreTheAuthorsRuleWithThePapersParameters() {
    ProtegoConfig c = ProtegoConfig.forSlo(200_000, 10_000);
    assertEquals(ProtegoConfig.Rule.AUTHORS, c.rule());
    assertEquals(0.10, c.efficiencyThreshold());
    assertEquals(1.00, c.maxDropRate());
    assertEquals(0.001, c.increaseFraction());
    assertEquals(0.02, c.decreaseFactor());
    assertEquals(4, c.rttsPerIteration());
    // unloaded end-to-end RTT: the SLO is 10 × (service + RTT) (DESIGN.md, Breakwater §5.1)
    assertEquals(20_000, c.initialRttNanos());
    assertEquals(10_000, ProtegoConfig.forSlo(50_000, 10_000).initialRttNanos());
    assertEquals(200_000, c.maxRttNanos());
    assertEquals(10, c.initialPoolPerCore()); // bw2_server.c: 10 * runtime_max_cores()
    assertEquals(64, c.perSessionCap());
    assertEquals(100_000, c.clientQueueTimeoutNanos());
    assertEquals(0.5, c.withEfficiencyThreshold(0.5).efficiencyThreshold());
    assertEquals(ProtegoConfig.Rule.PAPER, c.withRule(ProtegoConfig.Rule.PAPER).rule());
    assertEquals(1, c.withInitialPoolPerCore(1).initialPoolPerCore());
    assertEquals(50_000, c.withClientQueueTimeout(50_000).clientQueueTimeoutNanos());
    assertEquals(50_000,
        c.withClientQueueTimeout(50_000).creditMachinery().clientQueueTimeoutNanos());
  }
}
