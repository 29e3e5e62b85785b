package io.spillway.price;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** rajomon-nsdi25 §3.4 "Proportional Price Updates" (and the authors' UpdatePrice), with literal numbers. */
class PricePolicyTest {

  private static final long US = 1_000;
  private static final long MS = 1_000_000;
  /** A previous delay that is never above the current one: the queue is not draining. */
  private static final long RISING = 0;

  /** θ = 10 ms, 8 tokens per ms away from θ, at least 1 down: the builder's defaults. */
  private final PricePolicy policy = new PricePolicy(10 * MS, 8, MS, 1);

  @Test
  void aMillisecondOverTheThresholdCostsTheGain() {
    assertEquals(8, policy.next(0, 11 * MS, RISING));
    assertEquals(108, policy.next(100, 11 * MS, RISING));
    assertEquals(20, policy.next(0, 12_500 * US, RISING), "2.5 ms over: 2.5 × 8");
    assertEquals(80, policy.next(0, 20 * MS, RISING), "10 ms over: 10 × 8");
    assertEquals(80, policy.next(0, 20 * MS, 20 * MS), "a queue as long as before still raises it");
  }

  @Test
  void theIncreaseIsRoundedUpSoAnyExcessMovesThePrice() {
    assertEquals(1, policy.next(0, 10 * MS + 1, RISING), "1 ns over: ⌈8/1e6⌉");
    assertEquals(5, policy.next(4, 10 * MS + 125 * US - 1, RISING), "just under ⅛ ms over: ⌈0.99…⌉ = 1");
    assertEquals(6, policy.next(4, 10 * MS + 125 * US + 1, RISING), "just over ⅛ ms: ⌈1.00…⌉ = 2");
  }

  @Test
  void thePapersRangeOfThreeToThirteenTokensPerMillisecond() {
    assertEquals(3, new PricePolicy(MS, 3, MS, 1).next(0, 2 * MS, RISING));
    assertEquals(13, new PricePolicy(MS, 13, MS, 1).next(0, 2 * MS, RISING));
  }

  @Test
  void whileTheQueueDrainsThePriceHolds() {
    assertEquals(100, policy.next(100, 20 * MS, 20 * MS + 1), "1 ns shorter than last time");
    assertEquals(100, policy.next(100, 11 * MS, 30 * MS));
    assertEquals(108, policy.next(100, 11 * MS, 11 * MS - 1), "longer again: +8");
    assertEquals(92, policy.next(100, 9 * MS, 30 * MS), "below θ it falls, draining or not");
  }

  @Test
  void belowTheThresholdThePriceFallsWithTheSameGain() {
    assertEquals(92, policy.next(100, 9 * MS, RISING), "1 ms under: −8 (authors' UpdatePrice)");
    assertEquals(20, policy.next(100, 0, RISING), "an empty queue: 10 ms under, −80");
    assertEquals(0, policy.next(50, 0, RISING), "never negative");
    assertEquals(99, policy.next(100, 10 * MS - 1, RISING), "1 ns under: ⌈8/1e6⌉ = 1");
    assertEquals(95, new PricePolicy(10 * MS, 8, MS, 5).next(100, 10 * MS - 1, RISING),
        "but at least the decrease step");
    assertEquals(20, new PricePolicy(10 * MS, 8, MS, 5).next(100, 0, RISING), "80 > 5");
    assertEquals(42, policy.next(42, 10 * MS, RISING), "at θ exactly: unchanged");
  }

  @Test
  void theTrendTermMovesThePriceWithTheChangeInDelay() {
    // θ = 10 ms, 8 tokens per ms, w = 10 (PIE's β = 10α): 80 tokens per ms the delay moved.
    PricePolicy trend = new PricePolicy(10 * MS, 8, MS, 1, 10);
    assertEquals(880, trend.next(0, 20 * MS, 10 * MS), "10 ms over: 80; 10 ms longer: 800");
    assertEquals(80, trend.next(0, 20 * MS, 20 * MS), "a steady queue: the paper's increase");
    assertEquals(488, trend.next(2_000, 11 * MS, 30 * MS), "draining: +8, 19 ms shorter: −1,520");
    assertEquals(0, trend.next(1_000, 11 * MS, 30 * MS), "never negative");
    assertEquals(92, trend.next(100, 9 * MS, 8 * MS), "under θ now and before: no trend, −8");
    assertEquals(92, trend.next(100, 9 * MS, 9 * MS), "under θ and steady: −8");
    assertEquals(0, trend.next(0, 10 * MS, 0), "at θ, from under it: no trend");
    assertEquals(111, trend.next(100, 10 * MS + 1, 10 * MS),
        "1 ns over, 1 ns longer: +1 + 10 · ⌈8/1e6⌉");
    assertEquals(90, trend.next(100, 10 * MS, 10 * MS + 1), "at θ from 1 ns over: −10");
    assertEquals(40, trend.next(1_000, 0, 11 * MS), "an empty queue after 1 ms over: −80 − 880");
    assertEquals(100, policy.next(100, 11 * MS, 30 * MS), "w = 0: the hold instead");
  }

  @Test
  void theTrendTermTelescopes() {
    PricePolicy trend = new PricePolicy(10 * MS, 8, MS, 1, 10);
    long price = trend.next(5_000, 30 * MS, 10 * MS); // +160 +1,600
    assertEquals(6_760, price);
    price = trend.next(price, 30 * MS, 30 * MS); // +160
    assertEquals(6_920, price);
    price = trend.next(price, 10 * MS, 30 * MS); // at θ: −1,600
    assertEquals(5_320, price, "the queue came and went: only the integral stays, 2 × 160");
  }

  @Test
  void theCeilingBoundsTheTrendTooButNeverItsFall() {
    PricePolicy trend = new PricePolicy(10 * MS, 8, MS, 1, 10);
    assertEquals(51, trend.next(0, 20 * MS, 10 * MS, 50, 0), "880 capped at ceiling + 1");
    assertEquals(100, trend.next(100, 20 * MS, 10 * MS, 50, 0), "above the ceiling already: holds");
    assertEquals(488, trend.next(2_000, 11 * MS, 30 * MS, 0, 0), "the fall is not capped");
    assertEquals(1_680, trend.next(2_000, 0, 0, PricePolicy.MAX_PRICE, 3),
        "unwinding doubles the fall only: 80 · 4");
    assertEquals(960, trend.next(2_000, 0, 11 * MS, PricePolicy.MAX_PRICE, 2),
        "−160 and −880 (11 ms shorter)");
  }

  @Test
  void theTrendTermSaturates() {
    PricePolicy steep = new PricePolicy(1, 1_000_000, 1, 1, PricePolicy.MAX_TREND_WEIGHT);
    assertEquals(PricePolicy.MAX_PRICE, steep.next(0, Long.MAX_VALUE, 0));
    assertEquals(0, steep.next(PricePolicy.MAX_PRICE, 0, Long.MAX_VALUE));
    assertEquals(PricePolicy.MAX_PRICE, steep.next(PricePolicy.MAX_PRICE, Long.MAX_VALUE, 0));
  }

  @Test
  void anIncreaseStopsJustAboveTheRichestRequestOfTheInterval() {
    // policy: θ = 10 ms, 8 tokens per ms; 20 ms of delay would add 80.
    assertEquals(80, policy.next(0, 20 * MS, RISING, 1_000, 0), "far below the ceiling: unchanged rule");
    assertEquals(51, policy.next(0, 20 * MS, RISING, 50, 0), "the richest brought 50: 51 refuses it");
    assertEquals(100, policy.next(100, 20 * MS, RISING, 50, 0), "already above the ceiling: holds");
    assertEquals(100, policy.next(100, 20 * MS, RISING, 99, 0), "exactly at ceiling + 1: holds");
    assertEquals(101, policy.next(100, 20 * MS, RISING, 100, 0));
    assertEquals(1, policy.next(0, 20 * MS, RISING, 0, 0), "no request in the interval: at most 1");
    assertEquals(92, policy.next(100, 9 * MS, RISING, 0, 0), "the ceiling never touches a decrease");
    assertEquals(100, policy.next(100, 11 * MS, 30 * MS, 0, 0), "nor the hold while draining");
    assertEquals(PricePolicy.MAX_PRICE,
        policy.next(PricePolicy.MAX_PRICE - 1, 20 * MS, RISING, PricePolicy.MAX_PRICE - 1, 0),
        "ceiling + 1 saturates like the price");
    assertEquals(policy.next(100, 20 * MS, RISING), policy.next(100, 20 * MS, RISING, Long.MAX_VALUE, 0),
        "without a ceiling: the paper's increase");
  }

  @Test
  void whileUnwindingTheFallDoublesAtEachConsecutiveShortQueue() {
    // policy: θ = 10 ms, 8 tokens per ms; an empty queue lowers the price by 80.
    long max = PricePolicy.MAX_PRICE;
    assertEquals(920, policy.next(1_000, 0, RISING, max, 0), "not unwinding: the plain fall");
    assertEquals(920, policy.next(1_000, 0, RISING, max, 1), "the first short update: plain");
    assertEquals(840, policy.next(1_000, 0, RISING, max, 2));
    assertEquals(680, policy.next(1_000, 0, RISING, max, 3));
    assertEquals(360, policy.next(1_000, 0, RISING, max, 4));
    assertEquals(0, policy.next(1_000, 0, RISING, max, 5), "never negative");
    assertEquals(872, policy.next(1_000, 2 * MS, RISING, max, 2), "8 ms under: 64, doubled");
    assertEquals(0, policy.next(max, 0, RISING, max, Integer.MAX_VALUE), "no overflow");
    assertEquals(1_080, policy.next(1_000, 20 * MS, RISING, max, 5), "increases are unchanged");
  }

  @Test
  void aShortQueueIsOneUnderHalfTheThreshold() {
    assertEquals(1, policy.shortUpdates(0, 0));
    assertEquals(4, policy.shortUpdates(3, 5 * MS - 1));
    assertEquals(0, policy.shortUpdates(3, 5 * MS), "at θ/2: not short");
    assertEquals(0, policy.shortUpdates(3, 20 * MS));
    assertEquals(Integer.MAX_VALUE, policy.shortUpdates(Integer.MAX_VALUE, 0), "saturates");
  }

  @Test
  void theFastestFallIsAnEmptyQueuesDoublingAtEachUpdate() {
    assertEquals(80, policy.fallAtEmptyQueue());
    assertEquals(5, new PricePolicy(MS, 1, 10 * MS, 5).fallAtEmptyQueue(), "⌈0.1⌉ = 1 < step 5");
    assertEquals(1_000, policy.lowestAfter(1_000, 0));
    assertEquals(920, policy.lowestAfter(1_000, 1));
    assertEquals(760, policy.lowestAfter(1_000, 2), "80 + 160");
    assertEquals(440, policy.lowestAfter(1_000, 3), "80 + 160 + 320");
    assertEquals(0, policy.lowestAfter(1_000, 4));
    assertEquals(0, policy.lowestAfter(1_200, 4), "exactly to zero: 80 · 15");
    assertEquals(40, policy.lowestAfter(1_240, 4));
    assertEquals(0, policy.lowestAfter(PricePolicy.MAX_PRICE, Long.MAX_VALUE), "no overflow");
    assertEquals(0, policy.lowestAfter(PricePolicy.MAX_PRICE, 61));
    assertEquals(PricePolicy.MAX_PRICE - 80, policy.lowestAfter(PricePolicy.MAX_PRICE, 1));
  }

  @Test
  void pricesSaturateInsteadOfOverflowing() {
    PricePolicy steep = new PricePolicy(1, 1_000_000, 1, 1);
    assertEquals(PricePolicy.MAX_PRICE, steep.next(0, Long.MAX_VALUE, RISING));
    assertEquals(PricePolicy.MAX_PRICE, steep.next(PricePolicy.MAX_PRICE, 2, RISING));
    assertEquals(PricePolicy.MAX_PRICE, policy.next(PricePolicy.MAX_PRICE - 1, 20 * MS, RISING));
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
    assertThrows(IllegalArgumentException.class, () -> new PricePolicy(MS, 8, MS, 1, -1));
    assertThrows(IllegalArgumentException.class,
        () -> new PricePolicy(MS, 8, MS, 1, PricePolicy.MAX_TREND_WEIGHT + 1));
  }
}
