package io.spillway.credit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** The queue's share of the SLO, with literal numbers: SLO 50 ms, d_t 20 ms, AQM 40 ms. */
class QueueShareTest {

  private static final long MS = 1_000_000;
  private static final long NOW = Long.MAX_VALUE - 1_000 * MS;

  private static QueueShare share() {
    return new QueueShare(50 * MS, 20 * MS, 40 * MS);
  }

  @Test
  void beforeAnyResidenceTheConfiguredTargetsHold() {
    QueueShare share = share();
    share.retarget(NOW);
    for (QueueShare.Targets t : new QueueShare.Targets[] {share.typical(), share.tail()}) {
      assertEquals(20 * MS, t.targetDelayNanos());
      assertEquals(40 * MS, t.dropThresholdNanos());
    }
  }

  @Test
  void theQueueGetsWhatTheHandlersResidenceLeaves() {
    QueueShare share = share();
    share.record(30 * MS, NOW); // the first sample is both estimates
    share.retarget(NOW);
    assertEquals(20 * MS, share.tail().dropThresholdNanos(), "50 − 30");
    assertEquals(10 * MS, share.tail().targetDelayNanos(), "d_t scaled with it");
    assertEquals(15 * MS, share.typical().dropThresholdNanos(),
        "50 − 30 − 5: an aware client's queue keeps a tenth of the SLO");
    assertEquals(7_500_000, share.typical().targetDelayNanos());
  }

  @Test
  void aCallInTheTailMovesThePercentileFarMoreThanTheMedian() {
    QueueShare share = share();
    share.record(32 * MS, NOW);
    share.record(1_000 * MS, NOW);
    share.retarget(NOW);
    // the median moves by a 32nd of itself, 1 ms; the p99 by 0.99 of a 16th, 1.98 ms
    assertEquals(50 * MS - 33 * MS - 5 * MS, share.typical().dropThresholdNanos());
    assertEquals(50 * MS - 32 * MS - 1_980_000, share.tail().dropThresholdNanos());
    share.record(0, NOW); // a short one: the median back down by 33 / 32 ms, the p99 by a 100th of a step
    share.retarget(NOW);
    assertEquals(13 * MS + 31_250, share.typical().dropThresholdNanos());
    assertEquals(50 * MS - 32 * MS - 1_980_000 + 21_237, share.tail().dropThresholdNanos());
  }

  @Test
  void shortHandlersChangeNothingAndLongOnesLeaveAnEighth() {
    QueueShare fast = share();
    fast.record(5 * MS, NOW);
    fast.retarget(NOW);
    assertEquals(40 * MS, fast.typical().dropThresholdNanos(),
        "a fifth of the SLO is the configured room, and holds the client's tenth");
    assertEquals(40 * MS, fast.tail().dropThresholdNanos());
    QueueShare slow = share();
    slow.record(70 * MS, NOW);
    slow.retarget(NOW);
    assertEquals(5 * MS, slow.tail().dropThresholdNanos());
    assertEquals(2_500_000, slow.tail().targetDelayNanos());
  }

  @Test
  void withoutAnSloTheTargetsStayFixed() {
    QueueShare share = new QueueShare(0, 20 * MS, 40 * MS);
    share.record(30 * MS, NOW);
    share.retarget(NOW);
    assertEquals(40 * MS, share.typical().dropThresholdNanos());
    assertEquals(40 * MS, share.tail().dropThresholdNanos());
    assertThrows(IllegalArgumentException.class, () -> new QueueShare(-1, 20 * MS, 40 * MS));
    assertThrows(IllegalArgumentException.class, () -> new QueueShare(50 * MS, 0, 40 * MS));
  }
}
