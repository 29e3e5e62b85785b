package io.spillway.harness.graph;

import io.spillway.harness.SteadyCapacity;
import io.spillway.sim.CallGraph;
import io.spillway.sim.Experiment;
import io.spillway.sim.GraphExperiment;
import io.spillway.sim.Recorder;
import io.spillway.sim.RecoveryTime;
import io.spillway.sim.Report;
import io.spillway.sim.ResultRecord;
import io.spillway.sim.Scenario;
import io.spillway.sim.ScenarioCommand;
import io.spillway.sim.StepConvergence;
import io.spillway.sim.Tally;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Collectors;

/**
 * {@code GraphHarnessMain SCENARIO [--out DIR] [--set key=value ...] [--connections N]
 * [--capacity iface=rps,...] [--calibrate-slo] [--no-prewarm] [--remeasure-capacity]
 * [--capacity-warmup-max-s N] [--core1-nice N]}: runs a call-graph scenario (rajomon-nsdi25 §5) on
 * real sockets.
 * Every service of the graph is a gRPC server on loopback in one child process ({@link
 * GraphServer}, pinned to core 0 where the machine allows); this process is the load generator
 * (the launcher pins it to core 1). {@code --capacity-warmup-max-s} caps each capacity warm-up
 * (below), by default {@value #CAPACITY_MAX_SLICES} s.
 *
 * <p>With the scenario key {@code graph.core1 = svc, ...} ({@link GraphPlacement}, read by this
 * harness only) those services, closed under calls, run in a second child process pinned to core
 * 1, beside the load generator; the rest stay in the first. {@code --core1-nice N} runs that
 * second process at niceness N, so that the generator goes first when both want core 1; by
 * default {@value #CORE1_NICE}, the generator's own ({@link #CORE1_NICE} says what N costs). The
 * generator's lag (p99) and CPU in each scheme's measured runs go to {@code graph.json}
 * ({@code generator}, {@link GeneratorLoad}).
 *
 * <ol>
 *   <li><b>Capacity</b> per interface: no control, closed loop, each interface alone (the
 *       highest throughput the graph reaches for it, docs/design.md "Capacity"), measured
 *       once the throughput is steady and the services' JIT has stopped compiling in earnest
 *       ({@link GraphHarness#steady}; about 30 s on the hotel graph). {@code --capacity} gives
 *       them instead (and skips that warm-up).
 *   <li><b>SLO</b> (with {@code --calibrate-slo}): each interface alone, open loop at 0.8 × its
 *       capacity with no control; prints its p95 and 5 × p95, the paper's SLO rule (§4 "SLOs for
 *       each interface are set to 5 × its 95th-percentile latency under normal conditions"). The
 *       scenario file carries the number as {@code graph.<iface>.slo_us}.
 *   <li><b>Pre-warm</b> (unless {@code --no-prewarm}): every scheme but {@code none}, in the
 *       order given, overloads the graph at {@value #PREWARM_LEVEL} × capacity, unmeasured, for
 *       at least {@value #PREWARM_MILLIS} ms and until the services' JIT is quiet, its services
 *       then restarted. The JIT's work carries over from scheme to scheme (next item), and
 *       without this step a scheme measured early ran on code the later ones found compiled
 *       (most likely the paths every scheme's rejects take through gRPC, which first compile
 *       under overload: the warm-up at 0.8 × rejects almost nothing). On the hotel graph at 2×,
 *       Rajomon measured alone served 0.76 and 0.79 × capacity without the pre-warm,
 *       and 0.94 and 1.21 measured after DAGOR (docs/results/rajomon.md, "What runs"). With
 *       {@code --remeasure-capacity}, a measured capacity is then measured again under {@code
 *       none} and the higher reading kept: a check that the first reading was not taken on
 *       code still compiling. The same happens without the flag when a capacity's warm-up never
 *       settled: on a slow machine the warm-up ran its full
 *       {@value #CAPACITY_MAX_SLICES} s with the JIT still busy, search read 672 rps against
 *       1,206–1,612 in every other run, and the run's "2×" was about 0.9× of the real capacity.
 *   <li><b>Each scheme</b>: the services restarted under it in the same process (so the JIT's work
 *       carries over: the services compile on the one core they serve from, which took longer than
 *       a run on a busy machine), warmed, then either steady levels or a schedule, every interface
 *       driven open loop at the same time:
 *       <ul>
 *         <li>steady (no {@code schedule}, and not every interface has its own): for each level of
 *             {@code demand}, a warm-up of {@code warmup_ms} at 0.8 × capacity (§5.1: "we warm up
 *             with load at 80% ... and then overload"), then {@code duration_ms} at the level,
 *             measured. An interface with its own {@code graph.<iface>.schedule} follows it
 *             instead, from the start of each run.
 *         <li>schedule: {@code duration_ms} of each interface's own schedule, or the scenario's.
 *       </ul>
 * </ol>
 *
 * <p>Demand for an interface is its level × its own capacity. Output: per interface, the same
 * table, results.json and plots as the other harnesses ({@code DIR/<iface>/}), with the
 * interface's SLO and capacity; then a summary with p95 (Rajomon reports p95) and the work the
 * services did per successful request (node computations ÷ successes; the tree's node count when
 * nothing is wasted), also written to {@code DIR/graph.json}. Steady runs that surge also write
 * {@code DIR/<iface>/surge-windows.csv}: every scheme's {@value #RECOVERY_WINDOW_MILLIS} ms windows
 * around each surge, the ones its recovery time is read from ({@link GraphHarness#surgeWindows}),
 * drawn in {@code surge-goodput-<level>x.png}.
 */
public final class GraphHarnessMain {

  /**
   * Closed-loop capacity measurement: warm in slices until throughput is steady (the JIT is done;
   * the services compile on the core they serve from, which took over 10 s on a busy machine),
   * then measure.
   */
  static final long CAPACITY_SLICE_NANOS = SteadyCapacity.SLICE_NANOS;
  static final int CAPACITY_STEADY_SLICES = SteadyCapacity.STEADY_SLICES;
  static final double CAPACITY_STEADY_SPREAD = SteadyCapacity.STEADY_SPREAD;
  /** The share of a warm-up slice the services' JIT may spend compiling for the slice to count as steady. */
  static final double CAPACITY_JIT_QUIET = SteadyCapacity.JIT_QUIET;
  /** {@link #CAPACITY_JIT_QUIET} of a slice, in ms. */
  static final long JIT_QUIET_MILLIS = SteadyCapacity.JIT_QUIET_MILLIS;
  static final int CAPACITY_MAX_SLICES = 90;
  static final long CAPACITY_MEASURE_NANOS = 2_000_000_000L;
  /** Calls kept in flight while measuring capacity: enough that no service's queue runs dry. */
  static final int CAPACITY_OUTSTANDING = 64;
  /**
   * Each scheme's graph is warmed at 0.8 × capacity, split over the interfaces, before its first
   * measured run: its controllers settle and its own code paths compile.
   */
  static final long SERVER_WARMUP_NANOS = 5_000_000_000L;
  /** The least time each scheme overloads the graph, unmeasured, before any scheme is measured. */
  static final long PREWARM_MILLIS = 5_000;
  /** Seconds in a row the services' JIT must be quiet before a scheme's pre-warm ends. */
  static final int PREWARM_QUIET_SLICES = 2;
  /** The most seconds one scheme's pre-warm runs. */
  static final int PREWARM_MAX_SLICES = 60;
  /** The pre-warm's load, × capacity, split over the interfaces. */
  static final double PREWARM_LEVEL = 2.0;
  /** Normal load, rajomon-nsdi25 §5.1: warm-up level, and the load the SLO rule measures at. */
  static final double NORMAL_LOAD = 0.8;
  /**
   * The default niceness of the core-1 services process in a split placement, which shares core 1
   * with the load generator: the same as the generator's. Measured (
   * docs/results/rajomon.md "The load generator's share of core 1"): at the same priority the
   * generator issued arrivals late by a p99 of 1.5–4.7 ms; niceness 10 about halves that, but
   * search's throughput fell by 18–44 % (DAGOR and Rajomon), since
   * the services then yield whenever the generator runs. Equal priority keeps the services'
   * capacity what was measured; niceness 10 is there for runs where the generator's own lag
   * matters more.
   */
  static final int CORE1_NICE = 0;
  /** Generator lag worth a warning (its p99), microseconds. */
  static final double LAG_WARNING_MICROS = 1_000;
  /** The SLO rule's multiple of p95 latency at normal load (rajomon-nsdi25 §4). */
  static final double SLO_P95_MULTIPLE = 5;

  private GraphHarnessMain() { }

  public static void main(String[] args) throws Exception {
    try {
      System.exit(run(args));
    } catch (IllegalArgumentException e) {
      System.err.println("spillway graph: " + e.getMessage());
      System.exit(2);
    }
  }

  static int run(String[] args) throws Exception {
    int[] connections = {4};
    int[] warmupMaxSeconds = {CAPACITY_MAX_SLICES};
    int[] core1Nice = {CORE1_NICE};
    Map<String, Double> capacities = new LinkedHashMap<>();
    List<String> rest = new ArrayList<>(Arrays.asList(args));
    boolean calibrate = rest.remove("--calibrate-slo");
    boolean prewarm = !rest.remove("--no-prewarm");
    boolean remeasure = rest.remove("--remeasure-capacity");
    if (remeasure && !prewarm) {
      throw new IllegalArgumentException("--remeasure-capacity measures after the pre-warm; "
          + "it cannot go with --no-prewarm");
    }
    ScenarioCommand cmd = ScenarioCommand.parse(rest.toArray(String[]::new), Map.of(
        "--connections", v -> connections[0] = Integer.parseInt(v),
        "--capacity", v -> capacities.putAll(parseCapacities(v)),
        "--capacity-warmup-max-s", v -> warmupMaxSeconds[0] = parsePositive("--capacity-warmup-max-s", v),
        "--core1-nice", v -> core1Nice[0] = parseNice("--core1-nice", v)));
    if (cmd.help()) {
      System.out.println("usage: spillway graph SCENARIO [--out DIR] [--set key=value ...] [--connections N]"
          + " [--capacity iface=rps,...] [--calibrate-slo] [--no-prewarm] [--remeasure-capacity]"
          + " [--capacity-warmup-max-s N] [--core1-nice N]");
      System.out.println("  schemes: " + String.join(", ", GraphWirings.names())
          + ", each also as NAME-d (at every hop, with a session per caller and callee)");
      System.out.println("  scenario key " + GraphPlacement.KEY + " = svc, ...: those services (every callee of one"
          + " among them) in a second services process, on core 1");
      return 0;
    }
    Path scenarioFile = cmd.scenarioFile();
    Map<String, String> overrides = cmd.overrides();
    Scenario scenario = cmd.load();
    CallGraph graph = scenario.callGraph();
    if (graph == null) {
      throw new IllegalArgumentException("scenario '" + scenario.name() + "' describes no call graph "
          + "(graph.services, graph.interfaces, graph.<interface>); use 'spillway harness' for one server");
    }
    GraphPlacement placement = GraphPlacement.parse(scenario.get(GraphPlacement.KEY), graph);
    scenario.schemes().forEach(name -> GraphWirings.create(name, scenario));
    for (String iface : capacities.keySet()) {
      graph.iface(iface);
    }
    if (!capacities.isEmpty() && capacities.size() != graph.interfaces().size()) {
      throw new IllegalArgumentException("--capacity: give every interface's capacity, or none");
    }
    Path out = cmd.out() != null ? cmd.out() : Path.of("results", "graph-" + scenario.name());
    Files.createDirectories(out);
    GraphHarness h = new GraphHarness(scenario, scenarioFile, overrides, placement, connections[0], out,
        calibrate, capacities, prewarm, remeasure, warmupMaxSeconds[0], core1Nice[0]);
    long started = System.nanoTime();
    h.run();
    System.out.printf(Locale.ROOT, "%nwrote %s (%.1f s wall clock; services %s, load generator %s)%n",
        out, (System.nanoTime() - started) / 1e9, h.serverPinning(), h.clientPinning());
    return 0;
  }

  /** A whole number of at least 1, or an error naming {@code flag}. */
  static int parsePositive(String flag, String text) {
    return parseWhole(flag, text, 1, Integer.MAX_VALUE, "at least 1");
  }

  /** A niceness from 0 (the load generator's own) to 19, or an error naming {@code flag}. */
  static int parseNice(String flag, String text) {
    return parseWhole(flag, text, 0, 19, "from 0 to 19 (a lower priority than the load generator's or the same)");
  }

  /** A whole number in {@code [min, max]}, or an error naming {@code flag} and the {@code range}. */
  private static int parseWhole(String flag, String text, int min, int max, String range) {
    int n;
    try {
      n = Integer.parseInt(text.strip());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(flag + " takes a whole number " + range + ", got '" + text + "'");
    }
    if (n < min || n > max) {
      throw new IllegalArgumentException(flag + " must be " + range + ", got " + n);
    }
    return n;
  }

  static Map<String, Double> parseCapacities(String text) {
    Map<String, Double> m = new LinkedHashMap<>();
    for (String item : text.split(",")) {
      int eq = item.indexOf('=');
      if (eq <= 0) {
        throw new IllegalArgumentException("--capacity takes iface=rps,..., got '" + text + "'");
      }
      double rps;
      try {
        rps = Double.parseDouble(item.substring(eq + 1).strip());
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("--capacity: '" + item + "' is not iface=rps");
      }
      if (!(rps > 0)) {
        throw new IllegalArgumentException("--capacity: '" + item + "' must be positive");
      }
      m.put(item.substring(0, eq).strip(), rps);
    }
    return m;
  }

  /**
   * One summary row: a scheme on an interface, at a steady level or over one phase of a schedule.
   *
   * @param phaseStartMillis for schedules, the phase's start; -1 for steady rows
   * @param dropRate server rejects ÷ responses and rejects received; NaN (null in graph.json) when
   *     none were
   * @param expiredRate calls that never left the client ÷ calls offered; NaN when none were
   * @param workPerSuccess node computations at every service for this interface ÷ successful
   *     responses, over the whole run; NaN when nothing succeeded
   * @param recoveryMillis for a row that starts at a demand step (a surge level, a schedule's later
   *     phases), the time from the step until goodput stays recovered ({@link RecoveryTime}, on
   *     {@value #RECOVERY_WINDOW_MILLIS} ms windows), -1 if it did not; NaN for other rows
   */
  record Summary(String scheme, String iface, double demand, double phaseStartMillis, double phaseEndMillis,
      double offeredRps, double goodputRps, double p50Micros, double p95Micros, double p99Micros,
      double sloMicros, double dropRate, double expiredRate, double workPerSuccess, double recoveryMillis) { }

  /** Windows for recovery times ({@link RecoveryTime#WINDOW_NANOS}), in ms. */
  static final long RECOVERY_WINDOW_MILLIS = RecoveryTime.WINDOW_NANOS / 1_000_000L;

  /** How much of the warm-up before a surge {@code surge-windows.csv} shows, for the level it left. */
  static final long SURGE_WINDOWS_BEFORE_MILLIS = 500;

  /** The columns of {@code surge-windows.csv}. */
  static final String SURGE_WINDOWS_HEADER =
      "scheme,demand,t_ms,offered_rps,refused_rps,sent_rps,dropped_rps,completed_rps,goodput_rps,p50_us,p99_us,"
          + "epoch_ms\n";

  /**
   * The load generator in one measured run: the p99 of how late it issued arrivals (over the
   * whole run, warm-up included), and the CPU this process used, in cores (1.0: one core busy
   * throughout; NaN if the JVM does not say), over a steady level's run after its warm-up, or over
   * a whole schedule. In a split placement the generator shares core 1 with the services there,
   * so this is what those services did not get.
   */
  record GeneratorLoad(String run, double lagP99Micros, double cpuCores) { }

  /**
   * This process's CPU time from a point {@code afterNanos} into a run until {@link #cores()} is
   * read: a daemon thread takes the first reading when that point comes.
   */
  static final class GeneratorCpu {
    private static final com.sun.management.OperatingSystemMXBean OS =
        (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    private final Thread marker;
    private volatile long startNanos;
    private volatile long startCpuNanos;

    private GeneratorCpu(long afterNanos) {
      Runnable mark = () -> {
        startNanos = System.nanoTime();
        startCpuNanos = OS.getProcessCpuTime();
      };
      if (afterNanos <= 0) {
        mark.run();
        marker = null;
      } else {
        marker = Thread.ofPlatform().daemon().name("generator-cpu").start(() -> {
          LockSupport.parkNanos(afterNanos);
          mark.run();
        });
      }
    }

    static GeneratorCpu from(long afterNanos) {
      return new GeneratorCpu(afterNanos);
    }

    /** Cores used since the first reading; NaN if the JVM does not report its CPU time. */
    double cores() throws InterruptedException {
      if (marker != null) {
        marker.join();
      }
      long cpu = OS.getProcessCpuTime();
      long wall = System.nanoTime() - startNanos;
      return cpu < 0 || startCpuNanos < 0 || wall <= 0 ? Double.NaN : (double) (cpu - startCpuNanos) / wall;
    }
  }

  /** One harness run. */
  static final class GraphHarness {
    private final Scenario scenario;
    private final CallGraph graph;
    private final Path scenarioFile;
    private final Map<String, String> overrides;
    private final GraphPlacement placement;
    private final int connections;
    private final Path out;
    private final boolean calibrate;
    private final Map<String, Double> givenCapacities;
    private final boolean prewarm;
    private final boolean remeasure;
    /** The longest a capacity warm-up may run, in one-second slices. */
    private final int capacityMaxSlices;
    /** Whether every capacity warm-up settled ({@link #warmUntilSteady}); true if none ran. */
    private boolean capacitySettled = true;
    /** Whether the capacities were measured a second time after the pre-warm. */
    private boolean remeasured;
    /** Per scheme, the load generator's lag and CPU in each of its measured runs, in order. */
    private final Map<String, List<GeneratorLoad>> generatorLoad = new LinkedHashMap<>();
    /** Seconds each scheme was pre-warmed, in order. */
    private final Map<String, Integer> prewarmedSeconds = new LinkedHashMap<>();
    private final boolean pin;
    /** The core-1 process's niceness as run: 0 unless the placement splits and the processes are pinned. */
    private final int core1Nice;
    private final boolean series;
    private final int n;

    private final double[] capacity;
    private final Map<String, double[]> calibration = new LinkedHashMap<>();
    private final List<List<ResultRecord>> rows = new ArrayList<>();
    private final List<List<StepConvergence>> convergence = new ArrayList<>();
    private final List<List<ResultRecord>> phases = new ArrayList<>();
    private final List<Summary> summary = new ArrayList<>();
    /** Per interface, the rows of its {@code surge-windows.csv} (steady runs that surge). */
    private final List<StringBuilder> surgeWindows = new ArrayList<>();

    GraphHarness(Scenario scenario, Path scenarioFile, Map<String, String> overrides, GraphPlacement placement,
        int connections, Path out, boolean calibrate, Map<String, Double> givenCapacities,
        boolean prewarm, boolean remeasure, int capacityMaxSlices, int core1Nice) {
      this.scenario = scenario;
      this.graph = scenario.callGraph();
      this.scenarioFile = scenarioFile;
      this.overrides = overrides;
      this.placement = placement;
      this.connections = connections;
      this.out = out;
      this.calibrate = calibrate;
      this.givenCapacities = givenCapacities;
      this.prewarm = prewarm;
      this.remeasure = remeasure;
      this.capacityMaxSlices = capacityMaxSlices;
      boolean twoCores = System.getenv("SPILLWAY_PINNED") != null || Runtime.getRuntime().availableProcessors() >= 2;
      this.pin = twoCores && Files.isExecutable(Path.of("/usr/bin/taskset"))
          && System.getenv("SPILLWAY_NO_PIN") == null;
      // Unpinned, the generator and the core-1 services need not share a core: no niceness.
      boolean nice = placement.split() && pin && core1Nice > 0;
      if (nice && !GraphServerProcess.niceAvailable()) {
        System.err.println("graph harness: " + GraphServerProcess.NICE + " not found; the core-1 services run at"
            + " the load generator's priority");
        nice = false;
      }
      this.core1Nice = nice ? core1Nice : 0;
      this.series = !scenario.schedule().isEmpty()
          || graph.interfaces().stream().allMatch(i -> !i.schedule().isEmpty());
      this.n = graph.interfaces().size();
      this.capacity = new double[n];
      for (int i = 0; i < n; i++) {
        rows.add(new ArrayList<>());
        convergence.add(new ArrayList<>());
        phases.add(new ArrayList<>());
        surgeWindows.add(new StringBuilder());
      }
    }

    String serverPinning() {
      if (placement.split()) {
        return pin ? "in two processes, " + placement + (core1Nice > 0 ? " (niceness " + core1Nice + ")" : "")
            : "in two processes, unpinned (" + placement + ")";
      }
      return pin ? "on core 0" : "unpinned";
    }

    String clientPinning() {
      String pinned = System.getenv("SPILLWAY_PINNED");
      return pinned != null ? "on core " + pinned : "unpinned";
    }

    void run() throws Exception {
      System.err.print(describeGraph());
      if (graph.stall() != null) {
        System.err.println(series
            ? "graph harness: every services process stops for " + graph.stall().lengthNanos() / 1_000_000
                + " ms at " + graph.stall().startNanos() / 1_000_000 + " ms into each scheme's schedule"
            : "graph harness: graph.stall_ms ignored: the harness stalls the services in schedule runs only");
      }
      boolean measured = givenCapacities.isEmpty();
      for (CallGraph.Interface i : graph.interfaces()) {
        capacity[i.index()] = measured ? 0 : givenCapacities.get(i.name());
      }
      // One services process for the whole run (two if the placement splits the graph), its graph
      // restarted per scheme (GraphServer).
      try (GraphServers server = GraphServers.start(scenarioFile, overrides, graph, placement, "none", pin, core1Nice,
          out)) {
        if (measured || calibrate) {
          try (GraphClient client = connected(server, GraphWirings.create("none", scenario))) {
            if (measured) {
              measureCapacities(server, client);
            }
            if (calibrate) {
              calibrate(client);
            }
          }
        }
        if (prewarm) {
          prewarm(server);
          if (measured && (remeasure || !capacitySettled)) {
            if (!remeasure) {
              System.err.println("graph harness: a capacity warm-up never settled, so its reading may "
                  + "be low: measuring every capacity again after the pre-warm, keeping the higher");
            }
            remeasured = true;
            remeasureCapacities(server);
          }
        } else if (measured && !capacitySettled) {
          System.err.println("graph harness: WARNING: a capacity warm-up never settled and "
              + "--no-prewarm leaves no second reading: every level below is relative to a capacity "
              + "that may read low");
        }
        for (String name : scenario.schemes()) {
          server.switchTo(name);
          runScheme(name, server);
        }
      }
      for (CallGraph.Interface i : graph.interfaces()) {
        if (rows.get(i.index()).isEmpty()) {
          continue;
        }
        Scenario s = interfaceScenario(i);
        Experiment.Results results = new Experiment.Results(s, capacity[i.index()], measured,
            rows.get(i.index()), convergence.get(i.index()), phases.get(i.index()));
        System.out.printf(Locale.ROOT, "%n== interface %s: depth %d, width %d, %d nodes, SLO %.0f us, "
            + "capacity %.0f rps ==%n", i.name(), i.depth(), i.width(), i.nodes().size(), i.sloNanos() / 1e3,
            capacity[i.index()]);
        Report.printTable(results, System.out);
        if (!surgeWindows.get(i.index()).isEmpty()) { // first: the report draws it too
          Files.createDirectories(out.resolve(i.name()));
          Files.writeString(out.resolve(i.name()).resolve("surge-windows.csv"),
              SURGE_WINDOWS_HEADER + surgeWindows.get(i.index()));
        }
        Report.write(results, out.resolve(i.name()));
      }
      printSummary();
      Files.writeString(out.resolve("graph.json"), graphJson(measured));
    }

    private String describeGraph() {
      StringBuilder b = new StringBuilder("graph harness: services ");
      b.append(graph.services().stream().map(s -> s.name() + ":" + s.workers()).collect(Collectors.joining(", ")));
      b.append('\n');
      if (placement.split()) {
        b.append("graph harness: services ").append(serverPinning()).append('\n');
      }
      for (CallGraph.Interface i : graph.interfaces()) {
        b.append(String.format(Locale.ROOT, "graph harness: %s = %s (depth %d, width %d, %d nodes, "
            + "%.0f us compute, SLO %.0f us)%n", i.name(), tree(i.root()), i.depth(), i.width(),
            i.nodes().size(), i.nodes().stream().mapToLong(x -> x.compute().meanNanos()).sum() / 1e3,
            i.sloNanos() / 1e3));
      }
      return b.toString();
    }

    private static String tree(CallGraph.Node node) {
      String self = node.service().name() + " " + node.compute().meanNanos() / 1000 + "us";
      if (node.callees().isEmpty()) {
        return self;
      }
      return self + " -> [" + node.callees().stream().map(GraphHarness::tree).collect(Collectors.joining(", ")) + "]";
    }

    /** Capacity of each interface alone: closed loop, no control, after a warm-up to steady throughput. */
    private void measureCapacities(GraphServers server, GraphClient client) throws Exception {
      for (CallGraph.Interface i : graph.interfaces()) {
        WarmUp warmUp = warmUntilSteady(server, client, i);
        capacitySettled &= warmUp.settled();
        GraphLoadGenerator g = GraphLoadGenerator.closedLoop(client, i, CAPACITY_OUTSTANDING,
            CAPACITY_MEASURE_NANOS, 100_000_000L, scenario.seed());
        Tally t = await(g, CAPACITY_MEASURE_NANOS, "capacity " + i.name()).getFirst()
            .sum(0, CAPACITY_MEASURE_NANOS);
        capacity[i.index()] = t.completed / (CAPACITY_MEASURE_NANOS / 1e9);
        System.err.printf(Locale.ROOT, "graph harness: capacity %-10s %.0f rps (no control, closed loop, "
            + "%d in flight, after %d s of warm-up; p50 %.0f us, p99 %.0f us)%n", i.name(),
            capacity[i.index()], CAPACITY_OUTSTANDING, warmUp.slices(), pct(t, 50), pct(t, 99));
      }
    }

    /**
     * With {@code --remeasure-capacity}: measures every capacity again after the pre-warm, under
     * {@code none}, and keeps the higher of the two readings, capacity being the highest
     * throughput the graph reaches with no control (docs/design.md "Capacity"). Without the wait
     * for the JIT ({@link #steady}), the first reading under-reads: it is taken on code that
     * only the overload of the pre-warm compiles (docs/results/rajomon.md, "What runs"). Kept as a
     * check on the first reading.
     */
    private void remeasureCapacities(GraphServers server) throws Exception {
      double[] first = capacity.clone();
      server.switchTo("none");
      try (GraphClient client = connected(server, GraphWirings.create("none", scenario))) {
        measureCapacities(server, client);
      }
      for (CallGraph.Interface i : graph.interfaces()) {
        int k = i.index();
        System.err.printf(Locale.ROOT, "graph harness: capacity %-10s %.0f rps before the pre-warm, %.0f after: "
            + "%.0f%n", i.name(), first[k], capacity[k], Math.max(first[k], capacity[k]));
        capacity[k] = Math.max(first[k], capacity[k]);
      }
    }

    /**
     * Runs {@code iface} closed loop in one-second slices until, over the last {@value
     * #CAPACITY_STEADY_SLICES} slices, the throughputs are within {@value #CAPACITY_STEADY_SPREAD}
     * of each other and the services' JIT compiled for at most {@value #CAPACITY_JIT_QUIET} of
     * each slice (at most {@code --capacity-warmup-max-s}, by default {@value
     * #CAPACITY_MAX_SLICES}, slices); returns how many ran and whether it settled. Steady
     * throughput alone is not enough: the services compile on the core they serve from, and on the
     * hotel graph search's throughput sat on plateaus (700-720 rps for two five-second slices of
     * ghz) while the JIT was still at work, compiling about a second each second, then rose to
     * about 1,200 rps after some 30 s, when the JIT fell to a trickle of 40-110 ms a second that
     * never stops (docs/results/rajomon.md).
     */
    private WarmUp warmUntilSteady(GraphServers server, GraphClient client, CallGraph.Interface iface) throws Exception {
      List<Long> completed = new ArrayList<>();
      List<Long> compiling = new ArrayList<>();
      JitWatch jit = new JitWatch(server);
      StringBuilder trace = new StringBuilder();
      boolean settled = false;
      while (completed.size() < capacityMaxSlices) {
        GraphLoadGenerator g = GraphLoadGenerator.closedLoop(client, iface, CAPACITY_OUTSTANDING,
            CAPACITY_SLICE_NANOS, 100_000_000L, scenario.seed() + completed.size());
        completed.add(await(g, CAPACITY_SLICE_NANOS, "warm-up " + iface.name()).getFirst()
            .sum(0, CAPACITY_SLICE_NANOS).completed);
        compiling.add(jit.sinceLast());
        trace.append(completed.getLast()).append('/').append(compiling.getLast()).append(' ');
        if (steady(completed, compiling)) {
          settled = true;
          break;
        }
      }
      System.err.printf(Locale.ROOT, "graph harness: warm-up %s, per second: calls completed / ms the JIT "
          + "compiled: %s%s%n", iface.name(), trace.toString().strip(),
          settled ? "" : " (NOT steady after " + capacityMaxSlices + " s: capacity may read low)");
      return new WarmUp(completed.size(), settled);
    }

    /** A capacity warm-up: how many one-second slices it ran, and whether they settled. */
    private record WarmUp(int slices, boolean settled) { }

    /**
     * The services' JIT compiling time between readings, ms; 0 where a JVM does not report it
     * ({@link GraphServers#compileMillis}), so that the warm-up then goes by throughput alone.
     */
    private static final class JitWatch {
      private final GraphServers server;
      private long last;

      JitWatch(GraphServers server) throws IOException {
        this.server = server;
        this.last = server.compileMillis();
      }

      /** Ms the JIT compiled since the previous call (or since this watch was made). */
      long sinceLast() throws IOException {
        long now = server.compileMillis();
        long ms = last < 0 || now < 0 ? 0 : now - last;
        last = now;
        return ms;
      }
    }

    /** Whether the last slices' throughputs agree and the JIT was quiet in each ({@link SteadyCapacity#steady}). */
    static boolean steady(List<Long> completed, List<Long> compilingMillis) {
      return SteadyCapacity.steady(completed, compilingMillis);
    }

    /** rajomon-nsdi25 §4: SLO = 5 × p95 at normal load, each interface alone at 0.8 × capacity. */
    private void calibrate(GraphClient client) throws Exception {
      warm(client); // after a capacity measurement, cheap; with --capacity, the JIT's first work
      long warmup = scenario.warmupNanos();
      long end = warmup + scenario.durationNanos();
      for (CallGraph.Interface i : graph.interfaces()) {
        List<List<Scenario.DemandStep>> steps = new ArrayList<>();
        for (CallGraph.Interface j : graph.interfaces()) {
          steps.add(List.of(new Scenario.DemandStep(j == i ? NORMAL_LOAD : 0, 0)));
        }
        GraphLoadGenerator g = GraphLoadGenerator.openLoop(client, steps, capacity, end, scenario.windowNanos(),
            ~scenario.seed());
        Recorder r = await(g, end, "slo rule " + i.name()).get(i.index());
        Tally t = r.sum(roundUp(warmup, r.windowNanos()), end - end % r.windowNanos());
        double p95 = pct(t, 95);
        calibration.put(i.name(), new double[] {p95, SLO_P95_MULTIPLE * p95});
        System.out.printf(Locale.ROOT, "slo rule: %-10s p95 %.0f us at %.1fx capacity (no control, alone) -> "
            + "5 x p95 = %.0f us; the scenario has graph.%s.slo_us = %.0f%n", i.name(), p95, NORMAL_LOAD,
            SLO_P95_MULTIPLE * p95, i.name(), i.sloNanos() / 1e3);
      }
    }

    /** Every interface open loop at 0.8 × its capacity ÷ the number of interfaces, for a few seconds. */
    private void warm(GraphClient client) throws Exception {
      runEvenly(client, NORMAL_LOAD, SERVER_WARMUP_NANOS, ~scenario.seed());
    }

    /** Every interface open loop at {@code level} × its capacity ÷ the number of interfaces, unrecorded. */
    private void runEvenly(GraphClient client, double level, long nanos, long seed) throws Exception {
      List<List<Scenario.DemandStep>> steps = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        steps.add(List.of(new Scenario.DemandStep(level / n, 0)));
      }
      await(GraphLoadGenerator.openLoop(client, steps, capacity, nanos, scenario.windowNanos(), seed), nanos,
          "unmeasured load");
    }

    /** A client of the services {@code server} runs now, under {@code wiring}, connected. */
    private GraphClient connected(GraphServers server, GraphWiring wiring) {
      GraphClient client = new GraphClient(scenario, server.ports(), wiring, scenario.clients(), connections);
      try {
        client.connect();
      } catch (RuntimeException | Error e) {
        client.close();
        throw e;
      }
      return client;
    }

    /**
     * Every scheme but {@code none} overloads the graph, unmeasured, for at least {@link
     * #PREWARM_MILLIS} and until the services' JIT has been quiet (at most {@value
     * #CAPACITY_JIT_QUIET} of a second compiling) for {@value #PREWARM_QUIET_SLICES} seconds in a
     * row, at most {@value #PREWARM_MAX_SLICES} s; each under its own services and client
     * sessions, all discarded: the measured runs start from fresh controllers on code every scheme
     * has exercised, its reject paths included.
     */
    private void prewarm(GraphServers server) throws Exception {
      for (String name : scenario.schemes()) {
        if (name.equals("none")) {
          continue; // the capacity measurement ran the uncontrolled paths; unbounded queues teach nothing
        }
        server.switchTo(name);
        StringBuilder trace = new StringBuilder();
        int slices = 0;
        int quiet = 0;
        try (GraphClient client = connected(server, GraphWirings.create(name, scenario))) {
          JitWatch jit = new JitWatch(server);
          while (slices < PREWARM_MAX_SLICES
              && (slices * CAPACITY_SLICE_NANOS < TimeUnit.MILLISECONDS.toNanos(PREWARM_MILLIS)
                  || quiet < PREWARM_QUIET_SLICES)) {
            runEvenly(client, PREWARM_LEVEL, CAPACITY_SLICE_NANOS, ~scenario.seed() ^ name.hashCode() ^ slices);
            long ms = jit.sinceLast();
            quiet = ms <= JIT_QUIET_MILLIS ? quiet + 1 : 0;
            trace.append(ms).append(' ');
            slices++;
          }
        }
        prewarmedSeconds.put(name, slices);
        System.err.printf(Locale.ROOT, "graph harness: %-12s pre-warmed (%d s at %.1fx, unmeasured; ms the JIT "
            + "compiled per second: %s)%s%n", name, slices, PREWARM_LEVEL, trace.toString().strip(),
            quiet < PREWARM_QUIET_SLICES ? " NOT quiet" : "");
      }
    }

    private void runScheme(String name, GraphServers server) throws Exception {
      GraphWiring wiring = GraphWirings.create(name, scenario);
      try (GraphClient client = connected(server, wiring)) {
        warm(client);
        if (series) {
          List<List<Scenario.DemandStep>> steps = new ArrayList<>();
          for (CallGraph.Interface i : graph.interfaces()) {
            steps.add(i.schedule().isEmpty() ? scenario.schedule() : i.schedule());
          }
          long end = scenario.durationNanos();
          Map<String, Long> before = server.computed();
          GeneratorCpu cpu = GeneratorCpu.from(0);
          List<Recorder> recorders;
          try (ServerStall stall = ServerStall.start(server.pids(), graph.stall())) {
            GraphLoadGenerator g = GraphLoadGenerator.openLoop(client, steps, capacity, end,
                scenario.windowNanos(), scenario.seed());
            recorders = await(g, end, name + " schedule");
            generatorLoad.computeIfAbsent(name, k -> new ArrayList<>())
                .add(new GeneratorLoad("schedule", g.lagP99Micros(), cpu.cores()));
          }
          Map<String, Long> work = minus(server.computed(), before);
          for (CallGraph.Interface i : graph.interfaces()) {
            Experiment.addSeries(interfaceScenario(i), name, recorders.get(i.index()), capacity[i.index()],
                rows.get(i.index()), convergence.get(i.index()), phases.get(i.index()));
          }
          summarizePhases(name, steps, recorders, work, end);
          System.err.printf(Locale.ROOT, "graph harness: %-12s schedule done%n", name);
        } else {
          List<Double> levels = scenario.demandLevels();
          for (int li = 0; li < levels.size(); li++) {
            double level = levels.get(li);
            long warmup = scenario.warmupNanos();
            long end = warmup + scenario.durationNanos();
            List<List<Scenario.DemandStep>> steps = new ArrayList<>();
            for (CallGraph.Interface i : graph.interfaces()) {
              steps.add(!i.schedule().isEmpty() ? i.schedule()
                  : level <= NORMAL_LOAD || warmup == 0 ? List.of(new Scenario.DemandStep(level, 0))
                  : List.of(new Scenario.DemandStep(NORMAL_LOAD, 0), new Scenario.DemandStep(level, warmup)));
            }
            Map<String, Long> before = server.computed();
            GeneratorCpu cpu = GeneratorCpu.from(warmup);
            GraphLoadGenerator g = GraphLoadGenerator.openLoop(client, steps, capacity, end,
                scenario.windowNanos(), scenario.seed() * 1_000_003L + li);
            String run = String.format(Locale.ROOT, "%.2fx", level);
            List<Recorder> recorders = await(g, end, name + " at " + run);
            generatorLoad.computeIfAbsent(name, k -> new ArrayList<>())
                .add(new GeneratorLoad(run, g.lagP99Micros(), cpu.cores()));
            Map<String, Long> work = minus(server.computed(), before);
            for (CallGraph.Interface i : graph.interfaces()) {
              Recorder r = recorders.get(i.index());
              double demand = r.demandAt(end - 1);
              Tally all = r.sum(0, Long.MAX_VALUE);
              if (demand == 0 && all.offered == 0) {
                continue;
              }
              ResultRecord row = Experiment.steadyRecord(interfaceScenario(i), name, demand, capacity[i.index()],
                  r, warmup, end);
              rows.get(i.index()).add(row);
              long from = roundUp(warmup, r.windowNanos());
              long to = end - end % r.windowNanos();
              boolean surged = level > NORMAL_LOAD && warmup > 0 && i.schedule().isEmpty();
              summary.add(summarize(name, i, demand, -1, -1, r.sum(from, to), to - from,
                  workPerSuccess(i, work, all), surged ? recovery(r, warmup, end) : Double.NaN));
              if (surged) {
                surgeWindows(surgeWindows.get(i.index()), name, demand, r, warmup, end, g.startEpochMillis());
              }
              System.err.printf(Locale.ROOT, "graph harness: %-12s %-8s %.2fx goodput %.0f rps, p95 %.0f us, "
                  + "p99 %.0f us%n", name, i.name(), demand, row.goodputRps(), pct(r.sum(from, to), 95),
                  row.p99Micros());
            }
          }
        }
      }
    }

    /** Schedule runs: one summary row per interface per phase between any interface's steps. */
    private void summarizePhases(String name, List<List<Scenario.DemandStep>> steps, List<Recorder> recorders,
        Map<String, Long> work, long end) {
      TreeSet<Long> bounds = new TreeSet<>();
      for (List<Scenario.DemandStep> s : steps) {
        s.forEach(step -> bounds.add(step.startNanos()));
      }
      bounds.add(end);
      Long[] b = bounds.toArray(Long[]::new);
      for (CallGraph.Interface i : graph.interfaces()) {
        Recorder r = recorders.get(i.index());
        Tally all = r.sum(0, Long.MAX_VALUE);
        if (all.offered == 0) {
          continue;
        }
        double perSuccess = workPerSuccess(i, work, all);
        for (int k = 0; k + 1 < b.length; k++) {
          long from = roundUp(b[k], r.windowNanos());
          long to = b[k + 1] - b[k + 1] % r.windowNanos();
          if (to <= from) {
            continue;
          }
          double level = r.demandAt((b[k] + b[k + 1]) / 2); // mid-phase: a step lands just after its time
          summary.add(summarize(name, i, level, b[k] / 1e6, b[k + 1] / 1e6, r.sum(from, to), to - from,
              perSuccess, k == 0 ? Double.NaN : recovery(r, b[k], b[k + 1])));
        }
      }
    }

    private Summary summarize(String scheme, CallGraph.Interface i, double demand, double fromMillis,
        double toMillis, Tally t, long spanNanos, double workPerSuccess, double recoveryMillis) {
      double seconds = spanNanos / 1e9;
      return new Summary(scheme, i.name(), demand, fromMillis, toMillis, t.offered / seconds, t.good / seconds,
          pct(t, 50), pct(t, 95), pct(t, 99), i.sloNanos() / 1e3,
          Tally.ratio(t.dropped, t.received), Tally.ratio(t.expired, t.offered), workPerSuccess,
          recoveryMillis);
    }

    /**
     * {@link RecoveryTime} of the goodput in {@value #RECOVERY_WINDOW_MILLIS} ms windows from a step
     * at {@code from} (rounded up to the recorder's window) to {@code to}; a partial last window is
     * left out.
     */
    static double recovery(Recorder r, long from, long to) {
      return RecoveryTime.afterStep(from, to, r.windowNanos(), (a, b) -> r.sum(a, b).good);
    }

    /**
     * Appends to {@code csv} one row per {@value #RECOVERY_WINDOW_MILLIS} ms window around a surge
     * at {@code step}: the windows {@link #recovery} reads, from the step (rounded up to the
     * recorder's window) to {@code to} with a partial last window left out, and {@value
     * #SURGE_WINDOWS_BEFORE_MILLIS} ms of those before it. {@code t_ms} counts from the step;
     * rates are per second of the window. Refused: never sent (a client interceptor refused it, or
     * it expired in a client queue); dropped: rejected by a server. {@code epoch_ms} is the
     * window's start on the wall clock, given the recorder's time 0 in {@code epochAtZeroMillis}, to
     * match the windows with the services' GC logs (which stamp {@code timemillis}).
     */
    static void surgeWindows(StringBuilder csv, String scheme, double demand, Recorder r, long step, long to,
        long epochAtZeroMillis) {
      long window = roundUp(RecoveryTime.WINDOW_NANOS, r.windowNanos());
      long start = roundUp(step, r.windowNanos());
      long before = Math.min(SURGE_WINDOWS_BEFORE_MILLIS * 1_000_000L / window, start / window);
      double perSecond = 1e9 / window;
      for (long w = start - before * window; w + window <= to; w += window) {
        Tally t = r.sum(w, w + window);
        csv.append(String.format(Locale.ROOT, "%s,%.2f,%d,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.1f,%.1f,%d%n", scheme,
            demand, (w - start) / 1_000_000, t.offered * perSecond, t.expired * perSecond, t.sent * perSecond,
            t.dropped * perSecond, t.completed * perSecond, t.good * perSecond, pct(t, 50), pct(t, 99),
            epochAtZeroMillis + w / 1_000_000));
      }
    }

    /** Node computations for interface {@code i} at every service, per successful response. */
    private static double workPerSuccess(CallGraph.Interface i, Map<String, Long> work, Tally all) {
      long computed = 0;
      for (Map.Entry<String, Long> e : work.entrySet()) {
        if (e.getKey().endsWith("." + i.name())) {
          computed += e.getValue();
        }
      }
      return all.completed == 0 ? Double.NaN : (double) computed / all.completed;
    }

    private void printSummary() {
      System.out.printf(Locale.ROOT, "%n== summary: p95 (Rajomon reports p95), work = node computations per "
          + "success (ideal: the tree's nodes) ==%n");
      String header = String.format(Locale.ROOT, "%-14s %-10s %8s %13s %10s %10s %9s %9s %9s %8s %7s %8s %6s %9s",
          "scheme", "interface", "demand", series ? "phase_ms" : "", "offered", "goodput", "p50_us", "p95_us",
          "p99_us", "slo_us", "drop%", "expired%", "work", "recov_ms");
      System.out.println(header);
      System.out.println("-".repeat(header.length()));
      for (Summary s : summary) {
        System.out.printf(Locale.ROOT,
            "%-14s %-10s %8.2f %13s %10.0f %10.0f %9.0f %9.0f %9.0f %8.0f %7.2f %8.2f %6.2f %9s%n",
            s.scheme(), s.iface(), s.demand(),
            s.phaseStartMillis() < 0 ? "" : String.format(Locale.ROOT, "%.0f-%.0f", s.phaseStartMillis(),
                s.phaseEndMillis()),
            s.offeredRps(), s.goodputRps(), s.p50Micros(), s.p95Micros(), s.p99Micros(), s.sloMicros(),
            100 * s.dropRate(), 100 * s.expiredRate(), s.workPerSuccess(), recoveryCell(s.recoveryMillis()));
      }
    }

    private String graphJson(boolean measured) {
      StringBuilder b = new StringBuilder("{\n");
      b.append("  \"scenario\": ").append(quote(scenario.name())).append(",\n");
      b.append("  \"capacity_measured\": ").append(measured).append(",\n");
      b.append("  \"prewarm_s\": {").append(prewarmedSeconds.entrySet().stream()
          .map(e -> quote(e.getKey()) + ": " + e.getValue()).collect(Collectors.joining(", "))).append("},\n");
      b.append("  \"capacity_remeasured\": ").append(remeasured).append(",\n");
      b.append("  \"capacity_warmup_settled\": ").append(capacitySettled).append(",\n");
      b.append("  \"core1_nice\": ").append(core1Nice).append(",\n");
      b.append("  \"generator\": {").append(generatorLoad.entrySet().stream()
          .map(e -> quote(e.getKey()) + ": [" + e.getValue().stream()
              .map(l -> String.format(Locale.ROOT, "{\"run\": %s, \"lag_p99_us\": %d, \"cpu_cores\": %s}",
                  quote(l.run()), Math.round(l.lagP99Micros()),
                  Double.isNaN(l.cpuCores()) ? "null" : num(Math.round(l.cpuCores() * 1000) / 1000.0)))
              .collect(Collectors.joining(", ")) + "]")
          .collect(Collectors.joining(", "))).append("},\n");
      b.append("  \"services\": [");
      for (CallGraph.Service s : graph.services()) {
        b.append(s.index() == 0 ? "\n" : ",\n").append("    {\"name\": ").append(quote(s.name()))
            .append(", \"workers\": ").append(s.workers()).append('}');
      }
      b.append("\n  ],\n");
      if (placement.split()) {
        b.append("  \"core1\": [").append(placement.core1().stream().map(GraphHarnessMain::quote)
            .collect(Collectors.joining(", "))).append("],\n");
      }
      b.append("  \"interfaces\": [");
      for (CallGraph.Interface i : graph.interfaces()) {
        double[] cal = calibration.get(i.name());
        b.append(i.index() == 0 ? "\n" : ",\n").append("    {\"name\": ").append(quote(i.name()))
            .append(", \"depth\": ").append(i.depth()).append(", \"width\": ").append(i.width())
            .append(", \"nodes\": ").append(i.nodes().size())
            .append(", \"slo_us\": ").append(num(i.sloNanos() / 1e3))
            .append(", \"capacity_rps\": ").append(num(capacity[i.index()]));
        if (cal != null) {
          b.append(", \"p95_at_normal_load_us\": ").append(num(cal[0]))
              .append(", \"slo_by_rule_us\": ").append(num(cal[1]));
        }
        b.append('}');
      }
      b.append("\n  ],\n  \"summary\": [");
      for (int k = 0; k < summary.size(); k++) {
        Summary s = summary.get(k);
        b.append(k == 0 ? "\n" : ",\n").append("    {\"scheme\": ").append(quote(s.scheme()))
            .append(", \"interface\": ").append(quote(s.iface()))
            .append(", \"demand\": ").append(num(s.demand()));
        if (s.phaseStartMillis() >= 0) {
          b.append(", \"phase_start_ms\": ").append(num(s.phaseStartMillis()))
              .append(", \"phase_end_ms\": ").append(num(s.phaseEndMillis()));
        }
        b.append(", \"offered_rps\": ").append(num(s.offeredRps()))
            .append(", \"goodput_rps\": ").append(num(s.goodputRps()))
            .append(", \"p50_us\": ").append(num(s.p50Micros()))
            .append(", \"p95_us\": ").append(num(s.p95Micros()))
            .append(", \"p99_us\": ").append(num(s.p99Micros()))
            .append(", \"slo_us\": ").append(num(s.sloMicros()))
            .append(", \"drop_rate\": ").append(num(s.dropRate()))
            .append(", \"expired_rate\": ").append(num(s.expiredRate()))
            .append(", \"work_per_success\": ").append(num(s.workPerSuccess()));
        if (!Double.isNaN(s.recoveryMillis())) {
          b.append(", \"recovery_ms\": ").append(num(s.recoveryMillis()));
        }
        b.append('}');
      }
      b.append(summary.isEmpty() ? "]\n}\n" : "\n  ]\n}\n");
      return b.toString();
    }

    /** The scenario as one interface sees it ({@link GraphExperiment#interfaceScenario}, the simulator's). */
    private Scenario interfaceScenario(CallGraph.Interface i) {
      return GraphExperiment.interfaceScenario(scenario, i, series);
    }

    /** Waits for {@code g}'s run ({@code what}, for the warnings) and its recorders. */
    private static List<Recorder> await(GraphLoadGenerator g, long runNanos, String what) throws Exception {
      List<Recorder> recorders = g.done().get(runNanos / 1_000_000 + 30_000, TimeUnit.MILLISECONDS);
      if (g.errors() > 0) {
        System.err.printf(Locale.ROOT, "graph harness: %d calls ended in errors (first: %s)%n", g.errors(),
            g.firstError());
      }
      if (g.abandoned() > 0) {
        System.err.printf(Locale.ROOT, "graph harness: %d calls still unanswered 10 s after the run; left out%n",
            g.abandoned());
      }
      if (g.lagP99Micros() > LAG_WARNING_MICROS) {
        System.err.printf(Locale.ROOT, "graph harness: %s: the load generator issued arrivals late (p99 %.0f us); "
            + "its core is busy, and latencies include that%n", what, g.lagP99Micros());
      }
      return recorders;
    }

    private static Map<String, Long> minus(Map<String, Long> after, Map<String, Long> before) {
      Map<String, Long> d = new LinkedHashMap<>();
      after.forEach((k, v) -> d.put(k, v - before.getOrDefault(k, 0L)));
      return d;
    }
  }

  private static String recoveryCell(double millis) {
    return Double.isNaN(millis) ? "" : millis < 0 ? "never" : String.format(Locale.ROOT, "%.0f", millis);
  }

  static double pct(Tally t, double percentile) {
    return t.latency.getTotalCount() == 0 ? 0 : t.latency.getValueAtPercentile(percentile) / 1e3;
  }

  static long roundUp(long value, long unit) {
    long r = value % unit;
    return r == 0 ? value : value + unit - r;
  }

  private static String num(double v) {
    if (!Double.isFinite(v)) {
      return "null";
    }
    if (v == Math.rint(v) && Math.abs(v) < 1e15) {
      return Long.toString((long) v);
    }
    return String.format(Locale.ROOT, "%.6g", v);
  }

  private static String quote(String s) {
    return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
  }
}
