package io.spillway.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The papers' baselines (overload-baselines) run in the simulator: briefly, at a load below
 * capacity and at twice capacity, each through the registry with its scenario defaults. The full
 * comparison is {@code ./spillway sim baselines-fig3}.
 */
class BaselinesSimulationTest {

  private static final List<String> BASELINES = List.of("codel", "window", "seda", "dagor");

  private static ResultRecord row(Experiment.Results r, String scheme, double demand) {
    return r.rows().stream().filter(x -> x.scheme().equals(scheme) && x.demand() == demand)
        .findFirst().orElseThrow();
  }

  @Test
  void everyBaselineRunsAndServesBelowCapacity() throws Exception {
    Map<String, String> v = new HashMap<>(Map.of("clients", "200", "cores", "4",
        "warmup_ms", "100", "duration_ms", "200", "demand", "0.5, 2.0",
        "capacity_rps", "340000", "schemes", String.join(", ", BASELINES)));
    Experiment.Results r = new Experiment(Scenario.of(v), 2).run();
    for (String scheme : BASELINES) {
      ResultRecord low = row(r, scheme, 0.5);
      assertTrue(low.goodputRps() >= 0.95 * low.offeredRps(),
          scheme + " below capacity: goodput " + low.goodputRps() + " of " + low.offeredRps());
      ResultRecord high = row(r, scheme, 2.0);
      assertTrue(high.throughputRps() > 0, scheme + " at 2x served nothing");
    }
    assertEquals(0, row(r, "seda", 0.5).dropRate(), "SEDA never drops at the server");
    assertEquals(0, row(r, "seda", 2.0).dropRate(), "SEDA never drops at the server");
    assertEquals(0, row(r, "window", 2.0).dropRate(), "the window's server admits all");
    assertTrue(row(r, "codel", 2.0).dropRate() > 0, "CoDel sheds at twice capacity");
  }

  @Test
  void baselineKeysReachTheirSchemes() {
    Scenario s = Scenario.of(Map.of("clients", "500", "codel.target_us", "25", "window.ai", "2",
        "seda.adj_d", "1.1", "dagor.q_us", "90"));
    assertEquals(25_000, SchemeRegistry.codelConfig(s).targetNanos());
    assertEquals(2.0, SchemeRegistry.windowConfig(s).additiveIncrease());
    assertEquals(1.1, SchemeRegistry.sedaConfig(s).adjD());
    assertEquals(80.0, SchemeRegistry.sedaConfig(s).adjI(), 1e-9, "adj_i 40 at 1,000 clients, x2 at 500");
    assertEquals(90_000, SchemeRegistry.dagorConfig(s).queueingThresholdNanos());
  }
}
