package io.spillway.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.Status;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Shared locks held in turn by a maintenance thread (scenario keys {@code shared_locks}, {@code
 * maintenance_*}): requests scripted at exact times, answers read to the nanosecond. Every run: two
 * cores, a constant 100 µs service, RTT 10 µs, no message costs, so a request that waits for
 * nothing is answered 110 µs after it is issued.
 */
class MaintenanceLockSimulationTest {

  private static final long US = 1_000;
  private static final long MS = 1_000_000;
  /** Service + RTT: the latency of a request that waits for nothing. */
  private static final long ALONE = 110 * US;

  private record Answer(long id, long issued, long at, Status status) {
    long latency() {
      return at - issued;
    }
  }

  private static Scenario scenario(String... keyValues) {
    Map<String, String> keys = new HashMap<>(Map.ofEntries(Map.entry("clients", "4"),
        Map.entry("cores", "2"), Map.entry("service", "const"), Map.entry("service_mean_us", "100"),
        Map.entry("rtt_us", "10"), Map.entry("cost_rx_us", "0"), Map.entry("cost_tx_us", "0"),
        Map.entry("slo_us", "100000"), Map.entry("schemes", "none"), Map.entry("shared_locks", "1"),
        Map.entry("maintenance_period_ms", "10"), Map.entry("maintenance_start_ms", "0"),
        Map.entry("maintenance_hold_us", "5000")));
    for (int i = 0; i < keyValues.length; i += 2) {
      if (keyValues[i + 1] == null) {
        keys.remove(keyValues[i]); // left to its default
      } else {
        keys.put(keyValues[i], keyValues[i + 1]);
      }
    }
    return Scenario.of(keys);
  }

  /** Runs {@code scheme} with requests issued at {@code issues} (and no other arrivals) for 50 ms. */
  private static List<Answer> run(Scenario s, String scheme, long... issues) {
    List<Answer> answers = new ArrayList<>();
    new Simulation(s, SchemeRegistry.create(scheme, s), List.of(new Scenario.DemandStep(0, 0)), 1,
        0, 50 * MS, new Recorder(10 * MS), 1, SchemeRegistry.usesAsqm(scheme))
        .scriptArrivals(issues)
        .trace((id, issued, at, status) -> answers.add(new Answer(id, issued, at, status)))
        .run();
    answers.sort((a, b) -> Long.compare(a.id(), b.id()));
    assertEquals(issues.length, answers.size(), "every request answered: " + answers);
    return answers;
  }

  @Test
  void aRequestArrivingOneMillisecondIntoAFiveMillisecondHoldWaitsFour() {
    // The hold takes the lock at 0 and ends at 5 ms. Issued at 0.995 ms, the request reaches the
    // server at 1 ms (half the RTT), finds the lock held, waits to 5 ms, then is served.
    List<Answer> a = run(scenario(), "none", 995 * US, 5_995 * US);
    assertEquals(Status.OK, a.get(0).status());
    assertEquals(4 * MS + ALONE, a.get(0).latency());
    // once the hold has ended nothing waits
    assertEquals(ALONE, a.get(1).latency());
  }

  @Test
  void theHoldRecursAtItsPeriodRoundRobinOverTheLocks() {
    // Two locks, a hold every 10 ms: lock 0 at 0, lock 1 at 10 ms, lock 0 at 20 ms. A request
    // takes both, so it waits 4 ms one millisecond into each hold, and nothing between them.
    Scenario s = scenario("shared_locks", "2");
    List<Answer> a = run(s, "none", 995 * US, 7 * MS, 10_995 * US, 17 * MS, 20_995 * US);
    assertEquals(List.of(4 * MS + ALONE, ALONE, 4 * MS + ALONE, ALONE, 4 * MS + ALONE),
        a.stream().map(Answer::latency).toList());
    // By default the first hold is due one period in (as a fixed-rate schedule's first run).
    List<Answer> late = run(scenario("maintenance_start_ms", null), "none", 995 * US, 10_995 * US);
    assertEquals(List.of(ALONE, 4 * MS + ALONE), late.stream().map(Answer::latency).toList());
  }

  @Test
  void aHoldLongerThanThePeriodDelaysTheNextRunInsteadOfOverlappingIt() {
    // Hold 5 ms every 3 ms: runs at [0, 5], [5, 10] (due at 3), [10, 15] (due at 6). A request
    // reaching the server at 8 ms waits to 10 ms; one at 5.5 ms waits to 10 ms too.
    Scenario s = scenario("maintenance_period_ms", "3");
    List<Answer> a = run(s, "none", 5_495 * US, 7_995 * US);
    assertEquals(4_500 * US + ALONE, a.get(0).latency());
    assertEquals(2 * MS + ALONE, a.get(1).latency());
  }

  @Test
  void asqmRefusesAtOnceWhenTheOldestWaiterHasWaitedBeyondTheRemainingBudget() {
    // Budget = 2,110 µs target − 100 µs p99 service − 10 µs RTT = 2 ms. BudgetedLock's rule sees
    // the waiters, not the holder: the first request into the hold (1 ms) finds nobody waiting
    // and queues (it then waits 4 ms, past its budget); one at 2.5 ms finds it waiting 1.5 ms,
    // within its 2 ms, and queues; one at 3.5 ms finds it waiting 2.5 ms and is refused at once.
    Scenario s = scenario("schemes", "protego-asqm", "asqm.target_us", "2110");
    assertEquals(2 * MS, s.asqmBudgetNanos());
    List<Answer> a = run(s, "protego-asqm", 995 * US, 2_495 * US, 3_495 * US);
    assertEquals(Status.OK, a.get(0).status());
    assertEquals(4 * MS + ALONE, a.get(0).latency());
    assertEquals(Status.OK, a.get(1).status());
    assertEquals(2_500 * US + ALONE, a.get(1).latency()); // served at 5 ms beside the first
    assertEquals(Status.REJECTED_BUDGET, a.get(2).status());
    assertEquals(10 * US, a.get(2).latency()); // refused on arrival: only the RTT
    // Without ASQM the third waits too (a third core, so it need not wait for one after the hold).
    List<Answer> plain = run(s.with(Map.of("cores", "3")), "none", 995 * US, 2_495 * US, 3_495 * US);
    assertEquals(Status.OK, plain.get(2).status());
    assertEquals(1_500 * US + ALONE, plain.get(2).latency());
  }

  @Test
  void theMaintenanceThreadQueuesBehindWaitingRequestsAndCountsAsAWaiter() {
    // Requests hold the lock 2 ms each (shared_lock_hold_us). R1 holds it from 0.5 ms to 2.5 ms;
    // the maintenance run, due at 1 ms, queues behind it (never refused); R2, at 1.5 ms, queues
    // behind the maintenance run, which holds the lock 2.5–7.5 ms; R2 then holds it 7.5–9.5 ms.
    Scenario s = scenario("shared_lock_hold_us", "2000", "maintenance_start_ms", "1",
        "maintenance_period_ms", "100");
    List<Answer> a = run(s, "none", 495 * US, 1_495 * US);
    assertEquals(2 * MS + ALONE, a.get(0).latency());
    assertEquals(6 * MS + 2 * MS + ALONE, a.get(1).latency());
    // Under ASQM the queued maintenance run is the lock's oldest waiter: R2 finds it 0.5 ms old,
    // beyond a 0.4 ms budget (refused at once), within a 0.6 ms one (queued, as above).
    Scenario tight = s.with(Map.of("schemes", "protego-asqm", "asqm.target_us", "510"));
    List<Answer> refused = run(tight, "protego-asqm", 495 * US, 1_495 * US);
    assertEquals(2 * MS + ALONE, refused.get(0).latency());
    assertEquals(Status.REJECTED_BUDGET, refused.get(1).status());
    assertEquals(10 * US, refused.get(1).latency());
    Scenario roomy = s.with(Map.of("schemes", "protego-asqm", "asqm.target_us", "710"));
    List<Answer> queued = run(roomy, "protego-asqm", 495 * US, 1_495 * US);
    assertEquals(Status.OK, queued.get(1).status());
    assertEquals(8 * MS + ALONE, queued.get(1).latency());
  }

  /**
   * A request sent with a queueing budget ({@code breakwater.budget_us}) is aborted unrun if no
   * core takes it before the budget is spent: the transport's rule at dispatch. One that a core
   * has taken, and that comes back to the run queue handed a lock it waited for (FIFO hand-off),
   * is in its handler: it runs, and releases the lock. Aborted there, it would keep the lock for
   * good, and every request and maintenance run after it would wait forever.
   */
  @Test
  void aRequestHandedALockAfterItsHeaderBudgetIsSpentRunsAndReleasesIt() {
    // Budget 1 ms from parsing at 1 ms; the lock is handed to it at 5 ms.
    Scenario s = scenario("schemes", "breakwater", "breakwater.budget_us", "1000");
    List<Answer> a = run(s, "breakwater", 995 * US, 7 * MS, 10_995 * US);
    assertEquals(List.of(Status.OK, Status.OK, Status.OK), a.stream().map(Answer::status).toList(),
        a.toString());
    assertEquals(4 * MS + ALONE, a.get(0).latency());
    assertEquals(ALONE, a.get(1).latency());
    assertEquals(4 * MS + ALONE, a.get(2).latency()); // the next hold, at 10 ms, took the lock
  }

  @Test
  void aBargingSharedLockLetsTheWokenWaiterRunAsAFifoOneDoes() {
    // With nobody else contending, a nonfair lock serves the waiter at the hold's end too.
    List<Answer> a = run(scenario("shared_lock_handoff", "barging"), "none", 995 * US);
    assertEquals(4 * MS + ALONE, a.get(0).latency());
  }

  @Test
  void aLognormalHoldIsFittedToTheMeanAndP99() {
    // docs/results/lucene/calibration.txt: refresh under the shard lock, mean 7.09 ms, p99 31.08 ms
    double sigma = Maintenance.lognormalSigma(7.09, 31.08);
    assertEquals(0.759, sigma, 0.001);
    Maintenance m = scenario("maintenance_hold_us", "7090", "maintenance_hold_p99_us", "31080")
        .maintenance();
    assertEquals(sigma, m.sigma(), 1e-12);
    assertEquals(31_080 * US, m.p99Nanos(), 1 * US);
    SplittableRandom random = new SplittableRandom(7);
    long[] holds = new long[200_000];
    double sum = 0;
    for (int i = 0; i < holds.length; i++) {
      holds[i] = m.sampleHold(random);
      sum += holds[i];
    }
    java.util.Arrays.sort(holds);
    assertEquals(7_090 * US, sum / holds.length, 0.02 * 7_090 * US);
    assertEquals(31_080 * US, holds[(int) (0.99 * holds.length)], 0.03 * 31_080 * US);
    // no p99 key: every hold is the mean
    assertEquals(5 * MS, scenario().maintenance().sampleHold(random));
  }

  @Test
  void badSharedLockAndMaintenanceValuesAreRejectedNamingTheKey() {
    assertRejected("maintenance_hold_p99_us", "must be above the mean",
        "maintenance_hold_p99_us", "4000"); // below the 5,000 us mean
    assertRejected("maintenance_hold_p99_us", "at most", "maintenance_hold_p99_us", "90000");
    assertRejected("maintenance_hold_p99_us", "expected a number", "maintenance_hold_p99_us", "31 ms");
    assertRejected("maintenance_period_ms", "must be positive", "maintenance_period_ms", "-250");
    assertRejected("maintenance_period_ms", "shared_locks", "shared_locks", "0");
    assertRejected("maintenance_hold_us", "must be positive", "maintenance_hold_us", "0");
    assertRejected("maintenance_start_ms", "must not be negative", "maintenance_start_ms", "-1");
    assertRejected("shared_locks", "whole number", "shared_locks", "four");
    assertRejected("shared_locks", "between 0 and 1024", "shared_locks", "-1");
    assertRejected("shared_lock_hold_us", "must not be negative", "shared_lock_hold_us", "-0.01");
    assertRejected("shared_lock_handoff", "expected fifo or barging", "shared_lock_handoff", "fair");
    // a maintenance key without a maintenance thread is a mistake, not ignored
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> Scenario.of(Map.of("shared_locks", "4", "maintenance_hold_us", "7090")));
    assertTrue(e.getMessage().contains("'maintenance_hold_us'") && e.getMessage().contains("maintenance_period_ms"),
        e.getMessage());
    e = assertThrows(IllegalArgumentException.class,
        () -> Scenario.of(Map.of("shared_locks", "4", "maintenance_period_ms", "250")));
    assertTrue(e.getMessage().contains("'maintenance_hold_us'"), e.getMessage());
    // handlers that block are not modelled with shared locks
    e = assertThrows(IllegalArgumentException.class,
        () -> Scenario.of(Map.of("shared_locks", "4", "block_us", "100")));
    assertTrue(e.getMessage().contains("'block_us'"), e.getMessage());
    // none by default, and the real-socket harness is told these are the simulator's alone
    assertNull(Scenario.of(Map.of()).maintenance());
    assertEquals(List.of("shared_locks"), scenario().simulatorOnlyKeys());
  }

  private static void assertRejected(String key, String why, String... keyValues) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> scenario(keyValues));
    assertTrue(e.getMessage().contains("'" + key + "'") && e.getMessage().contains(why), e.getMessage());
  }
}
