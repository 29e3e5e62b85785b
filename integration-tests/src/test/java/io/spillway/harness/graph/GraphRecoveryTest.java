package io.spillway.harness.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.sim.Recorder;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The graph harness's recovery time, read from a recorder's 20 ms windows in 100 ms groups, and the
 * windows around a surge it writes to {@code surge-windows.csv}.
 */
class GraphRecoveryTest {

  private static final long MS = 1_000_000L;

  /** Good responses per 20 ms window: {@code perWindow} from {@code fromMs} until {@code toMs}. */
  private static void good(Recorder r, long fromMs, long toMs, long perWindow) {
    for (long t = fromMs; t < toMs; t += 20) {
      r.at(t * MS).good += perWindow;
    }
  }

  @Test
  void recoveryCountsFromTheStepInHundredMillisecondGroups() {
    Recorder r = new Recorder(20 * MS);
    good(r, 0, 1000, 16);       // before the step: 80 per 100 ms
    good(r, 1000, 1300, 0);     // the surge's first 300 ms: nothing within the SLO
    good(r, 1300, 3000, 20);    // then 100 per 100 ms
    assertEquals(300, GraphHarnessMain.GraphHarness.recovery(r, 1000 * MS, 3000 * MS));
  }

  @Test
  void aPartialLastGroupIsLeftOut() {
    Recorder r = new Recorder(20 * MS);
    good(r, 0, 3000, 20);
    good(r, 2960, 3000, -20);   // the last 40 ms, a partial group, empty: ignored
    assertEquals(0, GraphHarnessMain.GraphHarness.recovery(r, 1010 * MS, 2990 * MS));
  }

  @Test
  void goodputStillCollapsedAtTheEndNeverRecovered() {
    Recorder r = new Recorder(20 * MS);
    good(r, 0, 2000, 20);
    good(r, 2000, 3000, 0);
    r.at(2999 * MS);
    assertEquals(-1, GraphHarnessMain.GraphHarness.recovery(r, 1000 * MS, 3000 * MS));
  }

  /** The rows {@code surge-windows.csv} gets for a surge to 2× at {@code stepMs}, run until {@code toMs}. */
  private static List<String> surgeWindows(Recorder r, String scheme, long stepMs, long toMs, long epochAtZero) {
    StringBuilder csv = new StringBuilder();
    GraphHarnessMain.GraphHarness.surgeWindows(csv, scheme, 2, r, stepMs * MS, toMs * MS, epochAtZero);
    return csv.toString().lines().toList();
  }

  @Test
  void surgeWindowsShowHalfASecondBeforeTheStepAndEveryWholeWindowAfter() {
    Recorder r = new Recorder(20 * MS);
    good(r, 0, 1000, 16);
    good(r, 1000, 1300, 0);
    good(r, 1300, 1650, 20);
    for (long t = 0; t < 1650; t += 20) {
      r.at(t * MS).offered += 30;
      r.at(t * MS).expired += t >= 1000 ? 5 : 0;
    }
    r.at(1100 * MS).dropped += 7;
    List<String> rows = surgeWindows(r, "rajomon", 990, 1650, 1_000_000);
    // The step rounds up to 1000 ms; 500 ms before it, then 1000-1600 (1600-1650 is partial).
    assertEquals(11, rows.size());
    assertEquals("rajomon,2.00,-500,1500,0,0,0,0,800,", rows.get(0).substring(0, 35));
    assertEquals("rajomon,2.00,0,1500,250,0,0,0,0,", rows.get(5).substring(0, 32));
    assertEquals("rajomon,2.00,100,1500,250,0,70,0,0,", rows.get(6).substring(0, 35));
    assertEquals("rajomon,2.00,500,1500,250,0,0,0,1000,", rows.get(10).substring(0, 37));
    assertTrue(rows.get(0).endsWith(",1000500"), rows.get(0)); // the wall clock at 500 ms
    assertTrue(rows.get(10).endsWith(",1001500"), rows.get(10));
  }

  @Test
  void surgeWindowsBeforeTheStepStopAtTheRunsStart() {
    Recorder r = new Recorder(20 * MS);
    good(r, 0, 600, 20);
    List<String> rows = surgeWindows(r, "dagor", 200, 600, 0);
    assertEquals(6, rows.size());
    assertEquals("dagor,2.00,-200,", rows.get(0).substring(0, 16));
    assertEquals("dagor,2.00,300,", rows.get(5).substring(0, 15));
  }
}
