package io.spillway.baselines;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** CoDel's state machine and control law (RFC 8289 §5) with literal numbers: target 50 µs, interval 100 µs. */
class CoDelPolicyTest {

  private static final long US = 1_000;
  private static final long TARGET = 50 * US;
  private static final long INTERVAL = 100 * US;

  @Test
  void controlLawSpacesDropsByIntervalOverRootCount() {
    assertEquals(100_000, CoDelPolicy.controlLaw(0, INTERVAL, 1));
    assertEquals(70_710, CoDelPolicy.controlLaw(0, INTERVAL, 2)); // 100 µs / √2
    assertEquals(50_000, CoDelPolicy.controlLaw(0, INTERVAL, 4));
    assertEquals(10_000, CoDelPolicy.controlLaw(0, INTERVAL, 100));
    assertEquals(Long.MIN_VALUE + 49_999, CoDelPolicy.controlLaw(Long.MAX_VALUE, INTERVAL, 4)); // wraps
  }

  @Test
  void belowTargetNothingIsDropped() {
    CoDelPolicy p = new CoDelPolicy(TARGET, INTERVAL);
    for (long t = 0; t < 10 * INTERVAL; t += 5 * US) {
      assertFalse(p.shouldDrop(TARGET - 1, t));
    }
    assertFalse(p.isDropping());
  }

  @Test
  void dropsOnlyAfterAWholeIntervalAboveTargetThenByTheControlLaw() {
    run(0);
  }

  @Test
  void sameDecisionsWithAClockAboutToWrap() {
    run(Long.MAX_VALUE - 150 * US);
  }

  private static void run(long origin) {
    CoDelPolicy p = new CoDelPolicy(TARGET, INTERVAL);
    assertFalse(p.shouldDrop(60 * US, origin));                // first above: first_above = 100 µs
    assertFalse(p.shouldDrop(60 * US, origin + 99 * US));
    assertTrue(p.shouldDrop(60 * US, origin + 100 * US));      // a whole interval above: enter, count 1
    assertEquals(1, p.count());
    assertEquals(origin + 200 * US, p.dropNext());
    assertFalse(p.shouldDrop(60 * US, origin + 150 * US));     // before drop_next
    assertTrue(p.shouldDrop(60 * US, origin + 200 * US));      // count 2, next 200 + 70.710 µs
    assertEquals(2, p.count());
    assertEquals(origin + 270_710, p.dropNext());
    assertFalse(p.shouldDrop(60 * US, origin + 270_709));
    assertTrue(p.shouldDrop(60 * US, origin + 270_710));       // count 3, next + 57.735 µs
    assertEquals(origin + 328_445, p.dropNext());
    assertFalse(p.shouldDrop(40 * US, origin + 300 * US));     // below target: leave dropping
    assertFalse(p.isDropping());
    assertFalse(p.shouldDrop(60 * US, origin + 310 * US));     // above again: first_above = 410 µs
    assertTrue(p.shouldDrop(60 * US, origin + 410 * US));      // re-enter within 16 intervals:
    assertEquals(2, p.count());                                //   count = 3 − lastcount 1 = 2
    assertEquals(origin + 480_710, p.dropNext());
  }

  @Test
  void aLongQuietSpellRestartsTheCountAtOne() {
    CoDelPolicy p = new CoDelPolicy(TARGET, INTERVAL);
    p.shouldDrop(60 * US, 0);
    p.shouldDrop(60 * US, 100 * US);
    p.shouldDrop(60 * US, 200 * US);
    p.shouldDrop(60 * US, 270_710);
    assertEquals(3, p.count());
    p.shouldDrop(0, 300 * US);
    long later = 300 * US + 20 * INTERVAL;                      // more than 16 intervals after drop_next
    assertFalse(p.shouldDrop(60 * US, later));
    assertTrue(p.shouldDrop(60 * US, later + INTERVAL));
    assertEquals(1, p.count());
  }
}
