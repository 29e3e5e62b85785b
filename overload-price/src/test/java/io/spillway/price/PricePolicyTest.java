package io.spillway.price;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** rajomon-nsdi25 §3.4 "Proportional Price Updates", with literal numbers. */
class PricePolicyTest {

  private static final long US = 1_000;
  private static final long MS = 1_000_000;

  /** θ = 10 ms, +8 tokens per ms of excess, −1 below θ/2: the config's defaults. */
  private final PricePolicy policy = new PricePolicy(10 * MS, 8, MS, 1);

  @Test
  void aMillisecondOverTheThresholdCostsTheGain() {
    assertEquals(8, policy.next(0, 11 * MS));
    assertEquals(108, policy.next(100, 11 * MS));
    assertEquals(20, policy.next(0, 12_500 * US), "2.5 ms over: 2.5 × 8");
    assertEquals(80, policy.next(0, 20 * MS), "10 ms over: 10 × 8");
  }

  @Test
  void theIncreaseIsRoundedUpSoAnyExcessMovesThePrice() {
    assertEquals(1, policy.next(0, 10 * MS + 1), "1 ns over: ⌈8/1e6⌉");
    assertEquals(5, policy.next(4, 10 * MS + 125 * US - 1), "just under ⅛ ms over: ⌈0.99…⌉ = 1");
    assertEquals(6, policy.next(4, 10 * MS + 125 * US + 1), "just over ⅛ ms: ⌈1.00…⌉ = 2");
  }

  @Test
  void thePapersRangeOfThreeToThirteenTokensPerMillisecond() {
    assertEquals(3, new PricePolicy(MS, 3, MS, 1).next(0, 2 * MS));
    assertEquals(13, new PricePolicy(MS, 13, MS, 1).next(0, 2 * MS));
  }

  @Test
  void betweenHalfTheThresholdAndTheThresholdThePriceHolds() {
    assertEquals(42, policy.next(42, 10 * MS), "at θ: not in excess");
    assertEquals(42, policy.next(42, 5 * MS), "at θ/2: not below");
    assertEquals(42, policy.next(42, 7 * MS));
  }

  @Test
  void belowHalfTheThresholdThePriceFallsByOneStepToZero() {
    assertEquals(41, policy.next(42, 5 * MS - 1));
    assertEquals(41, policy.next(42, 0));
    assertEquals(0, policy.next(1, 0));
    assertEquals(0, policy.next(0, 0), "never negative");
    assertEquals(37, new PricePolicy(10 * MS, 8, MS, 5).next(42, 0), "a larger step");
    assertEquals(0, new PricePolicy(10 * MS, 8, MS, 5).next(3, 0));
  }

  @Test
  void halfOfAnOddThresholdIsExact() {
    PricePolicy odd = new PricePolicy(5, 1, 1, 1);
    assertEquals(9, odd.next(10, 2), "2 < 2.5");
    assertEquals(10, odd.next(10, 3), "3 ≥ 2.5");
  }

  @Test
  void pricesSaturateInsteadOfOverflowing() {
    PricePolicy steep = new PricePolicy(1, 1_000_000, 1, 1);
    assertEquals(PricePolicy.MAX_PRICE, steep.next(0, Long.MAX_VALUE));
    assertEquals(PricePolicy.MAX_PRICE, steep.next(PricePolicy.MAX_PRICE, 2));
    assertEquals(PricePolicy.MAX_PRICE, policy.next(PricePolicy.MAX_PRICE - 1, 20 * MS));
    assertTrue(2 * PricePolicy.MAX_PRICE > 0, "local plus downstream cannot overflow");
  }

  @Test
  void parametersAreChecked() {
    assertThrows(IllegalArgumentException.class, () -> new PricePolicy(0, 8, MS, 1));
    assertThrows(IllegalArgumentException.class, () -> new PricePolicy(MS, 0, MS, 1));
    assertThrows(IllegalArgumentException.class, () -> new PricePolicy(MS, 8, 0, 1));
    assertThrows(IllegalArgumentException.class, () -> new PricePolicy(MS, 8, MS, 0));
    assertThrows(IllegalArgumentException.class,
        () -> new PricePolicy(MS, Long.MAX_VALUE / 2, 4, 1), "gain × unit must fit in a long");
  }
}
