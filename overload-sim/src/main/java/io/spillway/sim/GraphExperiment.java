package io.spillway.sim;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Collectors;

/**
 * Runs a call-graph scenario ({@link CallGraph}): measures each interface's capacity alone, then
 * runs every scheme placed on the graph ({@link GraphScheme}) at every steady demand level, or
 * through the demand schedule, and summarises each interface and each service.
 *
 * <p>Demand: each interface's level multiplies its own capacity. As the real-socket graph harness
 * ({@code GraphHarnessMain}) runs the same scenarios:
 * <ul>
 *   <li>steady (no {@code schedule}, and not every interface has its own): for each level of
 *       {@code demand}, {@code warmup_ms} at 0.8 × capacity (rajomon-nsdi25 §5.1: "we warm up
 *       with load at 80% ... and then overload"; a level at or below 0.8 runs from the start),
 *       then {@code duration_ms} at the level, measured, the surge's transient included. An
 *       interface with its own {@code graph.<iface>.schedule} follows it instead.
 *   <li>schedule: each scheme runs once through each interface's own schedule, or the
 *       scenario's, and each phase between two steps is summarised.
 * </ul>
 * An interface offered nothing in a phase has no row there.
 *
 * <p>A scheme name that neither {@link SchemeRegistry} nor its {@code -d} form knows is skipped
 * with a message, so a scenario may list a scheme that is not built yet (a scheme
 * that plugs in by name).
 *
 * <p>Runs are independent and deterministic for their seed, so they run in parallel without
 * changing any result.
 */
public final class GraphExperiment {

  /** Normal load (rajomon-nsdi25 §5.1): the warm-up level before a surge. */
  static final double NORMAL_LOAD = 0.8;

  /**
   * Closed-loop capacity measurement: how long, and from when it is measured. A second measured
   * keeps the sampling noise of a bottleneck with exponential compute near 1 % at 5,000 rps.
   */
  static final long CAPACITY_RUN_NANOS = 1_050_000_000L;
  static final long CAPACITY_WARMUP_NANOS = 50_000_000L;

  private final Scenario scenario;
  private final CallGraph graph;
  private final int threads;

  public GraphExperiment(Scenario scenario, int threads) {
    this.scenario = scenario;
    this.graph = scenario.callGraph();
    if (graph == null) {
      throw new IllegalArgumentException("scenario " + scenario.name() + " describes no call graph");
    }
    this.threads = Math.max(1, threads);
  }

  /**
   * One interface in one phase (or steady level) under one scheme. Shed shares are of the
   * requests offered in the phase; wasted is the share of compute spent on requests that failed.
   * A share whose count is zero (nothing offered, no compute) is NaN, written as null.
   * {@code recoveryMillis}: for a surge level, and a schedule's every phase but the first, the time
   * from the step until goodput stays recovered ({@link RecoveryTime}, on {@link
   * RecoveryTime#WINDOW_NANOS} windows), -1 if it did not; NaN for other rows and for time windows.
   */
  public record Row(String scheme, String iface, double demand, double fromMillis, double toMillis,
      double capacityRps, double offeredRps, double throughputRps, double goodputRps,
      double p50Micros, double p95Micros, double p99Micros, double sloMicros,
      double shedClient, double shedFront, double shedInner, double wasted, double recoveryMillis) { }

  /**
   * One service in one phase under one scheme: where requests were shed, hop by hop. {@code
   * dropRate} is NaN when the service received nothing.
   */
  public record ServiceRow(String scheme, double fromMillis, double toMillis, String service,
      double receivedRps, double dropRate, double shedOutboundRps, double utilization) { }

  /**
   * The results of a scenario. {@code interfaces}: one per interface, in the graph's order, its
   * rows as the socket graph harness writes an interface's results.json (steady rows, or windows,
   * convergence and phases of a schedule; {@link #interfaceScenario}), with the reject delays and
   * message counts this simulator does not keep absent. {@code cpuSeconds}, the simulating
   * threads' CPU time per scheme, is not part of the results proper (it is left out of the files).
   */
  public record Results(Scenario scenario, CallGraph graph, double[] capacityRps,
      boolean capacityMeasured, List<Row> rows, List<ServiceRow> services, List<Row> series,
      List<Experiment.Results> interfaces, List<String> skipped, Map<String, Double> cpuSeconds) { }

  /** Each interface's rows, convergence and phases for its own results.json, by interface index. */
  private record Own(List<List<ResultRecord>> rows, List<List<StepConvergence>> convergence,
      List<List<ResultRecord>> phases) {

    static Own of(int interfaces) {
      Own own = new Own(new ArrayList<>(), new ArrayList<>(), new ArrayList<>());
      for (int i = 0; i < interfaces; i++) {
        own.rows.add(new ArrayList<>());
        own.convergence.add(new ArrayList<>());
        own.phases.add(new ArrayList<>());
      }
      return own;
    }
  }

  public Results run() throws InterruptedException {
    List<String> names = new ArrayList<>();
    List<String> skipped = new ArrayList<>();
    for (String name : scenario.schemes()) {
      if (GraphScheme.known(name)) {
        GraphScheme.resolve(name, scenario); // fail on bad parameters before any time is spent
        names.add(name);
      } else {
        skipped.add(name);
      }
    }
    int n = graph.interfaces().size();
    boolean measure = scenario.capacityRps() <= 0;
    double[] capacity = new double[n];
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      if (measure) {
        List<Future<Double>> futures = new ArrayList<>();
        for (int i = 0; i < n; i++) {
          int iface = i;
          futures.add(pool.submit(() -> measureCapacity(scenario, graph, iface)));
        }
        List<Double> measured = new ArrayList<>();
        Experiment.collect(futures, measured);
        for (int i = 0; i < n; i++) {
          capacity[i] = measured.get(i);
        }
      } else {
        java.util.Arrays.fill(capacity, scenario.capacityRps());
      }
      List<Row> rows = new ArrayList<>();
      List<ServiceRow> services = new ArrayList<>();
      List<Row> series = new ArrayList<>();
      Map<String, Double> cpu = new LinkedHashMap<>();
      Own own = Own.of(n);
      if (scheduled()) {
        runSchedule(pool, names, capacity, rows, services, series, own, cpu);
      } else {
        runSteady(pool, names, capacity, rows, services, own, cpu);
      }
      List<Experiment.Results> interfaces = new ArrayList<>();
      for (CallGraph.Interface i : graph.interfaces()) {
        interfaces.add(new Experiment.Results(interfaceScenario(scenario, i, scheduled()),
            capacity[i.index()], measure, own.rows().get(i.index()),
            own.convergence().get(i.index()), own.phases().get(i.index())));
      }
      return new Results(scenario, graph, capacity, measure, rows, services, series, interfaces,
          skipped, cpu);
    } finally {
      pool.shutdownNow();
    }
  }

  /**
   * The scenario as interface {@code i} sees it, for its own results.json, table and plots: its
   * SLO, in a scheduled run its schedule (its own, else the scenario's; none in a steady run), and
   * a name and description with the interface in them. The socket graph harness uses it too.
   */
  public static Scenario interfaceScenario(Scenario scenario, CallGraph.Interface i,
      boolean scheduled) {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("name", scenario.name() + "-" + i.name());
    m.put("description", i.name() + " of " + scenario.name()
        + (scenario.description().isEmpty() ? "" : ": " + scenario.description()));
    m.put("slo_us", JsonText.num(i.sloNanos() / 1e3));
    List<Scenario.DemandStep> steps = !scheduled ? List.of()
        : i.schedule().isEmpty() ? scenario.schedule() : i.schedule();
    m.put("schedule", steps.stream()
        .map(s -> JsonText.num(s.level()) + "@" + JsonText.num(s.startNanos() / 1e6))
        .collect(Collectors.joining(", ")));
    return scenario.with(m);
  }

  /**
   * {@code r} with what this simulator does not keep for an interface, its reject delays and
   * messages per request, absent (NaN, written as null) rather than a 0 that reads as measured.
   */
  private static ResultRecord uncounted(ResultRecord r) {
    return new ResultRecord(r.scheme(), r.clients(), r.demand(), r.capacityRps(), r.offeredRps(),
        r.throughputRps(), r.goodputRps(), r.p50Micros(), r.p99Micros(), r.sloMicros(),
        r.dropRate(), Double.NaN, r.expiredRate(), Double.NaN, r.windowStartMillis(),
        r.windowMillis(), r.retryRate(), Double.NaN);
  }

  /** Whether demand follows a schedule: the scenario's, or every interface has its own. */
  boolean scheduled() {
    return !scenario.schedule().isEmpty()
        || graph.interfaces().stream().allMatch(i -> !i.schedule().isEmpty());
  }

  /** Each interface's steps in a scheduled run: its own schedule, else the scenario's. */
  List<List<Scenario.DemandStep>> schedules() {
    List<List<Scenario.DemandStep>> steps = new ArrayList<>();
    for (CallGraph.Interface i : graph.interfaces()) {
      steps.add(i.schedule().isEmpty() ? scenario.schedule() : i.schedule());
    }
    return steps;
  }

  /** Each interface's steps in the steady run at {@code level}: warm-up at 0.8, then the level. */
  List<List<Scenario.DemandStep>> steady(double level) {
    long warmup = scenario.warmupNanos();
    List<List<Scenario.DemandStep>> steps = new ArrayList<>();
    for (CallGraph.Interface i : graph.interfaces()) {
      steps.add(!i.schedule().isEmpty() ? i.schedule()
          : level <= NORMAL_LOAD || warmup == 0 ? List.of(new Scenario.DemandStep(level, 0))
          : List.of(new Scenario.DemandStep(NORMAL_LOAD, 0), new Scenario.DemandStep(level, warmup)));
    }
    return steps;
  }

  private record Run(GraphRecorder recorder, double seconds) { }

  private Run simulate(String name, GraphSimulation.Load load, long end, long seed) {
    ThreadMXBean cpu = ManagementFactory.getThreadMXBean();
    long started = cpu.getCurrentThreadCpuTime();
    GraphRecorder recorder = new GraphRecorder(scenario.windowNanos(), graph.interfaces().size(),
        graph.services().size());
    new GraphSimulation(scenario, graph, GraphScheme.resolve(name, scenario), load, end, recorder,
        seed).run();
    return new Run(recorder, (cpu.getCurrentThreadCpuTime() - started) / 1e9);
  }

  private void runSchedule(ExecutorService pool, List<String> names, double[] capacity,
      List<Row> rows, List<ServiceRow> services, List<Row> series, Own own,
      Map<String, Double> cpu) throws InterruptedException {
    List<List<Scenario.DemandStep>> steps = schedules();
    long end = scenario.durationNanos();
    List<Future<Run>> futures = new ArrayList<>();
    for (String name : names) {
      futures.add(pool.submit(() -> simulate(name, GraphSimulation.Load.open(steps, capacity), end,
          scenario.seed())));
    }
    List<Run> runs = new ArrayList<>();
    Experiment.collect(futures, runs);
    TreeSet<Long> bounds = new TreeSet<>();
    steps.forEach(list -> list.forEach(s -> bounds.add(s.startNanos())));
    bounds.add(end);
    List<Long> b = new ArrayList<>(bounds);
    for (int s = 0; s < names.size(); s++) {
      String name = names.get(s);
      GraphRecorder recorder = runs.get(s).recorder();
      cpu.put(name, runs.get(s).seconds());
      long window = recorder.windowNanos();
      for (int k = 0; k + 1 < b.size(); k++) {
        long from = Experiment.roundUp(b.get(k), window);
        long to = b.get(k + 1) - b.get(k + 1) % window;
        if (to > from) {
          // From a phase's step, as the graph harness reads its schedule runs: every phase but the first.
          double[] recovery = null;
          if (k > 0) {
            recovery = new double[graph.interfaces().size()];
            for (CallGraph.Interface iface : graph.interfaces()) {
              recovery[iface.index()] = recovery(recorder, iface.index(), b.get(k), b.get(k + 1));
            }
          }
          summarise(name, recorder, capacity, from, to, recovery, rows, services);
        }
      }
      for (long from = 0; from + window <= end; from += window) {
        summariseInterfaces(name, recorder, capacity, from, from + window, null, series);
      }
      // Each interface's windows, convergence and phases, as the graph harness has them.
      for (CallGraph.Interface iface : graph.interfaces()) {
        int i = iface.index();
        List<ResultRecord> windows = new ArrayList<>();
        List<ResultRecord> phases = new ArrayList<>();
        Experiment.addSeries(interfaceScenario(scenario, iface, true), name,
            recorder.interfaceRecorder(i), capacity[i], windows, own.convergence().get(i), phases);
        windows.forEach(r -> own.rows().get(i).add(uncounted(r)));
        phases.forEach(r -> own.phases().get(i).add(uncounted(r)));
      }
    }
  }

  private void runSteady(ExecutorService pool, List<String> names, double[] capacity,
      List<Row> rows, List<ServiceRow> services, Own own, Map<String, Double> cpu)
      throws InterruptedException {
    List<Double> levels = scenario.demandLevels();
    long warmup = scenario.warmupNanos();
    long end = warmup + scenario.durationNanos();
    List<Future<Run>> futures = new ArrayList<>();
    for (String name : names) {
      for (int i = 0; i < levels.size(); i++) {
        List<List<Scenario.DemandStep>> steps = steady(levels.get(i));
        long seed = scenario.seed() * 1_000_003L + i;
        futures.add(pool.submit(() -> simulate(name, GraphSimulation.Load.open(steps, capacity),
            end, seed)));
      }
    }
    List<Run> runs = new ArrayList<>();
    Experiment.collect(futures, runs);
    int r = 0;
    for (String name : names) {
      double seconds = 0;
      for (int i = 0; i < levels.size(); i++, r++) {
        GraphRecorder recorder = runs.get(r).recorder();
        seconds += runs.get(r).seconds();
        long window = recorder.windowNanos();
        double[] recovery = new double[graph.interfaces().size()];
        for (CallGraph.Interface iface : graph.interfaces()) {
          boolean surged = levels.get(i) > NORMAL_LOAD && warmup > 0 && iface.schedule().isEmpty();
          recovery[iface.index()] = surged ? recovery(recorder, iface.index(), warmup, end) : Double.NaN;
        }
        summarise(name, recorder, capacity, Experiment.roundUp(warmup, window), end - end % window,
            recovery, rows, services);
        // Each interface's row, as the graph harness has it: none for an interface left idle.
        for (CallGraph.Interface iface : graph.interfaces()) {
          Recorder alone = recorder.interfaceRecorder(iface.index());
          double demand = alone.demandAt(end - 1);
          if (demand == 0 && alone.total().offered == 0) {
            continue;
          }
          own.rows().get(iface.index()).add(uncounted(Experiment.steadyRecord(
              interfaceScenario(scenario, iface, false), name, demand, capacity[iface.index()],
              alone, warmup, end)));
        }
      }
      cpu.put(name, seconds);
    }
  }

  /** {@link RecoveryTime#afterStep} of interface {@code iface}'s goodput, from a step at {@code step} to {@code to}. */
  static double recovery(GraphRecorder recorder, int iface, long step, long to) {
    return RecoveryTime.afterStep(step, to, recorder.windowNanos(),
        (from, until) -> recorder.sum(from, until).interfaces[iface].good);
  }

  private void summarise(String name, GraphRecorder recorder, double[] capacity, long from,
      long to, double[] recovery, List<Row> rows, List<ServiceRow> services) {
    summariseInterfaces(name, recorder, capacity, from, to, recovery, rows);
    GraphRecorder.Window w = recorder.sum(from, to);
    double seconds = (to - from) / 1e9;
    for (CallGraph.Service s : graph.services()) {
      GraphRecorder.ServiceTally t = w.services[s.index()];
      services.add(new ServiceRow(name, from / 1e6, to / 1e6, s.name(), t.received / seconds,
          Tally.ratio(t.dropped, t.received), t.shedOutbound / seconds,
          t.busyNanos / ((double) (to - from) * s.workers())));
    }
  }

  /** @param recovery per interface, its recovery time from a surge, or NaN; null: none at all */
  private void summariseInterfaces(String name, GraphRecorder recorder, double[] capacity,
      long from, long to, double[] recovery, List<Row> rows) {
    GraphRecorder.Window w = recorder.sum(from, to);
    double seconds = (to - from) / 1e9;
    for (CallGraph.Interface i : graph.interfaces()) {
      GraphRecorder.InterfaceTally t = w.interfaces[i.index()];
      if (t.offered == 0 && recorder.demandAt(i.index(), from) == 0) {
        continue; // idle in this phase
      }
      rows.add(new Row(name, i.name(), recorder.demandAt(i.index(), from), from / 1e6, to / 1e6,
          capacity[i.index()], t.offered / seconds, t.completed / seconds, t.good / seconds,
          t.percentileMicros(50), t.percentileMicros(95), t.percentileMicros(99),
          i.sloNanos() / 1e3, Tally.ratio(t.shedClient, t.offered),
          Tally.ratio(t.shedFront, t.offered), Tally.ratio(t.shedInner, t.offered),
          Tally.ratio(t.wastedNanos, t.computeNanos),
          recovery == null ? Double.NaN : recovery[i.index()]));
    }
  }

  /**
   * The highest throughput an interface reaches alone with no control (docs/design.md
   * "Capacity"): a closed loop keeping enough requests outstanding that its bottleneck service
   * never idles, whatever the depth of the graph. A {@code graph.stall_ms} is left out, as the
   * graph harness leaves it out of its capacity runs.
   */
  static double measureCapacity(Scenario scenario, CallGraph graph, int iface) {
    GraphRecorder recorder = new GraphRecorder(10_000_000L, graph.interfaces().size(),
        graph.services().size());
    new GraphSimulation(scenario, graph.withoutStall(), GraphScheme.uncontrolled(),
        GraphSimulation.Load.closed(iface, outstanding(scenario, graph.interfaces().get(iface),
            graph)), CAPACITY_RUN_NANOS, recorder, scenario.seed()).run();
    GraphRecorder.InterfaceTally t = recorder.sum(CAPACITY_WARMUP_NANOS, CAPACITY_RUN_NANOS)
        .interfaces[iface];
    return t.completed / ((CAPACITY_RUN_NANOS - CAPACITY_WARMUP_NANOS) / 1e9);
  }

  /**
   * Requests to keep outstanding: three times the bottleneck's throughput × the unloaded
   * latency along the slowest path (Little's law, with room for fan-in waits), plus two per
   * worker in the graph.
   */
  static int outstanding(Scenario scenario, CallGraph.Interface iface, CallGraph graph) {
    long rx = scenario.rxCostNanos();
    long tx = scenario.txCostNanos();
    double[] work = new double[graph.services().size()];
    for (CallGraph.Node node : iface.nodes()) {
      int k = node.callees().size();
      work[node.service().index()] += node.compute().meanNanos() + rx + tx + k * (rx + tx);
    }
    double throughputPerNano = Double.MAX_VALUE;
    int workers = 0;
    for (CallGraph.Service s : graph.services()) {
      if (work[s.index()] > 0) {
        throughputPerNano = Math.min(throughputPerNano, s.workers() / work[s.index()]);
        workers += s.workers();
      }
    }
    double latency = pathNanos(iface.root(), scenario.rttNanos(), rx, tx) + scenario.rttNanos();
    return (int) Math.min(100_000, Math.ceil(3 * throughputPerNano * latency) + 2L * workers);
  }

  private static double pathNanos(CallGraph.Node node, long rtt, long rx, long tx) {
    double slowest = 0;
    for (CallGraph.Node c : node.callees()) {
      slowest = Math.max(slowest, pathNanos(c, rtt, rx, tx) + rtt + rx);
    }
    return rx + node.compute().meanNanos() + tx * (1 + node.callees().size()) + slowest;
  }
}
