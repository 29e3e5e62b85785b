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
    long[] g = {100, 50, 100, 250, 100, 100, 100, 100};
    // level 100, floor 70, span floor 200 - 3 * sqrt(200) = 157.6: the 50 at 100 ms takes its
    // spans to 150; the 250 after it is not a dip
    assertEquals(200, RecoveryTime.millis(g, 100));
  }

  @Test
  void aSingleWindowBelowTheFloorIsNoiseWhileItsSpansHold() {
    // 60 < 70, but both spans holding it are 160 >= 157.6
    assertEquals(0, RecoveryTime.millis(new long[] {100, 100, 60, 100, 100, 100, 100, 100}, 100));
    // the same dip for two windows: their span is 120
    assertEquals(400, RecoveryTime.millis(new long[] {100, 100, 60, 60, 100, 100, 100, 100}, 100));
    // in the last window: its one span is 165
    assertEquals(0, RecoveryTime.millis(new long[] {100, 100, 100, 100, 100, 65}, 100));
  }

  @Test
  void recoveryStartsAtAWindowAboveTheFloorNotAtABurstsPartner() {
    // the span of the first two is 250, but the first window held nothing
    assertEquals(100, RecoveryTime.millis(new long[] {0, 250, 100, 100, 100, 100}, 100));
  }

  @Test
  void theLevelIsTheSecondHalfsMedian() {
    // a burst at the end: by the mean the level would be 367, and only the burst above its floor (500)
    assertEquals(0, RecoveryTime.millis(new long[] {100, 100, 100, 100, 100, 900}, 100));
    // an even count: the mean of the middle two, (100 + 120) / 2 = 110, floor 78.5
    assertEquals(100, RecoveryTime.millis(new long[] {78, 110, 100, 120, 100, 120, 100, 120}, 100));
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
    assertEquals(-1, RecoveryTime.millis(g, 100)); // the last span is 100
    // two windows at 40: level 70 (the median of 100, 100, 40, 40), their span 80 < 104.5
    assertEquals(-1, RecoveryTime.millis(new long[] {100, 100, 100, 100, 100, 100, 40, 40}, 100));
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
