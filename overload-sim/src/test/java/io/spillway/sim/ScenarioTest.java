package io.spillway.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ScenarioTest {

  @Test
  void parsesKeysCommentsAndUnits() {
    Map<String, String> v = Scenario.parse(List.of("# comment", "", "clients = 42",
        "slo_us=150", "schemes = none,  breakwater"), "test");
    Scenario s = Scenario.of(v);
    assertEquals(42, s.clients());
    assertEquals(150_000, s.sloNanos());
    assertEquals(List.of("none", "breakwater"), s.schemes());
    assertEquals(10, s.cores(), "defaults fill the rest");
  }

  @Test
  void unknownKeysAndBadValuesAreErrorsThatNameTheKey() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> Scenario.of(Map.of("client", "5")));
    assertTrue(e.getMessage().contains("'client'"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> Scenario.of(Map.of("clients", "many")));
    assertTrue(e.getMessage().contains("'clients'"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> Scenario.of(Map.of("rtt_us", "-1")));
    assertTrue(e.getMessage().contains("'rtt_us'"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> Scenario.of(Map.of("service", "pareto")));
    assertTrue(e.getMessage().contains("exp, const, bimodal or lognormal"), e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> Scenario.parse(List.of("no equals sign"), "f"));
  }

  @Test
  void theHarnesssBoundOnSteadySlicesDefaultsTo30AndMustBePositive() {
    assertEquals(30, Scenario.of(Map.of()).steadyMaxSlices());
    assertEquals(4, Scenario.of(Map.of("steady_max_s", "4")).steadyMaxSlices());
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> Scenario.of(Map.of("steady_max_s", "0")));
    assertTrue(e.getMessage().contains("'steady_max_s'"), e.getMessage());
  }

  @Test
  void schedulesParseAndMustBeOrdered() {
    Scenario s = Scenario.of(Map.of("schedule", "0.5@0, 1.4@200ms, 0.5@400", "duration_ms", "600"));
    assertEquals(3, s.schedule().size());
    assertEquals(200_000_000L, s.schedule().get(1).startNanos());
    assertEquals(1.4, s.schedule().get(1).level());
    assertThrows(IllegalArgumentException.class,
        () -> Scenario.of(Map.of("schedule", "0.5@10", "duration_ms", "600")).schedule());
    assertThrows(IllegalArgumentException.class,
        () -> Scenario.of(Map.of("schedule", "0.5@0, 1@300, 2@200", "duration_ms", "600")).schedule());
    assertThrows(IllegalArgumentException.class,
        () -> Scenario.of(Map.of("schedule", "0.5@0, 1@700", "duration_ms", "600")).schedule());
  }

  @Test
  void unknownSchemesAreRejectedBeforeRunning() {
    Scenario s = Scenario.of(Map.of("schemes", "none, brakewater"));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new Experiment(s, 1));
    assertTrue(e.getMessage().contains("brakewater") && e.getMessage().contains("breakwater"), e.getMessage());
  }

  @Test
  void theShippedScenariosLoad() throws Exception {
    List<Path> files;
    try (var listing = java.nio.file.Files.list(Path.of("..", "scenarios"))) {
      files = listing.filter(f -> f.getFileName().toString().endsWith(".conf")).sorted().toList();
    }
    assertTrue(files.size() > 20, "the scenarios folder: " + files);
    for (Path file : files) {
      String name = file.getFileName().toString().replace(".conf", "");
      Scenario s = Scenario.load(file, Map.of());
      assertEquals(name, s.name());
      if (s.callGraph() != null) { // placements of a call graph (GraphScheme)
        s.schemes().forEach(scheme -> GraphScheme.resolve(scheme, s));
      } else {
        s.schemes().forEach(scheme -> SchemeRegistry.create(scheme, s));
      }
      if (!s.muTuneKeys().isEmpty()) {
        new MuTuneExperiment(s); // validates the mutune.* keys, its admission schemes among them
      }
    }
  }

  @Test
  void breakwaterKeysReachItsConfig() {
    Scenario s = Scenario.of(Map.of("slo_us", "100", "breakwater.alpha", "0.002",
        "breakwater.target_us", "30"));
    var c = SchemeRegistry.breakwaterConfig(s);
    assertEquals(0.002, c.alpha());
    assertEquals(30_000, c.targetDelayNanos());
    assertEquals(60_000, c.dropThresholdNanos());
    assertEquals(50_000, c.clientQueueTimeoutNanos());
    assertEquals(false, c.hasRequestBudget());
    assertEquals(45_000, SchemeRegistry.breakwaterConfig(s.with(Map.of("breakwater.budget_us", "45")))
        .requestBudgetNanos());
  }

  @Test
  void rajomonsIntervalFollowsTheThresholdInForceUnlessSet() {
    Scenario s = Scenario.of(Map.of("slo_us", "40000", "rtt_us", "200"));
    var derived = SchemeRegistry.rajomonConfig(s);
    assertEquals(10_000_000, derived.delayThresholdNanos(), "SLO / 4");
    assertEquals(5_000_000, derived.priceUpdateIntervalNanos(), "threshold / 2");

    var lowered = SchemeRegistry.rajomonConfig(s.with(Map.of("rajomon.threshold_us", "1000")));
    assertEquals(1_000_000, lowered.delayThresholdNanos());
    assertEquals(500_000, lowered.priceUpdateIntervalNanos(), "half the threshold set, not the SLO's");
    assertEquals(500_000, lowered.refillIntervalNanos(), "one refill per update interval");
    assertEquals(1_000_000, lowered.priceIncreaseUnitNanos(), "the gain is per threshold");

    var floor = SchemeRegistry.rajomonConfig(s.with(Map.of("rajomon.threshold_us", "300")));
    assertEquals(200_000, floor.priceUpdateIntervalNanos(), "never faster than one RTT");

    var pinned = SchemeRegistry.rajomonConfig(s.with(Map.of("rajomon.threshold_us", "1000",
        "rajomon.interval_us", "5000")));
    assertEquals(5_000_000, pinned.priceUpdateIntervalNanos());
    assertEquals(5_000_000, pinned.refillIntervalNanos());
  }
}
