package io.spillway.baselines;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** DAGOR's level arithmetic (SoCC 2018 §4; α = 5 %, β = 1 %, P = 128 as breakwater-osdi20 §5.1). */
class DagorPolicyTest {

  private static final double ALPHA = 0.05;
  private static final double BETA = 0.01;

  @Test
  void overloadIsAnAverageQueueingTimeAtOrAboveTheThreshold() {
    assertTrue(DagorPolicy.overloaded(7_000_000, 100, 70_000));   // 70 µs average
    assertFalse(DagorPolicy.overloaded(6_999_999, 100, 70_000));
    assertFalse(DagorPolicy.overloaded(0, 0, 70_000));
  }

  @Test
  void withUniformPrioritiesTheLevelShedsFivePercentOrAddsOneLevel() {
    long[] uniform = DagorPolicy.uniform(128);
    assertEquals(121, DagorPolicy.nextLevel(uniform, 128, true, ALPHA, BETA));   // ⌊0.95·128⌋
    assertEquals(9, DagorPolicy.nextLevel(uniform, 10, true, ALPHA, BETA));      // ⌊9.5⌋
    assertEquals(1, DagorPolicy.nextLevel(uniform, 1, true, ALPHA, BETA));       // never below 1
    assertEquals(11, DagorPolicy.nextLevel(uniform, 10, false, ALPHA, BETA));    // ⌈10.1⌉
    assertEquals(128, DagorPolicy.nextLevel(uniform, 127, false, ALPHA, BETA));
    assertEquals(128, DagorPolicy.nextLevel(uniform, 128, false, ALPHA, BETA));
  }

  @Test
  void theHistogramDecidesHowFarTheLevelMoves() {
    long[] h = new long[129];
    Arrays.fill(h, 1, 129, 1L);
    h[1] = 100;                    // N(L) = 100 + (L − 1)
    // admitted N(128) = 227; shed 5 %: N(L') ≤ 215.65 → L' = 116
    assertEquals(116, DagorPolicy.nextLevel(h, 128, true, ALPHA, BETA));
    long[] even = new long[129];
    Arrays.fill(even, 1, 129, 10L);
    // N(50) = 500; add 1 %: N(L') ≥ 505 → 51
    assertEquals(51, DagorPolicy.nextLevel(even, 50, false, ALPHA, BETA));
  }

  @Test
  void withNothingSeenAboveTheLevelItProbesOneUp() {
    long[] h = new long[129];
    Arrays.fill(h, 1, 11, 10L);    // clients shed everything above 10 locally
    assertEquals(11, DagorPolicy.nextLevel(h, 10, false, ALPHA, BETA));
  }
}
