package io.spillway.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class RequestBudgetTest {

  @Test
  void budgetIsTargetMinusServiceMinusNetwork() {
    // Protego §3.2: budget = target delay − p99 service − p99 network; e.g. 200 − 40 − 10 µs.
    RequestBudget b = RequestBudget.fromTarget(200_000, 40_000, 10_000);
    assertEquals(150_000, b.remainingNanos());
    assertEquals(0, RequestBudget.fromTarget(10, 40, 10).remainingNanos());
  }

  @Test
  void chargingShrinksAndStopsAtZero() {
    RequestBudget b = RequestBudget.of(100);
    assertTrue(b.fits(100));
    assertFalse(b.fits(101));
    b.charge(30);
    assertEquals(70, b.remainingNanos());
    b.charge(-5);
    assertEquals(70, b.remainingNanos());
    b.charge(500);
    assertEquals(0, b.remainingNanos());
    assertTrue(b.isExhausted());
    assertEquals(530, b.chargedNanos(), "every wait charged, also past the budget");
  }

  @Test
  void travelsInAScopedValue() throws Exception {
    assertNull(RequestBudget.currentOrNull());
    RequestBudget b = RequestBudget.of(1_000);
    RequestBudget seen = ScopedValue.where(RequestBudget.CURRENT, b).call(RequestBudget::currentOrNull);
    assertSame(b, seen);
    assertNull(RequestBudget.currentOrNull());
  }

  @Test
  void rejectsNegativeInputs() {
    assertThrows(IllegalArgumentException.class, () -> RequestBudget.of(-1));
    assertThrows(IllegalArgumentException.class, () -> RequestBudget.fromTarget(1, -1, 0));
  }

  /**
   * The three latencies are each at most {@code Long.MAX_VALUE}, their difference is not: a p99
   * as large as {@code Long.MAX_VALUE} (a figure the caller saturated) must leave no budget, not
   * wrap around to an unlimited one.
   */
  @Test
  void aTargetShorterThanServiceAndNetworkLeavesNothingWhateverTheirSize() {
    assertEquals(0, RequestBudget.fromTarget(0, Long.MAX_VALUE, 2).remainingNanos());
    assertEquals(0, RequestBudget.fromTarget(0, Long.MAX_VALUE, Long.MAX_VALUE).remainingNanos());
    assertEquals(0, RequestBudget.fromTarget(1_000, 2, Long.MAX_VALUE).remainingNanos());
    assertEquals(Long.MAX_VALUE - 3,
        RequestBudget.fromTarget(Long.MAX_VALUE, 1, 2).remainingNanos());
  }

  @Test
  void fitsAtTheBoundaryAndAHugeBudgetChargesExactly() {
    RequestBudget b = RequestBudget.of(Long.MAX_VALUE);
    assertTrue(b.fits(Long.MAX_VALUE));
    b.charge(1);
    assertFalse(b.fits(Long.MAX_VALUE));
    assertTrue(b.fits(Long.MAX_VALUE - 1));
    b.charge(Long.MAX_VALUE);
    assertEquals(0, b.remainingNanos());
    assertTrue(b.fits(0));
    assertFalse(b.fits(1));
  }

  /** Charged time past the budget keeps counting, and saturates rather than wrapping negative. */
  @Test
  void chargedTimeNeverWrapsNegative() {
    RequestBudget b = RequestBudget.of(10);
    b.charge(Long.MAX_VALUE);
    b.charge(Long.MAX_VALUE);
    assertEquals(Long.MAX_VALUE, b.chargedNanos());
    assertEquals(0, b.remainingNanos());
  }

  @Test
  void anInnerBindingShadowsTheOuterOneForItsScopeOnly() throws Exception {
    RequestBudget outer = RequestBudget.of(1_000);
    RequestBudget inner = RequestBudget.of(10);
    ScopedValue.where(RequestBudget.CURRENT, outer).run(() -> {
      assertSame(outer, RequestBudget.currentOrNull());
      ScopedValue.where(RequestBudget.CURRENT, inner).run(
          () -> assertSame(inner, RequestBudget.currentOrNull()));
      assertSame(outer, RequestBudget.currentOrNull());
    });
  }
}
