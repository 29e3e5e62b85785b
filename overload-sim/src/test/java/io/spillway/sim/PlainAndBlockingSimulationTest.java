package io.spillway.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.OverloadScheme;
import io.spillway.api.testing.LeakCheckingServerGate;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Clients that do not speak Spillway, and handlers that block, in virtual time: the default
 * scheme's plain-client path (AQM and the limit on waiting requests), and both of its halves'
 * share of the SLO where handlers take most of it, on the shipped scenarios.
 */
class PlainAndBlockingSimulationTest {

  /** A shipped scenario as steady runs of {@code demand}, measured 1 s after 0.5 s. */
  private static Scenario steady(String file, String schemes, String demand, Map<String, String> more)
      throws Exception {
    Map<String, String> v = new HashMap<>(Map.of("schedule", "", "sweep", "", "demand", demand,
        "schemes", schemes, "warmup_ms", "500", "duration_ms", "1000"));
    v.putAll(more);
    return Scenario.load(Path.of("..", "scenarios", file), v);
  }

  private static ResultRecord row(Experiment.Results r, String scheme, double demand) {
    return r.rows().stream().filter(x -> x.scheme().equals(scheme) && x.demand() == demand)
        .findFirst().orElseThrow();
  }

  @Test
  void plainClientsAtTwiceCapacityGetWhatTheirRefusalsLeave() throws Exception {
    Experiment.Results r = new Experiment(steady("grpc-demo-plain.conf", "none, spillway", "2.0",
        Map.of()), 2).run();
    ResultRecord none = row(r, "none", 2.0);
    ResultRecord spillway = row(r, "spillway", 2.0);
    // a refusal costs 16 us of a served call's 272: at 2x the core can serve at most
    // (1 - 2 r/s) / (1 - r/s) = 0.9375 of capacity
    double ceiling = (1 - 2 * 16.0 / 272) / (1 - 16.0 / 272);
    double share = spillway.goodputRps() / spillway.capacityRps();
    assertTrue(share >= 0.9 && share <= ceiling + 0.01, "goodput " + share + " of capacity");
    assertTrue(spillway.p99Micros() <= spillway.sloMicros(), "p99 " + spillway.p99Micros());
    assertEquals(0, none.goodputRps(), "unprotected, every call waits past the SLO");
    assertEquals(0, spillway.expiredRate(), "plain clients have no client queue");
  }

  /** The blocking service stepped from 0.2x to 0.9x at 500 ms: the phase after the step. */
  private static ResultRecord afterStep(Map<String, String> more) throws Exception {
    Map<String, String> v = new HashMap<>(Map.of("sweep", "", "schemes", "spillway",
        "schedule", "0.2@0, 0.9@500", "duration_ms", "1000"));
    v.putAll(more);
    Experiment.Results r = new Experiment(Scenario.load(Path.of("..", "scenarios",
        "blocking-handlers.conf"), v), 2).run();
    return r.phases().stream().filter(x -> x.demand() == 0.9).findFirst().orElseThrow();
  }

  @Test
  void aBlockingServiceIsNotRefusedBelowCapacityWhereTheHostReportsStarts() throws Exception {
    ResultRecord reported = afterStep(Map.of());
    ResultRecord unreported = afterStep(Map.of("report_starts", "false"));
    assertEquals(0, reported.dropRate(), "refused below capacity");
    // counted until they complete, the ~440 blocked calls at 0.9x wait for the limit to grow by
    // one a period from what 0.2x needed
    assertTrue(unreported.dropRate() > 0.05, "drop " + unreported.dropRate());
    assertTrue(reported.goodputRps() > 1.05 * unreported.goodputRps(),
        reported.goodputRps() + " vs " + unreported.goodputRps());
  }

  @Test
  void aBlockingServiceAtOverloadQueuesOnlyWhatItsHandlersLeaveOfTheSlo() throws Exception {
    Experiment.Results r = new Experiment(steady("blocking-handlers.conf", "none, spillway", "1.5",
        Map.of()), 2).run();
    ResultRecord spillway = row(r, "spillway", 1.5);
    // handlers hold 30 ms of the 50 ms SLO; a queue of 40 ms (2 d_t) would miss it with every call
    assertTrue(spillway.goodputRps() / spillway.capacityRps() >= 0.8,
        "goodput " + spillway.goodputRps() / spillway.capacityRps());
    assertTrue(spillway.p99Micros() <= spillway.sloMicros(), "p99 " + spillway.p99Micros());
    assertTrue(row(r, "none", 1.5).goodputRps() < 0.1 * spillway.goodputRps());
  }

  @Test
  void awareClientsOfABlockingServiceAtTwiceCapacityGetTheirAnswersWithinTheSlo() throws Exception {
    Experiment.Results r = new Experiment(steady("blocking-handlers.conf", "spillway", "2.0",
        Map.of("plain_share", "0", "warmup_ms", "1000", "duration_ms", "2000")), 2).run();
    ResultRecord spillway = row(r, "spillway", 2.0);
    // the credit half's d_t (20 ms) and AQM (40 ms) beside 30 ms handlers: p99 56 ms, 0.53
    assertTrue(spillway.goodputRps() / spillway.capacityRps() >= 0.9,
        "goodput " + spillway.goodputRps() / spillway.capacityRps());
    assertTrue(spillway.p99Micros() <= spillway.sloMicros(), "p99 " + spillway.p99Micros());
  }

  @Test
  void awareClientsOfABlockingServiceOnOneCoreLeaveTheirOwnQueueItsShareOfTheSlo()
      throws Exception {
    // the grpc-demo's shape with 30 ms blocks: one core, ~3,400 calls a second, eight sessions
    Experiment.Results r = new Experiment(steady("blocking-handlers.conf", "spillway", "2.0",
        Map.of("plain_share", "0", "cores", "1", "service_mean_us", "290", "clients", "8",
            "warmup_ms", "1000", "duration_ms", "2000")), 2).run();
    ResultRecord spillway = row(r, "spillway", 2.0);
    // With the AQM threshold at the SLO less the median residence, the server's queue and the
    // handlers' tail took the SLO and left the client's queue only its floor, a tenth of the SLO,
    // by which the p99 then passed it: 52.1 ms under the 50 ms SLO.
    assertTrue(spillway.p99Micros() <= spillway.sloMicros(), "p99 " + spillway.p99Micros());
    assertTrue(spillway.goodputRps() / spillway.capacityRps() >= 0.85,
        "goodput " + spillway.goodputRps() / spillway.capacityRps());
  }

  @Test
  void awareClientsOfABlockingServiceBelowCapacityFindACreditWithoutWaitingForAnAnswer()
      throws Exception {
    Experiment.Results r = new Experiment(steady("blocking-handlers.conf", "spillway", "0.5, 0.9",
        Map.of("plain_share", "0", "warmup_ms", "1000", "duration_ms", "2000")), 2).run();
    for (double demand : new double[] {0.5, 0.9}) {
      ResultRecord spillway = row(r, "spillway", demand);
      // With eq. 4's one credit beyond the calls in flight, a queued call waited ~30 ms for the
      // next answer's credit, past its ~17 ms queue timeout: 0.33 and 0.74 of capacity, 33 % and
      // 18 % expired. With windows for the calls started in a residence but the pool growing by
      // eq. 1 alone, 4 % expired at 0.9x: the pool took seconds to reach them.
      assertTrue(spillway.goodputRps() / spillway.capacityRps() >= 0.95 * demand,
          demand + "x: goodput " + spillway.goodputRps() / spillway.capacityRps());
      assertTrue(spillway.expiredRate() < 0.02, demand + "x: expired " + spillway.expiredRate());
      assertTrue(spillway.p99Micros() <= spillway.sloMicros(), "p99 " + spillway.p99Micros());
    }
  }

  @Test
  void everyRequestEndsOnceWithPlainAndAwareClientsAndBlockingHandlers() throws Exception {
    Scenario s = Scenario.load(Path.of("..", "scenarios", "blocking-handlers.conf"), Map.of(
        "plain_share", "0.5", "sweep", "", "schedule", "0.5@0, 2.0@300, 0@600", "duration_ms", "900"));
    double capacity = Experiment.measureCapacity(s);
    for (String name : List.of("spillway", "breakwater", "netflix-gradient2")) {
      List<LeakCheckingServerGate> gates = new ArrayList<>();
      OverloadScheme scheme = LeakCheckingServerGate.checking(SchemeRegistry.create(name, s),
          gates::add);
      Recorder recorder = new Simulation(s, scheme, s.schedule(), capacity, 0, s.durationNanos(),
          recorder(s), s.seed()).run();
      Tally t = recorder.sum(0, s.durationNanos());
      assertEquals(1, gates.size());
      gates.getFirst().assertNoLeaks();
      assertTrue(gates.getFirst().admitted() > 1_000, name + " admitted " + gates.getFirst().admitted());
      assertEquals(t.offered, t.completed + t.rejectedFinal + t.expired, name + ": every request ends once");
      long plain = gates.getFirst().issuedWithoutSession();
      assertTrue(plain > 1_000 && plain < gates.getFirst().issued() - 1_000,
          name + ": the gate sees plain requests as session 0 beside the sessions: " + plain + " of "
              + gates.getFirst().issued());
    }
  }

  private static Recorder recorder(Scenario s) {
    return new Recorder(s.windowNanos());
  }

  @Test
  void badKeysAreRefusedWithTheirNames() {
    Map<String, String> base = Map.of("cores", "1");
    assertThrows(IllegalArgumentException.class, () -> Scenario.of(with(base, "plain_share", "1.5")),
        "plain_share");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> Scenario.of(with(base, "block_us", "-1")));
    assertTrue(e.getMessage().contains("block_us"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class,
        () -> Scenario.of(with(with(base, "block_us", "100"), "paths", "1")));
    assertTrue(e.getMessage().contains("block_us"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> Scenario.of(with(base, "report_starts", "yes")));
    assertTrue(e.getMessage().contains("report_starts"), e.getMessage());
    assertEquals(List.of("plain_share", "block_us", "report_starts", "cost_reject_us"),
        Scenario.of(Map.of("plain_share", "1", "block_us", "5", "report_starts", "false",
            "cost_reject_us", "3")).simulatorOnlyKeys());
    assertEquals(List.of(), Scenario.of(base).simulatorOnlyKeys());
  }

  private static Map<String, String> with(Map<String, String> m, String key, String value) {
    Map<String, String> copy = new HashMap<>(m);
    copy.put(key, value);
    return copy;
  }
}
