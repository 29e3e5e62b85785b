package io.spillway.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The µTune experiment's keys under admission control: read as documented, refused with the key's name. */
class MuTuneExperimentTest {

  private static Scenario scenario(Map<String, String> extra) {
    Map<String, String> keys = new java.util.HashMap<>(Map.of("cores", "1", "service", "const",
        "service_mean_us", "10", "mutune.models", "IB, DB4", "mutune.loads", "100, 1000"));
    keys.putAll(extra);
    return Scenario.of(keys);
  }

  /**
   * A scenario with spikes runs every static model and µTune through them, each its own row of the
   * "spikes" phase and a table of the report; a spike schedule not starting at 0 is named.
   */
  @Test
  void spikesAreRunForEveryConfigurationAndReported() {
    Scenario s = scenario(Map.of("duration_ms", "400", "warmup_ms", "0", "mutune.train_loads", "100, 1000",
        "mutune.spikes", "100@0, 2000@100, 100@150, 2000@300, 100@350"));
    MuTuneExperiment e = new MuTuneExperiment(s);
    List<MuTuneExperiment.Row> rows = e.run();
    assertEquals(List.of("IB", "DB4", "mutune"),
        rows.stream().filter(r -> r.phase().equals("spikes")).map(MuTuneExperiment.Row::config).toList());
    assertTrue(rows.stream().noneMatch(r -> r.phase().equals("steps")), "no steps were asked for");
    String report = MuTuneExperiment.report(s, e, rows);
    assertTrue(report.contains("Load spikes (100@0, 2000@100, 100@150, 2000@300, 100@350), whole run:"), report);
    IllegalArgumentException late = assertThrows(IllegalArgumentException.class,
        () -> new MuTuneExperiment(scenario(Map.of("mutune.spikes", "2000@100"))));
    assertTrue(late.getMessage().startsWith("mutune.spikes"), late.getMessage());
  }

  @Test
  void admissionKeysAreReadAndBadOnesNamed() {
    MuTuneExperiment e = new MuTuneExperiment(scenario(Map.of("mutune.admission", "breakwater, spillway",
        "mutune.admission_schedule", "0.1@0, 2@500")));
    assertEquals(List.of("breakwater", "spillway"), e.admissionSchemes());
    assertTrue(e.capacityLoads().isEmpty(), "capacity is searched for unless loads are given");

    IllegalArgumentException unknown = assertThrows(IllegalArgumentException.class,
        () -> new MuTuneExperiment(scenario(Map.of("mutune.admission", "brakewater"))));
    assertTrue(unknown.getMessage().contains("breakwater"), unknown.getMessage());
    IllegalArgumentException schedule = assertThrows(IllegalArgumentException.class,
        () -> new MuTuneExperiment(scenario(Map.of("mutune.admission", "spillway",
            "mutune.admission_schedule", "2@500"))));
    assertTrue(schedule.getMessage().startsWith("mutune.admission_schedule"), schedule.getMessage());
    IllegalArgumentException demands = assertThrows(IllegalArgumentException.class,
        () -> new MuTuneExperiment(scenario(Map.of("mutune.admission", "spillway",
            "mutune.admission_demands", "1, -2"))));
    assertTrue(demands.getMessage().startsWith("mutune.admission_demands"), demands.getMessage());
  }
}
