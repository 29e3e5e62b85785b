package io.spillway.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.NoControl;
import io.spillway.api.OverloadScheme;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Two replicas with retry after a fast reject (protego-nsdi23 §5.3, Fig. 8) in the simulator. */
class ReplicaSimulationTest {

  private static final long END = 300_000_000L;

  /** A CPU-bound two-path workload, 4 cores a server, Protego's target 110 µs, SLO twice it. */
  private static Scenario scenario(String replicas) {
    return Scenario.of(Map.ofEntries(Map.entry("clients", "200"), Map.entry("cores", "4"),
        Map.entry("service_mean_us", "2"), Map.entry("paths", "0.8, 0.2"), Map.entry("path_hold_us", "0.2, 0"),
        Map.entry("lock_handoff", "barging"), Map.entry("slo_us", "220"), Map.entry("asqm.target_us", "110"),
        Map.entry("warmup_ms", "100"), Map.entry("duration_ms", "200"), Map.entry("replicas", replicas),
        Map.entry("demand", "1.5"), Map.entry("schemes", "protego")));
  }

  private static Tally run(Scenario s, OverloadScheme scheme, boolean asqm, double capacity, double level) {
    Recorder recorder = new Recorder(s.windowNanos());
    new Simulation(s, scheme, List.of(new Scenario.DemandStep(level, 0)), capacity, 0, END, recorder,
        s.seed(), asqm).run();
    return recorder.sum(0, END);
  }

  @Test
  void oneReplicaIsTheSingleServerModelUnchanged() throws Exception {
    Scenario withKey = scenario("1");
    Map<String, String> values = new java.util.LinkedHashMap<>(withKey.effective());
    values.remove("replicas");
    values.remove("retry_share");
    values.remove("name");
    Experiment.Results unset = new Experiment(Scenario.of(values), 1).run();
    Experiment.Results one = new Experiment(withKey, 1).run();
    assertEquals(unset.rows(), one.rows(), "replicas = 1 is the default and changes nothing");
    assertEquals(0, one.rows().get(0).retryRate());
  }

  /**
   * Server 1 alone at 1.5× its capacity sheds about a third; with a replica those requests are
   * retried on server 2 and served there: more goodput, every retry after a fast reject, and every
   * request issued ends once (served, finally rejected, or expired), bar the few in flight at the end.
   */
  @Test
  void fastRejectsAreRetriedOnTheReplicaAndNothingIsLost() {
    Scenario two = scenario("2");
    double capacity = Experiment.measureCapacity(two);
    assertEquals(Experiment.measureCapacity(scenario("1")), capacity, "capacity is one server's");
    Tally one = run(scenario("1"), SchemeRegistry.create("protego", two), true, capacity, 1.5);
    Tally both = run(two, SchemeRegistry.create("protego", two), true, capacity, 1.5);
    assertEquals(0, one.retried);
    // Protego sheds by its credits (calls expire in the client queue) and its budgets (rejects)
    assertTrue(one.rejectsReceived + one.expired > 0.1 * one.offered,
        "one server sheds: " + one.rejectsReceived + " rejected, " + one.expired + " expired of " + one.offered);
    assertTrue(both.retried > 0.1 * both.offered, "retried " + both.retried + " of " + both.offered);
    assertTrue(both.good > 1.3 * one.good, "goodput " + both.good + " vs " + one.good);
    long ended = both.completed + both.rejectedFinal + both.expired;
    assertTrue(ended <= both.offered, ended + " ended of " + both.offered + " issued");
    assertTrue(both.offered - ended < 2 * 200 * 64, "in flight at the end: " + (both.offered - ended));
  }

  /** No control never rejects, so a second server gets nothing: retries only follow fast rejects. */
  @Test
  void withoutRejectsNothingIsRetried() {
    Scenario two = scenario("2");
    Tally t = run(two, NoControl.INSTANCE, false, Experiment.measureCapacity(two), 1.5);
    assertEquals(0, t.rejectsReceived);
    assertEquals(0, t.retried);
  }

  /** A retry budget of a tenth of calls holds retries to it (plus the ten tokens each client starts with). */
  @Test
  void theRetryBudgetBoundsRetries() {
    Scenario two = scenario("2").with(Map.of("retry_share", "0.1"));
    Tally t = run(two, SchemeRegistry.create("protego", two), true, Experiment.measureCapacity(two), 1.5);
    assertTrue(t.retried > 0);
    assertTrue(t.retried <= 0.1 * t.offered + 10 * 200, "retried " + t.retried + " of " + t.offered);
  }

  @Test
  void replicasAreValidated() {
    assertThrows(IllegalArgumentException.class, () -> Scenario.of(Map.of("replicas", "3")));
    assertThrows(IllegalArgumentException.class, () -> Scenario.of(Map.of("replicas", "0")));
    assertThrows(IllegalArgumentException.class, () -> Scenario.of(Map.of("retry_share", "0")));
  }
}
