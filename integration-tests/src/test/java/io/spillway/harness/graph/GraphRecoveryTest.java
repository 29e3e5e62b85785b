package io.spillway.harness.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.spillway.sim.Recorder;
import org.junit.jupiter.api.Test;

/** The graph harness's recovery time, read from a recorder's 20 ms windows in 100 ms groups. */
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
}
