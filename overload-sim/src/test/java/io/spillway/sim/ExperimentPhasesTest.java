package io.spillway.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** A schedule's phase rows: one per phase, percentiles of every response in it. */
class ExperimentPhasesTest {

  private static final long MS = 1_000_000L;

  @Test
  void eachPhaseGetsOneRowWhoseP99ComesFromAllItsResponses() {
    Scenario s = Scenario.of(Map.of("schedule", "0.5@0, 1.5@100", "duration_ms", "200",
        "window_ms", "20", "slo_us", "750"));
    Recorder r = new Recorder(20 * MS);
    // Phase 1.5 (100-200 ms): four windows of 99 responses at 100 us and one at 1 us, then one
    // window with 30 responses at 5 ms. Every window's own p99 but the last is 100 us.
    for (long t = 100; t < 180; t += 20) {
      Tally w = r.at(t * MS);
      for (int i = 0; i < 99; i++) {
        w.latency.recordValue(100_000);
      }
      w.latency.recordValue(1_000);
      w.completed += 100;
      w.good += 100;
    }
    Tally last = r.at(180 * MS);
    for (int i = 0; i < 30; i++) {
      last.latency.recordValue(5_000_000);
    }
    last.completed += 30;
    r.at(0).completed += 1;
    r.at(0).latency.recordValue(50_000);

    List<ResultRecord> rows = new ArrayList<>();
    List<StepConvergence> convergence = new ArrayList<>();
    List<ResultRecord> phases = new ArrayList<>();
    Experiment.addSeries(s, "x", r, 1000, rows, convergence, phases);

    assertEquals(10, rows.size(), "one row per window");
    assertEquals(1, convergence.size(), "one per step");
    assertEquals(2, phases.size(), "one per phase");
    ResultRecord surge = phases.get(1);
    assertEquals(1.5, surge.demand());
    assertEquals(100, surge.windowStartMillis());
    assertEquals(100, surge.windowMillis());
    // 430 responses, 30 of them (7 %) at 5 ms: the phase's p99 is 5 ms, though the median window
    // p99 is 100 us.
    assertEquals(5_000, surge.p99Micros(), 5);
    assertEquals(4_300, surge.throughputRps(), 1e-9, "430 responses in 0.1 s");
    assertEquals(0.5, phases.get(0).demand());
    assertTrue(phases.get(0).p99Micros() > 0);
  }

  @Test
  void aWindowStartingAtAStepIsFiledUnderTheStepsLevelThoughTheGeneratorSwitchedJustAfter() {
    Scenario s = Scenario.of(Map.of("schedule", "0.5@0, 1.5@100", "duration_ms", "200",
        "window_ms", "20", "slo_us", "750"));
    Recorder r = new Recorder(20 * MS);
    // On sockets the generator records its switch when it makes it: 50 us after the step.
    r.demandChanged(0, 0.5);
    r.demandChanged(100 * MS + 50_000, 1.5);
    for (long t = 0; t < 200; t += 20) {
      r.at(t * MS).completed += 1;
    }
    List<ResultRecord> rows = new ArrayList<>();
    Experiment.addSeries(s, "x", r, 1000, rows, new ArrayList<>(), new ArrayList<>());
    assertEquals(0.5, rows.get(4).demand(), "the window at 80 ms");
    assertEquals(1.5, rows.get(5).demand(), "the window at 100 ms, the step's");
  }
}
