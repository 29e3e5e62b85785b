package io.spillway.credit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** The queue's share of the SLO, with literal numbers: SLO 50 ms, d_t 20 ms, AQM 40 ms. */
class QueueShareTest {

  private static final long MS = 1_000_000;
  private static final long NOW = Long.MAX_VALUE - 1_000 * MS;

  @Test
  void beforeAnyResidenceTheConfiguredTargetsHold() {
    QueueShare share = new QueueShare(50 * MS, 20 * MS, 40 * MS);
    share.retarget(NOW);
    assertEquals(20 * MS, share.targetDelayNanos());
    assertEquals(40 * MS, share.dropThresholdNanos());
  }

  @Test
  void theQueueGetsWhatTheHandlersMedianResidenceLeaves() {
    QueueShare share = new QueueShare(50 * MS, 20 * MS, 40 * MS);
    share.record(30 * MS, NOW); // the first sample is the estimate
    share.retarget(NOW);
    assertEquals(20 * MS, share.dropThresholdNanos(), "50 − 30");
    assertEquals(10 * MS, share.targetDelayNanos(), "d_t scaled with it");
  }

  @Test
  void theMedianMovesByAThirtySecondEachWayNotByTheTail() {
    QueueShare share = new QueueShare(50 * MS, 20 * MS, 40 * MS);
    share.record(32 * MS, NOW);
    share.record(1_000 * MS, NOW); // one call far in the tail: up by 32 / 32 = 1 ms
    share.retarget(NOW);
    assertEquals(17 * MS, share.dropThresholdNanos());
    share.record(0, NOW); // and one short one brings it back down
    share.retarget(NOW);
    assertEquals(18 * MS + 31_250, share.dropThresholdNanos(), "down by 33 / 32 ms");
  }

  @Test
  void shortHandlersChangeNothingAndLongOnesLeaveAnEighth() {
    QueueShare fast = new QueueShare(50 * MS, 20 * MS, 40 * MS);
    fast.record(5 * MS, NOW);
    fast.retarget(NOW);
    assertEquals(40 * MS, fast.dropThresholdNanos(), "a fifth of the SLO is the configured room");
    QueueShare slow = new QueueShare(50 * MS, 20 * MS, 40 * MS);
    slow.record(70 * MS, NOW);
    slow.retarget(NOW);
    assertEquals(5 * MS, slow.dropThresholdNanos());
    assertEquals(2_500_000, slow.targetDelayNanos());
  }

  @Test
  void withoutAnSloTheTargetsStayFixed() {
    QueueShare share = new QueueShare(0, 20 * MS, 40 * MS);
    share.record(30 * MS, NOW);
    share.retarget(NOW);
    assertEquals(40 * MS, share.dropThresholdNanos());
    assertThrows(IllegalArgumentException.class, () -> new QueueShare(-1, 20 * MS, 40 * MS));
    assertThrows(IllegalArgumentException.class, () -> new QueueShare(50 * MS, 0, 40 * MS));
  }
}
