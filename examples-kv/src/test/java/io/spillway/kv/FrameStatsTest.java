package io.spillway.kv;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.spillway.api.Status;
import org.junit.jupiter.api.Test;

class FrameStatsTest {

  @Test
  void eachReadingCountsSinceTheLastAndGivesThePoolsRangeOverIt() {
    FrameStats stats = new FrameStats();
    assertEquals("frame-stats admitted 0 refused 0; pool not reported", stats.read());
    stats.onAdmission(Status.OK);
    stats.onAdmission(Status.OK);
    stats.onAdmission(Status.REJECTED_AQM);
    stats.onCreditPool(16, 3, 4);
    stats.onCreditPool(9, 9, 4);
    stats.onCreditPool(12, 5, 4);
    assertEquals("frame-stats admitted 2 refused rejected_aqm=1; pool 9-16 last 12 issued 5"
        + " sessions 4 (3 reports)", stats.read());
    stats.onAdmission(Status.REJECTED_NO_CREDIT);
    stats.onConcurrencyLimit(2, 1);
    assertEquals("frame-stats admitted 0 refused rejected_no_credit=1; pool not reported;"
        + " plain clients' limit 2 waiting 1", stats.read(), "a limit is not a pool");
  }
}
