package io.spillway.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.NoControl;
import io.spillway.api.Scheduler;
import io.spillway.threading.ThreadingModel;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The simulator's clock, server and arrivals against results known in closed form: one request's
 * latency, the M/D/1 and M/M/1 mean sojourn times (Pollaczek–Khinchine), a control period, a step of
 * the arrival rate; and runs that must not depend on the controllers' clock origin.
 */
class SimulatorModelTest {

  /** One core, 10 µs of service, a 10 µs RTT, no parsing or sending cost: a single-server queue. */
  private static Scenario oneCore(String service) {
    return Scenario.of(Map.of("clients", "100", "cores", "1", "service", service,
        "service_mean_us", "10", "rtt_us", "10", "cost_rx_us", "0", "cost_tx_us", "0",
        "capacity_rps", "100000", "schemes", "none"));
  }

  /** Mean latency, µs, over 2 s at {@code level} × 100,000/s after 100 ms. */
  private static double meanLatencyMicros(Scenario s, double level, long seed) {
    Recorder recorder = new Recorder(20_000_000L);
    new Simulation(s, NoControl.INSTANCE, List.of(new Scenario.DemandStep(level, 0)),
        s.capacityRps(), 0, 2_100_000_000L, recorder, seed).run();
    return recorder.sum(100_000_000L, 2_100_000_000L).latency.getMean() / 1000;
  }

  @Test
  void oneRequestTakesTheRttPlusItsWork() {
    Scenario s = Scenario.of(Map.of("cores", "1", "service", "const", "service_mean_us", "10",
        "rtt_us", "10", "cost_rx_us", "1", "cost_tx_us", "0.75"));
    List<Long> latencies = new ArrayList<>();
    new Simulation(s, NoControl.INSTANCE, List.of(new Scenario.DemandStep(0, 0)), 1e5, 0,
        10_000_000L, new Recorder(20_000_000L), 1).scriptArrivals(1_000_000L)
        .trace((id, issued, at, status) -> latencies.add(at - issued)).run();
    // RTT once each way, then parse, service and reply on the core
    assertEquals(List.of(10_000L + 1_000 + 10_000 + 750), latencies);
  }

  @Test
  void anMd1QueueWaitsAsPollaczekKhinchineSays() {
    // ρ = 0.5, S = 10 µs: W = ρ / (2μ(1 − ρ)) = 5 µs; latency = RTT + W + S = 25 µs
    for (long seed : new long[] {1, 2}) {
      assertEquals(25.0, meanLatencyMicros(oneCore("const"), 0.5, seed), 0.75, "seed " + seed);
    }
  }

  @Test
  void anMm1QueueWaitsAsPollaczekKhinchineSays() {
    // ρ = 0.5, S = 10 µs: W = ρ / (μ(1 − ρ)) = 10 µs; latency = RTT + W + S = 30 µs
    for (long seed : new long[] {1, 2}) {
      assertEquals(30.0, meanLatencyMicros(oneCore("exp"), 0.5, seed), 1.2, "seed " + seed);
    }
  }

  @Test
  void aControlPeriodFiresAtItsPeriod() {
    EventQueue queue = new EventQueue();
    long[] now = {0};
    Scheduler scheduler = queue.scheduler(0, () -> now[0]);
    List<Long> runs = new ArrayList<>();
    scheduler.every(7, () -> runs.add(now[0]));
    scheduler.schedule(() -> runs.add(-now[0]), 10).cancel();
    for (EventQueue.Event e = queue.next(50); e != null; e = queue.next(50)) {
      assertTrue(e.time >= now[0], "time went back from " + now[0] + " to " + e.time);
      now[0] = e.time;
      ((Runnable) e.payload).run();
    }
    assertEquals(List.of(7L, 14L, 21L, 28L, 35L, 42L, 49L), runs);
  }

  /**
   * ASQM's lock-wait estimate learns from the mutexes' hand-offs (LockWaitEstimator) on the
   * controllers' clock, so a clock about to wrap must change nothing, as it changes nothing without
   * locks (SimulationTest).
   */
  @Test
  void lockWaitEstimatesDoNotDependOnTheClockOrigin() throws Exception {
    Scenario s = Scenario.of(Map.ofEntries(Map.entry("clients", "200"), Map.entry("cores", "4"),
        Map.entry("paths", "0.5, 0.5"), Map.entry("warmup_ms", "50"),
        Map.entry("duration_ms", "100"), Map.entry("demand", "1.4"),
        Map.entry("schemes", "protego"), Map.entry("capacity_rps", "190000")));
    Experiment.Results zero = new Experiment(s, 1).run();
    Experiment.Results wrapping = new Experiment(s.with(Map.of("time_origin_ns",
        Long.toString(Long.MAX_VALUE - 100_000_000L))), 1).run();
    assertEquals(zero.rows(), wrapping.rows());
  }

  private static MuTuneSimulation.Run muTuneStep(double fromRps, long seed) {
    MuTuneSimulation.Costs costs = new MuTuneSimulation.Costs(
        new ServiceTime(ServiceTime.Kind.CONST, 10_000), 3_000, 3_000, 2_000, 5_000, 50_000,
        750_000, 4, new ServiceTime(ServiceTime.Kind.EXP, 100_000), 64, 40_000, 4);
    // 2,000/s from 100 ms, measured from then for 200 ms: 400 arrivals expected
    return new MuTuneSimulation(costs, seed).run(List.of(new Scenario.DemandStep(fromRps, 0),
        new Scenario.DemandStep(2_000, 100_000_000L)), 100_000_000L, 200_000_000L,
        ThreadingModel.parse("DB16"), null);
  }

  @Test
  void aMuTuneLoadStepTakesEffectAtItsTime() {
    // at 1/s before the step, the next arrival drawn then is a second away on average
    for (long seed : new long[] {1, 2, 3}) {
      assertEquals(400, muTuneStep(1, seed).completed(), 60, "seed " + seed);
    }
  }

  @Test
  void muTuneArrivalsResumeAfterAnIdleStep() {
    assertEquals(400, muTuneStep(0, 1).completed(), 60, "seed 1");
  }

  @Test
  void aTimeThatRoundsToNothingOrOverflowsIsRefusedByItsKey() {
    for (String key : List.of("service_mean_us", "rtt_us", "slo_us")) {
      for (String value : List.of("0.0001", "1e300")) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
            () -> Scenario.of(new HashMap<>(Map.of(key, value))), key + " = " + value);
        assertTrue(e.getMessage().contains("'" + key + "'"), e.getMessage());
      }
    }
    for (String key : List.of("cost_rx_us", "cost_tx_us", "block_us", "warmup_ms")) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> Scenario.of(Map.of(key, "1e300")), key);
      assertTrue(e.getMessage().contains("'" + key + "'"), e.getMessage());
    }
    assertThrows(IllegalArgumentException.class, () -> Scenario.of(Map.of("window_ms", "1e-7")));
  }
}
