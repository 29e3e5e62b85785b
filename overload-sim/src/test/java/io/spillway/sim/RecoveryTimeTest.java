package io.spillway.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class RecoveryTimeTest {

  @Test
  void goodputThatNeverDippedRecoveredAtOnce() {
    long[] g = {80, 82, 78, 80, 81, 79};
    assertEquals(0, RecoveryTime.millis(g, 100));
  }

  @Test
  void recoveryIsTheFirstWindowFromWhichEveryLaterOneIsAboveTheFloor() {
    // level = mean of the second half = 100; floor = 100 - max(5, 3 * 10) = 70
    long[] g = {0, 20, 69, 70, 100, 100, 100, 100};
    assertEquals(300, RecoveryTime.millis(g, 100));
  }

  @Test
  void aLateDipRestartsTheClockButABurstAboveTheLevelDoesNot() {
    long[] g = {100, 60, 100, 250, 100, 100, 100, 100};
    // level 100, floor 70: the 60 at 100 ms is a dip; the 250 after it is not
    assertEquals(200, RecoveryTime.millis(g, 100));
  }

  @Test
  void atHighCountsTheBandIsFivePercent() {
    // level 10,000: 3 sigma = 300 < 5 % = 500, so the floor is 9,500
    long[] g = {9_499, 9_500, 10_000, 10_000};
    assertEquals(100, RecoveryTime.millis(g, 100));
  }

  @Test
  void stillDippingAtTheEndHasNotRecovered() {
    long[] g = {100, 100, 100, 100, 100, 0};
    assertEquals(-1, RecoveryTime.millis(g, 100));
  }

  @Test
  void goodputThatCollapsedAndStayedFlatHasNotRecovered() {
    assertEquals(-1, RecoveryTime.millis(new long[] {100, 3, 0, 1, 0, 2}, 100));
    // nine per window is still noise around zero; ten is a level (floor 10 - 3 * 3.16 = 0.51)
    assertEquals(-1, RecoveryTime.millis(new long[] {0, 9, 9, 9}, 100));
    assertEquals(100, RecoveryTime.millis(new long[] {0, 10, 10, 10}, 100));
  }

  @Test
  void fewerThanTwoWindowsSayNothing() {
    assertEquals(-1, RecoveryTime.millis(new long[] {100}, 100));
    assertEquals(-1, RecoveryTime.millis(new long[0], 100));
  }
}
