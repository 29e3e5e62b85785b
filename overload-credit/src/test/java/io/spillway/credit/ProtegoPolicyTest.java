package io.spillway.credit;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.spillway.credit.ProtegoPolicy.Decision;
import org.junit.jupiter.api.Test;

/** Algorithm 1 of protego-nsdi23 with literal numbers; defaults from §3.3 and §5. */
class ProtegoPolicyTest {

  private static final double TE = 0.10; // §3.3: "an efficiency threshold of 10% by default"
  private static final double TD = 1.00; // §3.3: maximum drop rate 100 %
  private static final double D = 0.02;  // §3.3: "d as 2%"

  @Test
  void throughputFollowingLoadGrowsThePoolByA() {
    // Δin = 6000 − 5000 = 1000, Δout = 5200 − 4000 = 1200: same sign (line 13),
    // |1200| > 0.1·|1000| (line 14) → C ← C + a (line 15)
    assertEquals(Decision.GROW, ProtegoPolicy.decide(6_000, 5_000, 5_200, 4_000, 0, TE, TD));
    assertEquals(501, ProtegoPolicy.nextPoolSize(500, Decision.GROW, 1, D));
    assertEquals(510, ProtegoPolicy.nextPoolSize(500, Decision.GROW, 10, D));
  }

  @Test
  void throughputFallingWithLoadAlsoGrowsThePool() {
    // Δin = −1000, Δout = −800: the product is positive and |−800| > 0.1·|−1000|. Load fell and
    // throughput fell almost as much: the server is on the steep part of the curve (line 15).
    assertEquals(Decision.GROW, ProtegoPolicy.decide(4_000, 5_000, 3_200, 4_000, 0, TE, TD));
  }

  @Test
  void aGainOfAtMostTeOfTheLoadShrinksThePool() {
    // Δin = 1000, Δout = 100: 100 > 0.1·1000 is false (line 14) → line 17
    assertEquals(Decision.SHRINK_NO_GAIN,
        ProtegoPolicy.decide(6_000, 5_000, 4_100, 4_000, 0, TE, TD));
    // Δout = 101 is just above the threshold
    assertEquals(Decision.GROW, ProtegoPolicy.decide(6_000, 5_000, 4_101, 4_000, 0, TE, TD));
    // C ← (1 − 0.02)·1000 = 980
    assertEquals(980, ProtegoPolicy.nextPoolSize(1_000, Decision.SHRINK_NO_GAIN, 1, D));
  }

  @Test
  void loadAndThroughputMovingApartOrStandingStillShrinkThePool() {
    // Δin = +1000, Δout = −200: product negative (line 13 fails) → line 20
    assertEquals(Decision.SHRINK_NO_TREND,
        ProtegoPolicy.decide(6_000, 5_000, 3_800, 4_000, 0, TE, TD));
    // no change at all: the product is zero → line 20
    assertEquals(Decision.SHRINK_NO_TREND,
        ProtegoPolicy.decide(5_000, 5_000, 4_000, 4_000, 0, TE, TD));
    // (1 − 0.02)·10 = 9.8, rounded down
    assertEquals(9, ProtegoPolicy.nextPoolSize(10, Decision.SHRINK_NO_TREND, 1, D));
  }

  @Test
  void dropsAboveTdOfTheIncomingLoadShrinkThePoolWhateverTheSlope() {
    // t_d = 50 %: in_cur = 6000, drops 3001 > 0.5·6000 (line 11) → line 12, although the slope
    // alone would grow the pool
    assertEquals(Decision.SHRINK_DROPS,
        ProtegoPolicy.decide(6_000, 5_000, 5_200, 4_000, 3_001, TE, 0.5));
    assertEquals(Decision.GROW, ProtegoPolicy.decide(6_000, 5_000, 5_200, 4_000, 3_000, TE, 0.5));
    // with the default t_d = 100 % the drop cap never binds while drops ⊆ incoming requests
    assertEquals(Decision.GROW, ProtegoPolicy.decide(6_000, 5_000, 5_200, 4_000, 6_000, TE, TD));
    assertEquals(980, ProtegoPolicy.nextPoolSize(1_000, Decision.SHRINK_DROPS, 1, D));
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
  void defaultsAreThePapers() {
    ProtegoConfig c = ProtegoConfig.forSlo(200_000, 10_000);
    assertEquals(0.10, c.efficiencyThreshold());
    assertEquals(1.00, c.maxDropRate());
    assertEquals(0.001, c.increaseFraction());
    assertEquals(0.02, c.decreaseFactor());
    assertEquals(4, c.rttsPerIteration());
    // unloaded end-to-end RTT: the SLO is 10 × (service + RTT) (DESIGN.md, Breakwater §5.1)
    assertEquals(20_000, c.initialRttNanos());
    assertEquals(10_000, ProtegoConfig.forSlo(50_000, 10_000).initialRttNanos());
    assertEquals(200_000, c.maxRttNanos());
    assertEquals(64, c.perSessionCap());
    assertEquals(0.5, c.withEfficiencyThreshold(0.5).efficiencyThreshold());
  }
}
