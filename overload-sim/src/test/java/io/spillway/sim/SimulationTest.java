package io.spillway.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The simulator's own behaviour, and the issue's acceptance scenarios at reduced length (the full
 * runs are {@code ./spillway sim breakwater-synthetic} and {@code breakwater-spike}; their numbers
 * are in docs/results/simulation.md).
 */
class SimulationTest {

  private static Scenario small(Map<String, String> extra) {
    Map<String, String> v = new HashMap<>(Map.of("clients", "200", "cores", "4",
        "warmup_ms", "100", "duration_ms", "200", "demand", "0.8, 2.0",
        "schemes", "none, breakwater"));
    v.putAll(extra);
    return Scenario.of(v);
  }

  private static ResultRecord row(Experiment.Results r, String scheme, double demand) {
    return r.rows().stream().filter(x -> x.scheme().equals(scheme) && x.demand() == demand)
        .findFirst().orElseThrow();
  }

  @Test
  void capacityIsCoresOverTheWorkPerRequest() {
    Scenario s = small(Map.of("service", "const"));
    double expected = 4 / ((10 + 1.0 + 0.75) * 1e-6);
    assertEquals(expected, Experiment.measureCapacity(s), expected * 0.01);
  }

  @Test
  void sameSeedSameResults() throws Exception {
    Scenario s = small(Map.of("seed", "7"));
    String a = Report.toJson(new Experiment(s, 2).run());
    String b = Report.toJson(new Experiment(s, 1).run());
    assertEquals(a, b, "runs must not depend on thread count or order");
  }

  @Test
  void aControllerClockAboutToWrapChangesNothing() throws Exception {
    Scenario s = small(Map.of());
    Scenario wrapping = s.with(Map.of("time_origin_ns", Long.toString(Long.MAX_VALUE - 150_000_000L)));
    Experiment.Results a = new Experiment(s, 2).run();
    Experiment.Results b = new Experiment(wrapping, 2).run();
    assertEquals(a.rows(), b.rows());
  }

  @Test
  void belowCapacityBreakwaterChangesNothing() throws Exception {
    Experiment.Results r = new Experiment(small(Map.of()), 2).run();
    ResultRecord none = row(r, "none", 0.8);
    ResultRecord bw = row(r, "breakwater", 0.8);
    assertEquals(none.goodputRps(), bw.goodputRps(), none.goodputRps() * 0.01);
    assertEquals(0, bw.dropRate());
    assertEquals(0, bw.expiredRate());
  }

  /**
   * A request budget bounds the client queue and the server's queue together: Breakwater at the
   * paper's d_t = 40 % of the SLO and AQM = 2·d_t, which alone puts the p99 past the SLO at 2×
   * (scenarios/demo-spike.conf), keeps it inside with a 400 µs budget, and the aborted requests'
   * cores serve others, so goodput does not fall.
   */
  @Test
  void aRequestBudgetKeepsThePaperTuningsP99WithinTheSlo() throws Exception {
    Map<String, String> v = new HashMap<>(Map.of("clients", "100", "cores", "1", "service", "exp",
        "service_mean_us", "25", "rtt_us", "50", "slo_us", "750", "demand", "2.0",
        "warmup_ms", "200", "duration_ms", "300", "schemes", "breakwater"));
    v.put("breakwater.client_timeout_us", "375"); // SLO / 2, the default, stated
    Experiment.Results paper = new Experiment(Scenario.of(v), 2).run();
    v.put("breakwater.budget_us", "400");
    Experiment.Results budgeted = new Experiment(Scenario.of(v), 2).run();
    ResultRecord without = row(paper, "breakwater", 2.0);
    ResultRecord with = row(budgeted, "breakwater", 2.0);
    assertTrue(without.p99Micros() > 750, "without a budget, p99 " + without.p99Micros());
    assertTrue(with.p99Micros() <= 750, "with a budget, p99 " + with.p99Micros());
    assertTrue(with.goodputRps() >= without.goodputRps(),
        "goodput " + with.goodputRps() + " with a budget, " + without.goodputRps() + " without");
  }

  /**
   * The same workload under the default a user gets, the SLO alone: its request budget is derived
   * from what its clients measure (BreakwaterClientGate, "adaptive request budget"), so no budget
   * is given, and p99 stays within the SLO (891 µs over this run without the derived budget) with
   * goodput near capacity.
   */
  @Test
  void theDefaultDerivesItsBudgetAndKeepsP99WithinTheSlo() throws Exception {
    Experiment.Results r = new Experiment(Scenario.of(Map.of("clients", "100", "cores", "1",
        "service", "exp", "service_mean_us", "25", "rtt_us", "50", "slo_us", "750",
        "demand", "2.0", "warmup_ms", "200", "duration_ms", "300", "schemes", "spillway")), 2).run();
    ResultRecord d = row(r, "spillway", 2.0);
    assertTrue(d.p99Micros() <= 750, "p99 " + d.p99Micros());
    assertTrue(d.goodputRps() >= 0.95 * d.capacityRps(),
        "goodput " + d.goodputRps() + " of capacity " + d.capacityRps());
  }

  @Test
  void headlineScenarioAtTwiceCapacity() throws Exception {
    // scenarios/breakwater-synthetic at 2× demand, measured for 300 ms after a 200 ms warm-up.
    Scenario s = Scenario.load(Path.of("..", "scenarios", "breakwater-synthetic.conf"), Map.of(
        "demand", "2.0", "schemes", "none, breakwater", "warmup_ms", "200", "duration_ms", "300"));
    Experiment.Results r = new Experiment(s, 2).run();
    ResultRecord bw = row(r, "breakwater", 2.0);
    ResultRecord none = row(r, "none", 2.0);
    double cap = r.capacityRps();
    assertTrue(bw.goodputRps() >= 0.9 * cap, "breakwater goodput " + bw.goodputRps() + " of " + cap);
    assertTrue(bw.p99Micros() <= s.sloNanos() / 1000.0, "breakwater p99 " + bw.p99Micros());
    assertTrue(none.p99Micros() >= 10 * s.sloNanos() / 1000.0, "none p99 " + none.p99Micros());
    assertTrue(none.goodputRps() < 0.1 * cap, "none goodput " + none.goodputRps());
  }

  @Test
  void spikeScenarioConvergesWithinOneWindow() throws Exception {
    // scenarios/breakwater-spike with 400 ms steps instead of 1 s.
    Scenario s = Scenario.load(Path.of("..", "scenarios", "breakwater-spike.conf"), Map.of(
        "schedule", "0.5@0, 0.9@400, 1.4@800, 0.9@1200, 0.5@1600", "duration_ms", "2000",
        "schemes", "breakwater"));
    Experiment.Results r = new Experiment(s, 2).run();
    StepConvergence up = r.convergence().stream().filter(c -> c.toLevel() == 1.4).findFirst().orElseThrow();
    assertTrue(up.convergenceMillis() >= 0 && up.convergenceMillis() <= 20,
        "converged after " + up.convergenceMillis() + " ms");
    assertTrue(up.convergedGoodputRps() >= 0.9 * r.capacityRps(), "converged goodput " + up.convergedGoodputRps());
  }

  @Test
  void tenThousandClientsRun() throws Exception {
    Experiment.Results r = new Experiment(small(Map.of("clients", "10000", "demand", "2.0",
        "schemes", "breakwater")), 2).run();
    ResultRecord bw = row(r, "breakwater", 2.0);
    assertTrue(bw.goodputRps() >= 0.8 * r.capacityRps(), "goodput " + bw.goodputRps());
    assertTrue(bw.p99Micros() <= 200, "p99 " + bw.p99Micros());
  }

  @Test
  void resultsJsonHasTheIssuesFields() throws Exception {
    String json = Report.toJson(new Experiment(small(Map.of("demand", "1.0")), 2).run());
    for (String key : new String[] {"scheme", "clients", "demand", "capacity_rps", "throughput_rps",
        "goodput_rps", "p50_us", "p99_us", "slo_us", "drop_rate", "reject_delay_us"}) {
      assertTrue(json.contains("\"" + key + "\": "), key);
    }
  }
}
