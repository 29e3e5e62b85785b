package io.spillway.sim;

import io.spillway.api.NoControl;
import io.spillway.api.OverloadScheme;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Runs a scenario: measures capacity (unless given), then every scheme at every demand level, or
 * every scheme through the demand schedule. Runs are independent and each is deterministic for
 * its seed, so they run in parallel on the available cores without changing any result. Every
 * scheme sees the same arrivals and service times at a given level (same seed).
 */
public final class Experiment {

  /** Closed-loop capacity measurement: how long, and from when it is measured. */
  static final long CAPACITY_RUN_NANOS = 300_000_000L;
  static final long CAPACITY_WARMUP_NANOS = 50_000_000L;

  private final Scenario scenario;
  private final int threads;

  public Experiment(Scenario scenario, int threads) {
    this.scenario = scenario;
    this.threads = Math.max(1, threads);
    // Fail on bad scheme names before any time is spent.
    scenario.schemes().forEach(name -> SchemeRegistry.create(name, scenario));
  }

  /**
   * The results of a scenario.
   *
   * @param rows one per scheme and demand level (steady runs) or per scheme and window (schedules)
   * @param convergence for schedules, one per scheme and demand step
   * @param phases for schedules, one per scheme and phase between steps, its percentiles read
   *     from every response of the phase (not from the windows' percentiles); empty otherwise
   */
  public record Results(Scenario scenario, double capacityRps, boolean capacityMeasured,
      List<ResultRecord> rows, List<StepConvergence> convergence, List<ResultRecord> phases,
      double capacitySpread) {

    /** Results whose capacity carries no spread (given, or read in virtual time, where it has none). */
    public Results(Scenario scenario, double capacityRps, boolean capacityMeasured,
        List<ResultRecord> rows, List<StepConvergence> convergence, List<ResultRecord> phases) {
      this(scenario, capacityRps, capacityMeasured, rows, convergence, phases, Double.NaN);
    }

    /** Results without phase rows (steady runs). */
    public Results(Scenario scenario, double capacityRps, boolean capacityMeasured,
        List<ResultRecord> rows, List<StepConvergence> convergence) {
      this(scenario, capacityRps, capacityMeasured, rows, convergence, List.of());
    }

    /**
     * Whether {@code r}'s goodput exceeds capacity by more than the capacity reading's own spread
     * (a real-socket reading's slices, io.spillway.harness.SteadyCapacity): capacity is the most the
     * server does with no control, so such a row shows the reading was low. Never for a capacity
     * without a spread.
     */
    public boolean overCapacity(ResultRecord r) {
      return !Double.isNaN(capacitySpread) && r.goodputRps() > r.capacityRps() * (1 + capacitySpread);
    }
  }

  public Results run() throws InterruptedException {
    boolean measure = scenario.capacityRps() <= 0;
    double capacity = measure ? measureCapacity(scenario) : scenario.capacityRps();
    List<ResultRecord> rows = new ArrayList<>();
    List<StepConvergence> convergence = new ArrayList<>();
    List<ResultRecord> phases = new ArrayList<>();
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      if (scenario.schedule().isEmpty()) {
        runSteady(pool, capacity, rows);
      } else {
        runSchedule(pool, capacity, rows, convergence, phases);
      }
    } finally {
      pool.shutdownNow();
    }
    return new Results(scenario, capacity, measure, rows, convergence, phases);
  }

  /**
   * The highest throughput the server reaches with no control (docs/design.md "Capacity"):
   * a closed loop keeping enough requests outstanding that no core ever idles, despite the RTT.
   * One server of speed 1 is measured; with round-robin replicas the servers' capacity is that
   * times their summed speeds ({@link Scenario#capacityScale}).
   */
  static double measureCapacity(Scenario scenario) {
    long perRequest = scenario.service().meanNanos() + scenario.rxCostNanos() + scenario.txCostNanos();
    long away = scenario.rttNanos() + scenario.blockNanos(); // time a request holds no core
    int outstanding = scenario.cores() * (4 + 2 * (int) (away / perRequest + 1));
    Recorder recorder = new Recorder(10_000_000L);
    new Simulation(scenario, NoControl.INSTANCE, List.of(new Scenario.DemandStep(0, 0)), 0,
        outstanding, CAPACITY_RUN_NANOS, recorder, scenario.seed()).run();
    Tally t = recorder.sum(CAPACITY_WARMUP_NANOS, CAPACITY_RUN_NANOS);
    return t.completed / ((CAPACITY_RUN_NANOS - CAPACITY_WARMUP_NANOS) / 1e9) * scenario.capacityScale();
  }

  private void runSteady(ExecutorService pool, double capacity, List<ResultRecord> rows)
      throws InterruptedException {
    List<Double> levels = scenario.demandLevels();
    long warmup = scenario.warmupNanos();
    long end = warmup + scenario.durationNanos();
    List<Future<ResultRecord>> futures = new ArrayList<>();
    for (String name : scenario.schemes()) {
      for (int i = 0; i < levels.size(); i++) {
        double level = levels.get(i);
        long seed = scenario.seed() * 1_000_003L + i;
        futures.add(pool.submit(() -> {
          OverloadScheme scheme = SchemeRegistry.create(name, scenario);
          Recorder recorder = new Recorder(scenario.windowNanos());
          new Simulation(scenario, scheme, List.of(new Scenario.DemandStep(level, 0)), capacity, 0,
              end, recorder, seed, SchemeRegistry.usesAsqm(name)).run();
          return steadyRecord(scenario, name, level, capacity, recorder, warmup, end);
        }));
      }
    }
    collect(futures, rows);
  }

  private void runSchedule(ExecutorService pool, double capacity, List<ResultRecord> rows,
      List<StepConvergence> convergence, List<ResultRecord> phases) throws InterruptedException {
    List<Scenario.DemandStep> steps = scenario.schedule();
    long end = scenario.durationNanos();
    long window = scenario.windowNanos();
    List<Future<Recorder>> futures = new ArrayList<>();
    for (String name : scenario.schemes()) {
      futures.add(pool.submit(() -> new Simulation(scenario, SchemeRegistry.create(name, scenario),
          steps, capacity, 0, end, new Recorder(window), scenario.seed(), SchemeRegistry.usesAsqm(name)).run()));
    }
    List<Recorder> recorders = new ArrayList<>();
    collect(futures, recorders);
    for (int s = 0; s < scenario.schemes().size(); s++) {
      addSeries(scenario, scenario.schemes().get(s), recorders.get(s), capacity, rows, convergence,
          phases);
    }
  }

  /**
   * Turns a scheduled run's windows into time-series rows, per-step convergence and one row per
   * phase between steps (shared with the real-socket harness, which records into the same {@link
   * Recorder}). A phase row covers the whole windows from its step (rounded up to a window) to the
   * next step or the end; its p50 and p99 are those of every response in them, one histogram, so a
   * phase can be held against the SLO as a whole and not only window by window.
   */
  public static void addSeries(Scenario scenario, String name, Recorder recorder, double capacity,
      List<ResultRecord> rows, List<StepConvergence> convergence, List<ResultRecord> phases) {
    List<Scenario.DemandStep> steps = scenario.schedule();
    long end = scenario.durationNanos();
    long window = recorder.windowNanos();
    double windowMillis = window / 1e6;
    int full = (int) (end / window);
    for (int w = 0; w < full; w++) {
      long start = w * window;
      rows.add(ResultRecord.of(name, scenario, levelAt(steps, start, recorder), capacity,
          recorder.window(w), window, start / 1e6, windowMillis));
    }
    for (int k = 1; k < steps.size(); k++) {
      long from = roundUp(steps.get(k).startNanos(), window);
      long to = k + 1 < steps.size() ? steps.get(k + 1).startNanos() : end;
      int first = (int) (from / window);
      int last = (int) (to / window); // exclusive
      double[] goodput = new double[Math.max(0, last - first)];
      for (int w = first; w < last; w++) {
        goodput[w - first] = recorder.window(w).good / (window / 1e9);
      }
      convergence.add(StepConvergence.of(name, steps.get(k - 1).level(), steps.get(k).level(),
          steps.get(k).startNanos() / 1e6, goodput, windowMillis));
    }
    for (int k = 0; k < steps.size(); k++) {
      long from = roundUp(steps.get(k).startNanos(), window);
      long next = k + 1 < steps.size() ? steps.get(k + 1).startNanos() : end;
      long to = next - next % window;
      if (to > from) {
        phases.add(ResultRecord.of(name, scenario, steps.get(k).level(), capacity,
            recorder.sum(from, to), to - from, from / 1e6, (to - from) / 1e6));
      }
    }
  }

  /**
   * The level the schedule sets at {@code nanos}, as the phase rows read it; the recorder's own
   * record of the switches for a run without a schedule. A generator on sockets switches a little
   * after the step's time, and a window that starts at the step would otherwise be filed under
   * the level before it, in a phase of its own when the table groups windows by level.
   */
  static double levelAt(List<Scenario.DemandStep> steps, long nanos, Recorder recorder) {
    if (steps.isEmpty()) {
      return recorder.demandAt(nanos);
    }
    double level = 0;
    for (Scenario.DemandStep step : steps) {
      if (step.startNanos() <= nanos) {
        level = step.level();
      }
    }
    return level;
  }

  /**
   * A steady run's result: the windows after the warm-up (rounded up to a window), to the end.
   */
  public static ResultRecord steadyRecord(Scenario scenario, String name, double level,
      double capacity, Recorder recorder, long warmupNanos, long endNanos) {
    long window = recorder.windowNanos();
    long from = roundUp(warmupNanos, window);
    long to = endNanos - endNanos % window;
    return ResultRecord.of(name, scenario, level, capacity, recorder.sum(from, to), to - from, -1, 0);
  }

  /** Waits for every run in order, adding each result to {@code into}; rethrows a run's failure. */
  static <T> void collect(List<Future<T>> futures, List<T> into) throws InterruptedException {
    for (Future<T> f : futures) {
      try {
        into.add(f.get());
      } catch (ExecutionException e) {
        Throwable cause = e.getCause();
        if (cause instanceof RuntimeException re) {
          throw re;
        }
        throw new IllegalStateException("simulation failed", cause);
      }
    }
  }

  static long roundUp(long value, long unit) {
    long r = value % unit;
    return r == 0 ? value : value + unit - r;
  }
}
