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
    assertThrows(IllegalArgumentException.class,
        () -> Scenario.of(Map.of("replicas", "17", "replica_routing", "round_robin")));
    assertThrows(IllegalArgumentException.class, () -> Scenario.of(Map.of("replica_routing", "random")));
    assertThrows(IllegalArgumentException.class,
        () -> Scenario.of(Map.of("replicas", "3", "replica_routing", "round_robin", "replica_speeds", "1, 1")));
    assertThrows(IllegalArgumentException.class,
        () -> Scenario.of(Map.of("replicas", "2", "replica_routing", "round_robin", "replica_speeds", "1, 0")));
  }

  // ------------------------------------------------ round robin (overload-grpc's balanced channel)

  /**
   * The gRPC demo's server (one core, 200 µs a call, 30 µs a message each way, 1 ms round trip, SLO
   * 5 ms, scenarios/grpc-demo-replicas.conf) three times behind a round-robin channel of 8 clients,
   * with the given speeds and retry to a replica within a tenth of calls.
   */
  private static Scenario balanced(String speeds) {
    return Scenario.of(Map.ofEntries(Map.entry("clients", "8"), Map.entry("cores", "1"),
        Map.entry("service", "const"), Map.entry("service_mean_us", "200"), Map.entry("rtt_us", "1000"),
        Map.entry("slo_us", "5000"), Map.entry("cost_rx_us", "30"), Map.entry("cost_tx_us", "30"),
        Map.entry("replicas", "3"), Map.entry("replica_routing", "round_robin"),
        Map.entry("replica_speeds", speeds), Map.entry("retry_share", "0.1"),
        Map.entry("warmup_ms", "1000"), Map.entry("duration_ms", "2000"), Map.entry("schemes", "spillway")));
  }

  private static final long BALANCED_WARMUP = 1_000_000_000L;
  private static final long BALANCED_END = 3_000_000_000L;

  private static Tally runBalanced(Scenario s, OverloadScheme scheme, double capacity, double level) {
    Recorder recorder = new Recorder(s.windowNanos());
    new Simulation(s, scheme, List.of(new Scenario.DemandStep(level, 0)), capacity, 0, BALANCED_END,
        recorder, s.seed()).run();
    return recorder.sum(BALANCED_WARMUP, BALANCED_END);
  }

  private static double goodputRps(Tally t) {
    return t.good / ((BALANCED_END - BALANCED_WARMUP) / 1e9);
  }

  /** Round robin: demand 1.0 is the servers' summed capacity, each server's measured at speed 1. */
  @Test
  void roundRobinCapacityIsTheServersSummedSpeedsTimesOneServers() {
    double one = Experiment.measureCapacity(balanced("1, 1, 1").with(Map.of("replicas", "1",
        "replica_speeds", "1")));
    assertEquals(3 * one, Experiment.measureCapacity(balanced("1, 1, 1")), 1e-6);
    assertEquals(2.5 * one, Experiment.measureCapacity(balanced("1, 1, 0.5")), 1e-6);
  }

  /**
   * A server at half speed takes as long for everything: with no control and plain rotation, a
   * load of 0.8 × the three servers' capacity is served if all three run at full speed; with the
   * third at half speed (capacity then 2.5 servers, the same requests per second) its third of the
   * calls is 1.2 × what it can serve, so it queues without bound and its share is lost.
   */
  @Test
  void aServerAtHalfSpeedTakesTwiceAsLong() {
    Scenario equal = balanced("1, 1, 1");
    Scenario slowThird = balanced("1, 1, 0.5");
    double capacity = Experiment.measureCapacity(equal);
    Tally even = runBalanced(equal, NoControl.INSTANCE, capacity, 0.8);
    Tally uneven = runBalanced(slowThird, NoControl.INSTANCE, capacity, 0.8);
    assertTrue(goodputRps(even) > 0.95 * 0.8 * capacity, "equal servers: " + goodputRps(even));
    assertTrue(goodputRps(uneven) < 0.75 * 0.8 * capacity, "a third at half speed: " + goodputRps(uneven));
  }

  /**
   * Three replicas, one at half capacity, at 2× their summed capacity (the gRPC issue's setting):
   * Spillway's sessions, one per server, send each server what its credits admit, so goodput stays
   * near the summed capacity with p99 within the SLO, and retries stay within the budget's tenth.
   */
  @Test
  void threeReplicasOneAtHalfCapacityKeepTheirSummedCapacityAtTwiceIt() {
    Scenario s = balanced("1, 1, 0.5");
    double capacity = Experiment.measureCapacity(s);
    Tally t = runBalanced(s, SchemeRegistry.create("spillway", s), capacity, 2.0);
    assertTrue(goodputRps(t) >= 0.9 * capacity, "goodput " + goodputRps(t) + " of " + capacity);
    assertTrue(t.latency.getValueAtPercentile(99) <= s.sloNanos(),
        "p99 " + t.latency.getValueAtPercentile(99) + " ns");
    assertTrue(t.retried > 0, "fast rejects are retried");
    assertTrue(t.retried <= 0.1 * t.offered + 10 * 8, "retried " + t.retried + " of " + t.offered);
  }

  /**
   * The same three replicas at 2×, with each client's one session for all three and its calls sent
   * in turn once they leave it (one session on a round_robin channel): the servers' credits pool
   * into one window per client, the slow server gets a third of the calls its credits did not
   * admit, and goodput falls well below the per-backend sessions' at the same load. Every call
   * still ends once.
   */
  @Test
  void oneSessionForAllReplicasLosesWhatASessionPerReplicaKeeps() {
    Scenario perBackend = balanced("1, 1, 0.5");
    Scenario shared = perBackend.with(Map.of("replica_routing", "shared_session"));
    assertTrue(shared.sharedSession());
    double capacity = Experiment.measureCapacity(perBackend);
    assertEquals(capacity, Experiment.measureCapacity(shared), 1e-6);
    Tally each = runBalanced(perBackend, SchemeRegistry.create("spillway", perBackend), capacity, 2.0);
    Tally one = runBalanced(shared, SchemeRegistry.create("spillway", shared), capacity, 2.0);
    assertEquals(0, one.retried, "no retries with one session");
    assertTrue(goodputRps(one) < 0.8 * capacity, "one session: " + goodputRps(one) + " of " + capacity);
    assertTrue(goodputRps(each) > goodputRps(one) + 0.2 * capacity,
        "a session per replica: " + goodputRps(each) + " against " + goodputRps(one));
    long ended = one.completed + one.rejectedFinal + one.expired;
    assertTrue(ended <= one.offered, ended + " ended of " + one.offered + " issued");
  }
}
