package io.spillway.credit;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** Breakwater's equations with literal numbers (breakwater-osdi20 §3.2, §4; defaults from §5.1). */
class CreditPolicyTest {

  private static final double ALPHA = 0.001;
  private static final double BETA = 0.02;
  private static final long TARGET = 80_000; // d_t = 40 % of a 200 µs SLO

  @Test
  void additiveIncreaseIsAlphaTimesClientsButAtLeastOne() {
    // eq. 3: A = max(α·n_c, 1)
    assertEquals(1, CreditPolicy.additiveIncrease(ALPHA, 1_000));
    assertEquals(1, CreditPolicy.additiveIncrease(ALPHA, 100));
    assertEquals(10, CreditPolicy.additiveIncrease(ALPHA, 10_000));
    assertEquals(1, CreditPolicy.additiveIncrease(ALPHA, 0));
  }

  @Test
  void eqOneGrowsThePoolOnlyWhileItIsInUse() {
    // 8 sessions holding 12 credits: the pool may run ahead of C_issued by n_c = 8, to 20.
    assertEquals(20, CreditPolicy.growOnlyIfUsed(20, 21, 11, 8), "12 unissued: held at 20");
    assertEquals(21, CreditPolicy.growOnlyIfUsed(20, 21, 12, 8), "C_issued + n_c = C_total: grows");
    assertEquals(21, CreditPolicy.growOnlyIfUsed(20, 21, 30, 8), "overissued: grows");
    assertEquals(19, CreditPolicy.growOnlyIfUsed(20, 19, 0, 8), "a decrease (eq. 2) always applies");
    assertEquals(20, CreditPolicy.growOnlyIfUsed(20, 20, 0, 8));
  }

  @Test
  void belowTargetThePoolGrowsAdditively() {
    // eq. 1: C_total ← C_total + A when d_m < d_t
    assertEquals(501, CreditPolicy.nextPoolSize(500, 79_999, TARGET, ALPHA, BETA, 1_000));
    assertEquals(510, CreditPolicy.nextPoolSize(500, 0, TARGET, ALPHA, BETA, 10_000));
  }

  @Test
  void aboveTargetThePoolShrinksInProportionToTheOvershoot() {
    // eq. 2: factor = max(1 − β·(d_m − d_t)/d_t, 0.5)
    assertEquals(1.0, CreditPolicy.decreaseFactor(BETA, TARGET, TARGET), 1e-12);
    // d_m = 160 µs is 100 % over: 1 − 0.02·1 = 0.98
    assertEquals(0.98, CreditPolicy.decreaseFactor(BETA, 160_000, TARGET), 1e-12);
    assertEquals(980, CreditPolicy.nextPoolSize(1_000, 160_000, TARGET, ALPHA, BETA, 1_000));
    // d_m = 4 ms is 49× over: 1 − 0.98 = 0.02, floored at 0.5
    assertEquals(0.5, CreditPolicy.decreaseFactor(BETA, 4_000_000, TARGET), 1e-12);
    assertEquals(500, CreditPolicy.nextPoolSize(1_000, 4_000_000, TARGET, ALPHA, BETA, 1_000));
    // exactly at target: eq. 2 with a factor of 1 (the pool holds)
    assertEquals(1_000, CreditPolicy.nextPoolSize(1_000, TARGET, TARGET, ALPHA, BETA, 1_000));
  }

  @Test
  void spillwaysDecreaseIsMeasuredFromTheCreditsOutAndDoesNotCompound() {
    // d_m = 100 µs is 25 % over d_t: factor 1 − 0.02·0.25 = 0.995.
    // The first cut: C_issued = C_total = 8,000, as eq. 2: 8,000 · 0.995 = 7,960.
    assertEquals(7_960, CreditPolicy.nextPoolSizeFromIssued(8_000, 8_000, 100_000, TARGET, ALPHA, BETA, 10_000));
    assertEquals(7_960, CreditPolicy.nextPoolSize(8_000, 100_000, TARGET, ALPHA, BETA, 10_000));
    // A period later none of the 40 credits cut has come back (C_issued still 8,000): the pool holds
    // at min(7,960, 8,000 · 0.995), where eq. 2 on C_total would cut again, to 7,920.
    assertEquals(7_960, CreditPolicy.nextPoolSizeFromIssued(7_960, 8_000, 100_000, TARGET, ALPHA, BETA, 10_000));
    assertEquals(7_920, CreditPolicy.nextPoolSize(7_960, 100_000, TARGET, ALPHA, BETA, 10_000));
    // A deeper overshoot cuts from what is out: d_m = 160 µs, 8,000 · 0.98 = 7,840.
    assertEquals(7_840, CreditPolicy.nextPoolSizeFromIssued(7_960, 8_000, 160_000, TARGET, ALPHA, BETA, 10_000));
    // Once the cuts have landed (C_issued ≤ C_total) it is eq. 2 again; below d_t, eq. 1 and 3.
    assertEquals(7_920, CreditPolicy.nextPoolSizeFromIssued(7_960, 7_900, 100_000, TARGET, ALPHA, BETA, 10_000));
    assertEquals(7_970, CreditPolicy.nextPoolSizeFromIssued(7_960, 8_000, 79_999, TARGET, ALPHA, BETA, 10_000));
  }

  @Test
  void spillwaysStartDoublesWhileEveryCreditIsOutAndTheQueueIsShort() {
    // d_t = 80 µs: the start-up stops at d_t/2 = 40 µs of queueing delay.
    assertEquals(CreditPolicy.StartUp.DOUBLE, CreditPolicy.startUp(false, 10, 10, 0, TARGET));
    assertEquals(CreditPolicy.StartUp.DOUBLE, CreditPolicy.startUp(true, 640, 700, 39_999, TARGET));
    // Credits not all out before any doubling (sessions still registering): wait, eq. 1 meanwhile.
    assertEquals(CreditPolicy.StartUp.HOLD, CreditPolicy.startUp(false, 10, 3, 0, TARGET));
    // A doubling left credits unused: the pool covers the demand.
    assertEquals(CreditPolicy.StartUp.OVER, CreditPolicy.startUp(true, 1_280, 1_000, 0, TARGET));
    // The queue reached d_t/2, all credits out or not.
    assertEquals(CreditPolicy.StartUp.OVER, CreditPolicy.startUp(true, 640, 700, 40_000, TARGET));
    assertEquals(CreditPolicy.StartUp.OVER, CreditPolicy.startUp(false, 10, 3, 40_000, TARGET));
  }

  @Test
  void poolStaysBetweenParallelismAndThePerSessionCeiling() {
    assertEquals(10, CreditPolicy.clampPoolSize(3, 10, 64, 1_000));
    assertEquals(64_000, CreditPolicy.clampPoolSize(70_000, 10, 64, 1_000));
    assertEquals(10, CreditPolicy.clampPoolSize(70_000, 10, 64, 0));
    assertEquals(5_000, CreditPolicy.clampPoolSize(5_000, 10, 64, 1_000));
  }

  @Test
  void overcommitIsTheOpenPoolPerClientButAtLeastOne() {
    // eq. 4: C_oc = max((C_total − C_issued)/n_c, 1)
    assertEquals(3, CreditPolicy.overcommit(4_000, 1_000, 1_000));
    assertEquals(1, CreditPolicy.overcommit(1_000, 1_000, 1_000));
    assertEquals(1, CreditPolicy.overcommit(900, 1_000, 1_000));
    assertEquals(1, CreditPolicy.overcommit(900, 0, 0));
  }

  @Test
  void underTheTotalAClientGetsItsDemandPlusOvercommitBoundedByWhatIsAvailable() {
    // eq. 5 in window form: w ← min(pending + demand + C_oc, w + C_avail)
    // pending 2, demand 5, C_oc 3, window 4, C_avail = 1000 − 990 = 10: min(10, 14) = 10
    assertEquals(10, CreditPolicy.nextWindow(4, 2, 5, 1_000, 990, 3, 64));
    // only 2 available: min(10, 4 + 2) = 6
    assertEquals(6, CreditPolicy.nextWindow(4, 2, 5, 1_000, 998, 3, 64));
  }

  @Test
  void overTheTotalAClientLosesOneCreditAtATime() {
    // eq. 6 in window form: w ← min(pending + demand + C_oc, w − 1)
    assertEquals(9, CreditPolicy.nextWindow(10, 2, 20, 1_000, 1_005, 1, 64));
    // ...and down to its demand plus overcommit at once if that is lower
    assertEquals(4, CreditPolicy.nextWindow(10, 2, 1, 1_000, 1_005, 1, 64));
  }

  @Test
  void inFlightRequestsAreNeverRevokedAndTheCapHolds() {
    // pending 7 beats eq. 6's 3
    assertEquals(7, CreditPolicy.nextWindow(4, 7, 0, 1_000, 2_000, 0, 64));
    assertEquals(64, CreditPolicy.nextWindow(60, 10, 500, 100_000, 0, 5, 64));
  }

  @Test
  void atTheTotalAWindowOnlyShrinksTowardDemand() {
    assertEquals(5, CreditPolicy.nextWindow(5, 1, 10, 1_000, 1_000, 1, 64));
    assertEquals(3, CreditPolicy.nextWindow(5, 1, 1, 1_000, 1_000, 1, 64));
  }

  @Test
  void withoutSpeculationThereIsNoOvercommit() {
    // demand synchronisation: C_oc = 0, so a client with no demand keeps nothing unused
    assertEquals(2, CreditPolicy.nextWindow(6, 2, 0, 1_000, 10, 0, 64));
    assertEquals(0, CreditPolicy.nextWindow(1, 0, 0, 1_000, 10, 0, 64));
  }

  @Test
  void whereHandlersHoldCallsAWindowCoversTheCallsStartedInAResidence() {
    // d_t 10 ms. m = 30 ms / 10 ms = 3 calls a residence, a credit back every 30 / 4 = 7.5 ms,
    // more than d_t/2: ⌈3 + 2·√3⌉ + 1 = ⌈6.46⌉ + 1 = 8
    assertEquals(8, CreditPolicy.windowForResidence(30_000_000, 10_000_000, 10_000_000));
    // m = 1, a credit back every 15 ms: ⌈1 + 2⌉ + 1 = 4
    assertEquals(4, CreditPolicy.windowForResidence(30_000_000, 30_000_000, 10_000_000));
    // m = 15, a credit back every 1.9 ms: eq. 4's one credit is enough
    assertEquals(0, CreditPolicy.windowForResidence(30_000_000, 2_000_000, 10_000_000));
    // a 100 µs handler: a credit back within 100 µs
    assertEquals(0, CreditPolicy.windowForResidence(100_000, 10_000_000, 10_000_000));
    // no interval yet (or no residence): no window asked for
    assertEquals(0, CreditPolicy.windowForResidence(30_000_000, 0, 10_000_000));
    assertEquals(0, CreditPolicy.windowForResidence(0, 10_000_000, 10_000_000));
  }

  @Test
  void creditsSessionsAskForAndCannotGetGrowThePoolByAtMostADoublingAResidence() {
    // pool 500, eq. 1 says 501; handlers hold calls 30 ms, updates 2.5 ms apart: at most
    // 500 · 2.5 / 30 = 41 more this update, however many were asked for
    assertEquals(541, CreditPolicy.coverResidenceShortfall(500, 501, 100, 1_000_000, 10_000_000,
        2_500_000, 30_000_000, 60_000_000));
    assertEquals(510, CreditPolicy.coverResidenceShortfall(500, 501, 10, 1_000_000, 10_000_000,
        2_500_000, 30_000_000, 60_000_000));
    // the queue at d_t/2, or at d_t within the last residence: eq. 1 alone
    assertEquals(501, CreditPolicy.coverResidenceShortfall(500, 501, 100, 5_000_000, 10_000_000,
        2_500_000, 30_000_000, 60_000_000));
    assertEquals(501, CreditPolicy.coverResidenceShortfall(500, 501, 100, 1_000_000, 10_000_000,
        2_500_000, 30_000_000, 20_000_000));
    // nothing asked for: eq. 1–3 as computed
    assertEquals(480, CreditPolicy.coverResidenceShortfall(500, 480, 0, 1_000_000, 10_000_000,
        2_500_000, 30_000_000, 60_000_000));
  }
}
