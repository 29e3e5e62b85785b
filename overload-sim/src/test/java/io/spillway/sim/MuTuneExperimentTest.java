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
