package io.spillway.price;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** Defaults with their sources, the SLO-scaled factory, and the validation messages. */
class RajomonConfigTest {

  private static final long US = 1_000;
  private static final long MS = 1_000_000;

  @Test
  void defaultsAreThePapersAndTheAuthors() {
    RajomonConfig c = RajomonConfig.builder().build();
    assertEquals(10 * MS, c.priceUpdateIntervalNanos(), "authors' priceUpdateRate");
    assertEquals(10 * MS, c.delayThresholdNanos(), "paper §3.4: 1–20 ms");
    assertEquals(8, c.priceIncreaseTokens(), "paper §3.4: 3–13 tokens per ms");
    assertEquals(MS, c.priceIncreaseUnitNanos());
    assertEquals(1, c.priceDecreaseStep(), "paper §3.4: decreases by (at least) 1 token");
    assertEquals(10, c.priceTrendWeight(), "ours: PIE's β = 10α (RFC 8033 §4.2)");
    assertEquals(TokenRefill.POISSON, c.tokenRefill(), "paper §3.3");
    assertEquals(10, c.tokensPerRefill(), "paper §3.5: 10 tokens every 10 ms");
    assertEquals(10 * MS, c.refillIntervalNanos());
    assertEquals(10, c.initialTokens(), "authors' tokensLeft");
    assertEquals(100_000, c.maxTokens(), "10,000 refills");
    assertTrue(c.failFast(), "authors' clientTimeOut = 0");
    assertEquals(PriceAttachment.everyNth(5), c.priceAttachment(), "authors' priceFreq = 5");
    assertFalse(c.tokenAudit());
  }

  @Test
  void forSloScalesThresholdIntervalGainAndRefill() {
    RajomonConfig c = RajomonConfig.forSlo(200 * US, 10 * US);
    assertEquals(50 * US, c.delayThresholdNanos(), "SLO / 4");
    assertEquals(25 * US, c.priceUpdateIntervalNanos(), "max(RTT, θ/2)");
    assertEquals(160, c.priceIncreaseTokens());
    assertEquals(50 * US, c.priceIncreaseUnitNanos(), "160 tokens per θ away from θ");
    assertEquals(10, c.priceDecreaseStep(), "at least one refill down per interval");
    assertEquals(10, c.tokensPerRefill());
    assertEquals(25 * US, c.refillIntervalNanos(), "one refill per update interval");
    assertEquals(100_000, c.maxTokens(), "10,000 refills");
    assertEquals(PriceAttachment.always(), c.priceAttachment());
    RajomonConfig slowNetwork = RajomonConfig.forSlo(200 * US, 40 * US);
    assertEquals(40 * US, slowNetwork.priceUpdateIntervalNanos(), "never faster than an RTT");
    RajomonConfig paperScale = RajomonConfig.forSlo(40 * MS, 200 * US);
    assertEquals(10 * MS, paperScale.delayThresholdNanos());
    assertEquals(5 * MS, paperScale.priceUpdateIntervalNanos());
  }

  @Test
  void theBuilderRoundTrips() {
    RajomonConfig c = RajomonConfig.forSlo(200 * US, 10 * US).toBuilder()
        .clientWaitTimeoutNanos(100 * US).tokenAudit(true, 7).seed(3).build();
    assertEquals(c, c.toBuilder().build());
    assertFalse(c.failFast());
    assertEquals(7, c.auditSlackTokens());
  }

  @Test
  void anUnsetCapFollowsTheRefillThroughTheBuilderAndASetOneStays() {
    RajomonConfig scaled = RajomonConfig.forSlo(200 * US, 10 * US).toBuilder()
        .refill(TokenRefill.POISSON, 300, 12 * US).build();
    assertEquals(3_000_000, scaled.maxTokens(), "10,000 refills of 300");
    RajomonConfig set = RajomonConfig.builder().maxTokens(5_000).build();
    assertEquals(5_000, set.maxTokens());
    assertEquals(5_000, set.toBuilder().refill(TokenRefill.FIXED, 20, MS).build().maxTokens(),
        "a cap that was set is kept");
    assertEquals(RajomonConfig.MAX_TOKENS, RajomonConfig.builder()
        .refill(TokenRefill.FIXED, RajomonConfig.MAX_TOKENS / 2, MS).build().maxTokens(),
        "the derived cap saturates");
  }

  @Test
  void badValuesAreRejectedWithTheirName() {
    rejects("delayThresholdNanos", () -> RajomonConfig.builder().delayThresholdNanos(0).build());
    rejects("priceUpdateIntervalNanos",
        () -> RajomonConfig.builder().priceUpdateIntervalNanos(-1).build());
    rejects("priceIncreaseTokens", () -> RajomonConfig.builder().priceIncrease(0, MS).build());
    rejects("priceIncreaseUnitNanos", () -> RajomonConfig.builder().priceIncrease(8, 0).build());
    rejects("priceDecreaseStep", () -> RajomonConfig.builder().priceDecreaseStep(0).build());
    rejects("priceTrendWeight", () -> RajomonConfig.builder().priceTrendWeight(-1).build());
    rejects("priceTrendWeight", () -> RajomonConfig.builder().priceTrendWeight(1_001).build());
    rejects("tokensPerRefill",
        () -> RajomonConfig.builder().refill(TokenRefill.FIXED, 0, MS).build());
    rejects("refillIntervalNanos",
        () -> RajomonConfig.builder().refill(TokenRefill.FIXED, 1, 0).build());
    rejects("maxTokens", () -> RajomonConfig.builder().maxTokens(0).build());
    rejects("maxTokens", () -> RajomonConfig.builder().maxTokens(RajomonConfig.MAX_TOKENS + 1).build());
    rejects("tokensPerRefill", () -> RajomonConfig.builder().maxTokens(5).initialTokens(0).build());
    rejects("initialTokens",
        () -> RajomonConfig.builder().maxTokens(1_000).initialTokens(1_001).build());
    rejects("clientWaitTimeoutNanos",
        () -> RajomonConfig.builder().clientWaitTimeoutNanos(-1).build());
    rejects("auditSlackTokens", () -> RajomonConfig.builder().tokenAudit(true, -1).build());
    rejects("listLowersAfterIntervals", () -> RajomonConfig.builder().listLowersAfterIntervals(-1).build());
    rejects("listLowersAfterIntervals", () -> RajomonConfig.builder()
        .listLowersAfterIntervals(RajomonConfig.MAX_LIST_AGE_INTERVALS + 1).build());
    rejects("fit in a long",
        () -> RajomonConfig.builder().priceIncrease(Long.MAX_VALUE / 2, 4).build());
    rejects("SLO", () -> RajomonConfig.forSlo(0, 10 * US));
    rejects("RTT", () -> RajomonConfig.forSlo(200 * US, 0));
    rejects("every n-th", () -> PriceAttachment.everyNth(0));
    rejects("probability", () -> PriceAttachment.withProbability(0));
    rejects("probability", () -> PriceAttachment.withProbability(1.5));
    assertThrows(NullPointerException.class,
        () -> RajomonConfig.builder().refill(null, 1, MS).build());
    assertThrows(NullPointerException.class,
        () -> RajomonConfig.builder().priceAttachment(null).build());
  }

  private static void rejects(String mentioned, Executable build) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, build);
    assertTrue(e.getMessage().contains(mentioned), "'" + e.getMessage() + "' should name " + mentioned);
  }
}
