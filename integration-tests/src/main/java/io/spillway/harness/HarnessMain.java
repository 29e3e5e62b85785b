package io.spillway.harness;

import io.spillway.api.NoControl;
import io.spillway.api.OverloadScheme;
import io.spillway.asqm.ContendedLockFinder;
import io.spillway.sim.Experiment;
import io.spillway.sim.Recorder;
import io.spillway.sim.Report;
import io.spillway.sim.ResultRecord;
import io.spillway.sim.Scenario;
import io.spillway.sim.ScenarioCommand;
import io.spillway.sim.StepConvergence;
import io.spillway.sim.Tally;
import io.spillway.transport.SpillwayClient;
import io.spillway.transport.Transport;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;

/**
 * {@code ./spillway harness SCENARIO [--out DIR] [--set key=value ...]}: runs a scenario on real
 * sockets. Each scheme gets a fresh server process ({@link HarnessServer}) pinned to core 0 where
 * the machine allows; this process is the load generator (the launcher pins it to core 1). The
 * harness measures capacity itself first (no control, closed loop), then runs every demand level
 * (or the schedule), and prints the same table and writes the same results.json as the simulator.
 *
 * <p>{@code --profile-locks FILE.jfr} runs Protego §4's contended-lock finder on the server instead
 * of the experiment (see {@link Harness#profileLocks}).
 *
 * <p>Network delay: loopback adds its own (tens of µs through the kernel and Netty); the harness
 * injects none beyond that, and the scenario's {@code rtt_us} is used only as Breakwater's control
 * period and in the SLO rule.
 */
public final class HarnessMain {

  /** How many times a run is made before its results are kept with rows over capacity marked. */
  static final int RUN_ATTEMPTS = 2;
  /**
   * Each server is warmed (JIT) before its first measured level: at half capacity, then at the
   * scenario's highest demand, then at half capacity again. A process with one core compiles on the
   * core it serves from, and a compiler thread that is runnable beside the event loop takes the
   * core for a scheduler tick (4 ms on this kernel, HZ = 250) at a time: measured with
   * /proc/PID/task/TID/schedstat, the C2 threads of the server and of the load generator ran for
   * 15–65 ms of every second of a measured level when warm-up was at half capacity only, because the
   * overload paths (AQM drops, client expiry, rejects) first became hot there and were compiled and
   * deoptimized then. The overload step compiles them here instead; the last step lets a scheme with
   * no control drain the backlog the overload step left (the warm-up ends when every call has).
   *
   * <p>These 8 s are the least warm-up, not all of it: a fresh server's JIT compiled for 10–30 s on
   * a shared two-core machine, so the warm-up goes on in one-second slices at {@link #warmLevel}
   * until both JVMs' compilers are quiet by {@link SteadyCapacity#warm}'s rule (the one a capacity
   * reading waits for), at most the scenario's {@code steady_max_s} slices.
   */
  static final long SERVER_WARMUP_NANOS = 8_000_000_000L;
  static final long WARMUP_OVERLOAD_FROM_NANOS = 2_000_000_000L;
  static final long WARMUP_OVERLOAD_TO_NANOS = 5_000_000_000L;
  /**
   * The highest level the warm-up's slices run at: below capacity, so that a scheme with no control
   * ends each slice with no backlog and the next slice starts where the measured levels would.
   */
  static final double WARM_LEVEL_CAP = 0.9;

  private HarnessMain() { }

  public static void main(String[] args) throws Exception {
    try {
      System.exit(run(args));
    } catch (IllegalArgumentException e) {
      System.err.println("spillway harness: " + e.getMessage());
      System.exit(2);
    }
  }

  static int run(String[] args) throws Exception {
    int[] connections = {4};
    Path[] profileLocks = {null};
    int[] soakMinutes = {0};
    ScenarioCommand cmd = ScenarioCommand.parse(args, Map.of(
        "--connections", v -> connections[0] = Integer.parseInt(v),
        "--transport", v -> System.setProperty(Transport.PROPERTY, v),
        "--profile-locks", v -> profileLocks[0] = Path.of(v),
        "--soak", v -> soakMinutes[0] = Integer.parseInt(v)));
    if (cmd.help()) {
      System.out.println("usage: spillway harness SCENARIO [--out DIR] [--set key=value ...] [--connections N]"
          + " [--transport io_uring|epoll|nio] [--profile-locks FILE.jfr] [--soak MINUTES]");
      System.out.println("  --soak MINUTES: instead of the experiment, the scenario's first scheme at 2x capacity for"
          + " MINUTES, minute by minute: goodput, refusals, requests lost, the server's heap after each GC");
      System.out.println("  --profile-locks FILE.jfr: instead of the experiment, run one step at capacity under the"
          + " scenario's first scheme with the server's platform-thread lock waits recorded (JFR) to FILE and its"
          + " virtual threads' sampled from thread dumps, and rank its locks");
      return 0;
    }
    Path file = cmd.scenarioFile();
    Map<String, String> overrides = cmd.overrides();
    Scenario scenario = cmd.load();
    List<String> simulated = scenario.simulatorOnlyKeys();
    if (!simulated.isEmpty()) {
      throw new IllegalArgumentException("scenario keys " + String.join(", ", simulated)
          + " are modelled by the simulator only (./spillway sim): the harness's clients speak"
          + " Spillway and its handlers do not block");
    }
    scenario.schemes().forEach(name -> SocketSchemes.create(name, scenario));
    Path out = cmd.out() != null ? cmd.out() : Path.of("results", "harness-" + scenario.name());
    Files.createDirectories(out);
    Harness h = new Harness(scenario, file, overrides, connections[0], out);
    if (profileLocks[0] != null) {
      return h.profileLocks(profileLocks[0].toAbsolutePath(), System.out);
    }
    if (soakMinutes[0] > 0) {
      return h.soak(soakMinutes[0], System.out);
    }
    long started = System.nanoTime();
    Experiment.Results results = h.run();
    Report.printTable(results, System.out);
    Report.write(results, out);
    System.out.printf(Locale.ROOT, "%nwrote %s (%.1f s wall clock; server %s, load generator %s)%n",
        out.resolve("results.json"), (System.nanoTime() - started) / 1e9, h.serverPinning(), h.clientPinning());
    return 0;
  }

  /** One harness run. */
  static final class Harness {
    private final Scenario scenario;
    private final Path scenarioFile;
    private final Map<String, String> overrides;
    private final int connections;
    private final Path out;
    private final boolean pin;

    Harness(Scenario scenario, Path scenarioFile, Map<String, String> overrides, int connections, Path out) {
      this.scenario = scenario;
      this.scenarioFile = scenarioFile;
      this.overrides = overrides;
      this.connections = connections;
      this.out = out;
      this.pin = ServerProcess.mayPin();
    }

    String serverPinning() {
      return pin ? "on core 0" : "unpinned";
    }

    String clientPinning() {
      String pinned = System.getenv("SPILLWAY_PINNED");
      return pinned != null ? "on core " + pinned : "unpinned";
    }

    /**
     * The experiment, with capacity a run can trust (docs/design.md "Measures": capacity is the
     * highest throughput the server reaches with no control). A measured capacity is read once the
     * server's JIT is quiet ({@link SteadyCapacity}), on two fresh servers before the run (the
     * second kept if it lies above the first beyond both spreads), and again after the run. The run
     * is made again, at the higher reading, if the reading after it less its spread exceeds the one
     * it used plus its spread, or if any row's goodput exceeds that one by more than its spread
     * (either shows it read low, and the run's demand levels, which are multiples of it, with it);
     * at most {@value #RUN_ATTEMPTS} times, after which rows still over capacity are marked in the
     * table ({@link Experiment.Results#overCapacity}).
     */
    Experiment.Results run() throws Exception {
      if (scenario.capacityRps() > 0) {
        System.err.printf(Locale.ROOT, "harness: capacity %.0f rps (given)%n", scenario.capacityRps());
        return runAt(scenario.capacityRps(), false, Double.NaN);
      }
      SteadyCapacity.Reading reading = measureCapacity("before the run");
      // At the first reading this JVM, whose load generator drives the closed loop, is as fresh as
      // the server, and a reading taken once both JITs are quiet can still lie below one taken on a
      // fresh server after the run by more than both spreads (docs/results/harness.md), which costs
      // the whole run again. A second reading on a fresh server, this JVM warm, finds it first.
      SteadyCapacity.Reading again = Boolean.getBoolean(AheadOfTimeCache.TRAIN)
          ? reading : measureCapacity("before the run");
      if (again.above(reading)) {
        System.err.printf(Locale.ROOT, "harness: capacity read low at first: %.0f rps (spread %.1f%%) "
            + "against %.0f rps (spread %.1f%%) on a second fresh server; keeping the second%n",
            reading.rps(), 100 * reading.spread(), again.rps(), 100 * again.spread());
        reading = again;
      }
      for (int attempt = 1; ; attempt++) {
        Experiment.Results results = runAt(reading.rps(), true, reading.spread());
        if (Boolean.getBoolean(AheadOfTimeCache.TRAIN)) {
          return results; // each server writes the cache as it exits: the run's own servers must be last
        }
        SteadyCapacity.Reading after = measureCapacity("after the run");
        boolean afterHigher = after.above(reading);
        List<ResultRecord> judged = scenario.schedule().isEmpty() ? results.rows() : results.phases();
        long over = judged.stream().filter(results::overCapacity).count();
        if (!afterHigher && over == 0) {
          System.err.printf(Locale.ROOT, "harness: capacity checked after the run: %.0f rps (spread %.1f%%), "
              + "not above %.0f rps (spread %.1f%%) beyond both spreads; no goodput above it%n", after.rps(),
              100 * after.spread(), reading.rps(), 100 * reading.spread());
          return results;
        }
        System.err.printf(Locale.ROOT, "harness: capacity read low: after the run %.0f rps (spread %.1f%%) against "
            + "%.0f rps (spread %.1f%%) before it; %d row(s) with goodput above it%s%n", after.rps(),
            100 * after.spread(), reading.rps(), 100 * reading.spread(), over,
            attempt < RUN_ATTEMPTS ? "; running again at the higher reading"
                : over > 0 ? "; kept, those rows marked '> cap'" : "; kept");
        if (attempt >= RUN_ATTEMPTS) {
          return results;
        }
        reading = SteadyCapacity.Reading.higher(reading, after);
      }
    }

    private Experiment.Results runAt(double capacity, boolean measured, double spread) throws Exception {
      List<ResultRecord> rows = new ArrayList<>();
      List<StepConvergence> convergence = new ArrayList<>();
      List<ResultRecord> phases = new ArrayList<>();
      WindowLog windows = new WindowLog(out);
      for (String name : scenario.schemes()) {
        OverloadScheme scheme = SocketSchemes.create(name, scenario);
        try (ServerProcess server = ServerProcess.start(scenarioFile, overrides, name, scenario.cores(), pin, out);
             SpillwayClient client = client(scheme, server.port())) {
          warm(client, server, name, capacity);
          if (scenario.schedule().isEmpty()) {
            List<Double> levels = scenario.demandLevels();
            for (int i = 0; i < levels.size(); i++) {
              double level = levels.get(i);
              long end = scenario.warmupNanos() + scenario.durationNanos();
              Recorder recorder = new Recorder(scenario.windowNanos());
              long[] loopGaps = WindowLog.gapsFor(end, scenario.windowNanos());
              collectGarbage();
              LoadGenerator.openLoop(client, scenario, List.of(new Scenario.DemandStep(level, 0)), capacity,
                  end, recorder, scenario.seed() * 1_000_003L + i, loopGaps)
                  .get(end / 1_000_000 + 30_000, TimeUnit.MILLISECONDS);
              ResultRecord r = Experiment.steadyRecord(scenario, name, level, capacity, recorder,
                  scenario.warmupNanos(), end);
              System.err.printf(Locale.ROOT, "harness: %-12s %.2fx goodput %.0f rps, p99 %.1f us%n",
                  name, level, r.goodputRps(), r.p99Micros());
              rows.add(r);
              windows.append(name, recorder, scenario.warmupNanos(), loopGaps);
            }
          } else {
            Recorder recorder = new Recorder(scenario.windowNanos());
            long[] loopGaps = WindowLog.gapsFor(scenario.durationNanos(), scenario.windowNanos());
            collectGarbage();
            LoadGenerator.openLoop(client, scenario, scenario.schedule(), capacity, scenario.durationNanos(),
                recorder, scenario.seed(), loopGaps)
                .get(scenario.durationNanos() / 1_000_000 + 30_000, TimeUnit.MILLISECONDS);
            Experiment.addSeries(scenario, name, recorder, capacity, rows, convergence, phases);
            windows.append(name, recorder, 0, loopGaps);
            System.err.printf(Locale.ROOT, "harness: %-12s schedule done%n", name);
          }
        }
      }
      return new Experiment.Results(scenario, capacity, measured, rows, convergence, phases, spread);
    }

    /**
     * {@code --profile-locks}: Protego §4's "identifying contended locks" on the harness's own
     * service. Runs the scenario's first scheme at 1.0 × capacity for one step (warm-up plus
     * duration) and ranks the server's locks by the time requests queued for them: its platform
     * threads' waits from a Flight Recorder recording ({@link HarnessServer}'s {@code jfr-start},
     * written to {@code file}), its virtual threads', which JFR does not record, from thread dumps
     * of the server process taken meanwhile ({@link ContendedLockFinder#sample}). With {@code
     * paths}, also says whether the path mutexes rank first.
     *
     * @return the exit status: 0, or 1 if the scenario has paths and they do not rank first
     */
    int profileLocks(Path file, PrintStream report) throws Exception {
      boolean measure = scenario.capacityRps() <= 0;
      double capacity = measure ? measureCapacity("").rps() : scenario.capacityRps();
      String name = scenario.schemes().getFirst();
      long step = scenario.warmupNanos() + scenario.durationNanos();
      System.err.printf(Locale.ROOT, "harness: capacity %.0f rps (%s); profiling the locks of %s at 1.00x for %.1f s%n",
          capacity, measure ? "measured" : "given", name, step / 1e9);
      OverloadScheme scheme = SocketSchemes.create(name, scenario);
      Recorder recorder = new Recorder(scenario.windowNanos());
      List<ContendedLockFinder.LockContention> sampled;
      try (ServerProcess server = ServerProcess.start(scenarioFile, overrides, name, scenario.cores(), pin, out);
           SpillwayClient client = client(scheme, server.port())) {
        warm(client, server, name, capacity);
        server.command("jfr-start");
        CompletableFuture<List<ContendedLockFinder.LockContention>> sampling = CompletableFuture.supplyAsync(() -> {
          try {
            return ContendedLockFinder.sample(server.pid(), Duration.ofNanos(step),
                ContendedLockFinder.DEFAULT_SAMPLE_INTERVAL, true);
          } catch (IOException | InterruptedException e) {
            throw new CompletionException(e);
          }
        }, runnable -> Thread.ofPlatform().daemon().start(runnable));
        LoadGenerator.openLoop(client, scenario, List.of(new Scenario.DemandStep(1.0, 0)), capacity, step,
            recorder, scenario.seed()).get(step / 1_000_000 + 30_000, TimeUnit.MILLISECONDS);
        sampled = sampling.get(step / 1_000_000 + 30_000, TimeUnit.MILLISECONDS);
        server.command("jfr-stop " + file);
      }
      List<ContendedLockFinder.LockContention> ranked = ContendedLockFinder.merge(ContendedLockFinder.analyze(file), sampled);
      Tally served = recorder.sum(0, step);
      report.printf(Locale.ROOT, "contended locks in the %s server at 1.00x capacity (%.0f rps offered, %d served in"
          + " %.1f s), most waiting first; recording %s%n", name, capacity, served.completed, step / 1e9, file);
      ContendedLockFinder.print(ranked, 10, report);
      int paths = scenario.paths().length;
      if (paths == 0) {
        return 0;
      }
      int pathMutexesOnTop = 0;
      while (pathMutexesOnTop < Math.min(paths, ranked.size())
          && ranked.get(pathMutexesOnTop).site().startsWith(MutexPathService.class.getName() + ".")) {
        pathMutexesOnTop++;
      }
      boolean ok = pathMutexesOnTop == paths;
      report.printf(Locale.ROOT, "%s: the top %d %s %s%n", ok ? "ok" : "NOT AS EXPECTED", paths,
          paths == 1 ? "lock is" : "locks are", ok ? "the path mutexes (MutexPathService)"
              : "not all path mutexes: only " + pathMutexesOnTop + " of them rank first");
      return ok ? 0 : 1;
    }

    /** The offered load of a soak, in multiples of capacity. */
    static final double SOAK_LEVEL = 2.0;
    static final long MINUTE_NANOS = 60_000_000_000L;

    /**
     * {@code --soak MINUTES}: the scenario's first scheme at {@link #SOAK_LEVEL} × capacity for
     * MINUTES, one open-loop minute after another on one server process and one client. Each minute
     * reports what was offered, served within the SLO (goodput), refused, expired in the client
     * queue and lost (offered but never ended: must be 0), and the server's heap in use after each of
     * its collections in that minute ({@link GcSamples}). Writes {@code soak.csv} to the output
     * directory. The summary judges memory from minute 5 on (from minute 1 in a soak shorter than 10
     * minutes): the spread of the per-minute mean heap after GC, (max − min) / min.
     *
     * @return 0, or 1 if any request was lost
     */
    int soak(int minutes, PrintStream report) throws Exception {
      boolean measure = scenario.capacityRps() <= 0;
      double capacity = measure ? measureCapacity("").rps() : scenario.capacityRps();
      String name = scenario.schemes().getFirst();
      System.err.printf(Locale.ROOT, "harness: capacity %.0f rps (%s); soak of %s at %.1fx for %d min%n",
          capacity, measure ? "measured" : "given", name, SOAK_LEVEL, minutes);
      OverloadScheme scheme = SocketSchemes.create(name, scenario);
      List<String> csv = new ArrayList<>(List.of(
          "minute,offered,goodput_rps,served,refused,expired,lost,p99_us,gcs,heap_after_gc_mean_mb,heap_after_gc_max_mb"));
      List<Double> heapMeans = new ArrayList<>();
      List<Double> goodputs = new ArrayList<>();
      long lostTotal = 0;
      try (ServerProcess server = ServerProcess.start(scenarioFile, overrides, name, scenario.cores(), pin, out);
           SpillwayClient client = client(scheme, server.port())) {
        warm(client, server, name, capacity);
        server.command("gc-samples"); // forget the warm-up's
        for (int m = 1; m <= minutes; m++) {
          Recorder recorder = new Recorder(scenario.windowNanos());
          LoadGenerator.openLoop(client, scenario, List.of(new Scenario.DemandStep(SOAK_LEVEL, 0)), capacity,
              MINUTE_NANOS, recorder, scenario.seed() * 1_000_003L + m)
              .get(MINUTE_NANOS / 1_000_000 + 60_000, TimeUnit.MILLISECONDS);
          // every call of the minute, including those that ended after it (the future waits for them)
          Tally t = recorder.total();
          ResultRecord r = Experiment.steadyRecord(scenario, name, SOAK_LEVEL, capacity, recorder, 0, MINUTE_NANOS);
          long lost = t.offered - t.completed - t.dropped - t.expired;
          lostTotal += lost;
          double[] heap = heapAfterGc(server.command("gc-samples"));
          heapMeans.add(heap[1]);
          goodputs.add(r.goodputRps());
          String line = String.format(Locale.ROOT, "%d,%d,%.0f,%d,%d,%d,%d,%.0f,%d,%.2f,%.2f", m, t.offered,
              r.goodputRps(), t.completed, t.dropped, t.expired, lost, r.p99Micros(), (long) heap[0], heap[1], heap[2]);
          csv.add(line);
          report.println("soak " + line);
          report.flush();
          Files.write(out.resolve("soak.csv"), csv);
        }
      }
      int from = minutes >= 10 ? 5 : 1;
      List<Double> judged = heapMeans.subList(from - 1, heapMeans.size()).stream().filter(v -> v > 0).toList();
      double min = judged.stream().mapToDouble(Double::doubleValue).min().orElse(Double.NaN);
      double max = judged.stream().mapToDouble(Double::doubleValue).max().orElse(Double.NaN);
      List<Double> goodput = goodputs.subList(from - 1, goodputs.size());
      report.printf(Locale.ROOT, "soak of %s at %.1fx for %d min: lost %d; heap after GC (per-minute means, minutes"
              + " %d-%d) %.2f-%.2f MB, spread %.1f%%; goodput %.0f-%.0f rps (capacity %.0f); %s%n",
          name, SOAK_LEVEL, minutes, lostTotal, from, minutes, min, max, 100 * (max - min) / min,
          goodput.stream().mapToDouble(Double::doubleValue).min().orElse(0),
          goodput.stream().mapToDouble(Double::doubleValue).max().orElse(0), capacity, out.resolve("soak.csv"));
      SoakChart.write(out.resolve("soak.csv"), out, capacity);
      return lostTotal == 0 ? 0 : 1;
    }

    /** {count, mean MB, max MB} of a {@code gc-samples} answer; zeros when no collection ran. */
    static double[] heapAfterGc(String samples) {
      if (samples.isBlank()) {
        return new double[] {0, 0, 0};
      }
      String[] each = samples.split(",");
      double sum = 0;
      double max = 0;
      for (String sample : each) {
        double mb = Long.parseLong(sample.substring(sample.indexOf(':') + 1)) / 1048576.0;
        sum += mb;
        max = Math.max(max, mb);
      }
      return new double[] {each.length, sum / each.length, max};
    }

    /**
     * Collects this process's garbage between steps, so that its young collections (one every ~60 s
     * of load, 10–36 ms each) fall between measured levels rather than inside one: the load
     * generator's pauses count as latency. A level (warm-up plus duration) allocates far less than
     * the young generation holds.
     */
    private static void collectGarbage() {
      System.gc();
    }

    private SpillwayClient client(OverloadScheme scheme, int port) throws InterruptedException {
      return SpillwayClient.builder().scheme(scheme).port(port).connections(connections)
          .sessions(scenario.clients()).sloNanos(scenario.sloNanos()).build().start();
    }

    /**
     * Warms a scheme's fresh server: the fixed shape of {@link #SERVER_WARMUP_NANOS}, then
     * one-second open-loop slices at {@link #warmLevel} until {@link SteadyCapacity#warm} (at most
     * {@code steady_max_s} of them). Prints one line: the seconds it took and each slice's trace.
     */
    private void warm(SpillwayClient client, ServerProcess server, String name, double capacity)
        throws Exception {
      List<Scenario.DemandStep> steps = List.of(new Scenario.DemandStep(0.5, 0),
          new Scenario.DemandStep(Math.max(0.5, levels().max().orElse(1.0)), WARMUP_OVERLOAD_FROM_NANOS),
          new Scenario.DemandStep(0.5, WARMUP_OVERLOAD_TO_NANOS));
      LoadGenerator.openLoop(client, scenario, steps, capacity,
          SERVER_WARMUP_NANOS, new Recorder(scenario.windowNanos()), ~scenario.seed())
          .get(SERVER_WARMUP_NANOS / 1_000_000 + 30_000, TimeUnit.MILLISECONDS);
      double level = warmLevel();
      List<Scenario.DemandStep> steady = List.of(new Scenario.DemandStep(level, 0));
      SteadyCapacity.Slices slices = SteadyCapacity.warm(index -> {
        Recorder recorder = new Recorder(scenario.windowNanos());
        LoadGenerator.openLoop(client, scenario, steady, capacity, SteadyCapacity.SLICE_NANOS, recorder,
                ~scenario.seed() - 1 - index)
            .get(SteadyCapacity.SLICE_NANOS / 1_000_000 + 30_000, TimeUnit.MILLISECONDS);
        return recorder.total().completed;
      }, () -> jitMillis(server), scenario.steadyMaxSlices());
      System.err.println(SteadyCapacity.describeWarm(String.format(Locale.ROOT, "harness: %-12s warm-up", name),
          SERVER_WARMUP_NANOS / 1e9, level, slices));
    }

    /** The demand levels the scenario measures: its steady levels, or its schedule's steps. */
    private java.util.stream.DoubleStream levels() {
      return scenario.schedule().isEmpty()
          ? scenario.demandLevels().stream().mapToDouble(Double::doubleValue)
          : scenario.schedule().stream().mapToDouble(Scenario.DemandStep::level);
    }

    /**
     * The level the warm-up's slices run at: the lowest the scenario measures, where its first
     * measured level usually starts, at most {@value #WARM_LEVEL_CAP}.
     */
    double warmLevel() {
      return Math.min(WARM_LEVEL_CAP, levels().min().orElse(WARM_LEVEL_CAP));
    }

    /** Ms the server's JIT and this JVM's have compiled; -1 if either JVM does not say. */
    private static long jitMillis(ServerProcess server) throws IOException {
      return SteadyCapacity.withOwnJit(server.compileMillis());
    }

    /**
     * No control, closed loop with enough calls outstanding that the server never idles, in
     * one-second slices on a fresh server until {@link SteadyCapacity#steady} (at most the
     * scenario's {@code steady_max_s} slices).
     */
    private SteadyCapacity.Reading measureCapacity(String when) throws Exception {
      try (ServerProcess server = ServerProcess.start(scenarioFile, overrides, "none", scenario.cores(), pin, out);
           SpillwayClient client = client(NoControl.INSTANCE, server.port())) {
        // Both JVMs' compilers count: the server's takes its one core from the requests, and this
        // JVM's takes the load generator's core from it (a cold generator, not the server, then
        // bounds the closed loop).
        SteadyCapacity.Measured m = SteadyCapacity.measure(index -> {
          Recorder recorder = new Recorder(100_000_000L);
          LoadGenerator.closedLoop(client, scenario, 64 * scenario.cores(), SteadyCapacity.SLICE_NANOS, recorder,
                  scenario.seed() + index)
              .get(SteadyCapacity.SLICE_NANOS / 1_000_000 + 30_000, TimeUnit.MILLISECONDS);
          return recorder.sum(0, SteadyCapacity.SLICE_NANOS).completed;
        }, () -> jitMillis(server), scenario.steadyMaxSlices());
        SteadyCapacity.Reading r = m.reading();
        System.err.println(m.describe("harness: capacity", when.isEmpty() ? "" : " " + when,
            scenario.steadyMaxSlices()));
        return r;
      }
    }
  }

  /** A {@link HarnessServer} child process; closing it closes its stdin, which stops it. */
  static final class ServerProcess implements AutoCloseable {
    private final Process process;
    private final BufferedReader stdout;
    private final int port;

    private ServerProcess(Process process, BufferedReader stdout, int port) {
      this.process = process;
      this.stdout = stdout;
      this.port = port;
    }

    static ServerProcess start(Path scenarioFile, Map<String, String> overrides, String scheme, int carriers,
        boolean pin, Path out) throws IOException, InterruptedException {
      List<String> options = new ArrayList<>();
      String transport = System.getProperty(Transport.PROPERTY);
      if (transport != null) {
        options.add("-D" + Transport.PROPERTY + "=" + transport);
      }
      options.addAll(AheadOfTimeCache.serverOptions());
      if (scheme.equals(SocketSchemes.SENTINEL)) {
        // Sentinel writes its record log and per-second metric log under ~/logs/csp unless told
        options.add("-Dcsp.sentinel.log.dir=" + out.toAbsolutePath().resolve("sentinel-logs"));
      }
      List<String> args = new ArrayList<>(List.of(scenarioFile.toString(), scheme, Integer.toString(carriers)));
      overrides.forEach((k, v) -> args.add(k + "=" + v));
      return launch(options, HarnessServer.class.getName(), args, scheme, pin, out);
    }

    /**
     * Whether a harness may pin its server to core 0: the machine has two cores (asked of the
     * launcher, which may already have pinned this JVM to one), {@code taskset} is there, and
     * {@code SPILLWAY_NO_PIN} is not set.
     */
    static boolean mayPin() {
      boolean twoCores = System.getenv("SPILLWAY_PINNED") != null || Runtime.getRuntime().availableProcessors() >= 2;
      return twoCores && Files.isExecutable(Path.of("/usr/bin/taskset")) && System.getenv("SPILLWAY_NO_PIN") == null;
    }

    /**
     * Starts a server JVM running {@code mainClass} on this JVM's class path, pinned to core 0 if
     * {@code pin}, its standard error in {@code out/server-NAME.log} and its collections in {@code
     * out/gc-server-NAME.log}. The main class speaks {@link HarnessServer}'s protocol: its first line
     * on standard output is {@link HarnessServer#PORT_LINE}, then it answers commands ({@link
     * #command}) until its standard input closes.
     *
     * @param options JVM options before the common ones (system properties, caches)
     */
    static ServerProcess launch(List<String> options, String mainClass, List<String> args, String name,
        boolean pin, Path out) throws IOException, InterruptedException {
      List<String> cmd = new ArrayList<>();
      if (pin) {
        cmd.addAll(List.of("/usr/bin/taskset", "-c", "0"));
      }
      cmd.add(ProcessHandle.current().info().command().orElse("java"));
      cmd.addAll(options);
      cmd.addAll(List.of("-XX:+UseParallelGC", "-Xms1g", "-Xmx1g", "-XX:MetaspaceSize=256m",
          "-Xlog:gc:file=" + out.resolve("gc-server-" + name + ".log"),
          "--enable-native-access=ALL-UNNAMED", "--add-opens", "java.base/java.lang=ALL-UNNAMED",
          "-cp", System.getProperty("java.class.path"), mainClass));
      cmd.addAll(args);
      Path log = out.resolve("server-" + name + ".log");
      Process p = new ProcessBuilder(cmd).redirectError(log.toFile()).start();
      BufferedReader stdout = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
      String line = stdout.readLine();
      if (line == null || !line.startsWith(HarnessServer.PORT_LINE)) {
        p.destroyForcibly().waitFor();
        throw new IOException("server for " + name + " did not start (first line: " + line + "); see " + log);
      }
      return new ServerProcess(p, stdout, Integer.parseInt(line.substring(HarnessServer.PORT_LINE.length()).strip()));
    }

    /** The server JVM's process id (under {@code taskset}, which runs it in its own process). */
    long pid() {
      return process.pid();
    }

    int port() {
      return port;
    }

    /**
     * Sends one command line to the server and waits for its answer ({@link HarnessServer}).
     *
     * @return the answer, after the {@code SPILLWAY-JFR} prefix
     * @throws IOException if the server ends first or answers with an error
     */
    String command(String line) throws IOException {
      process.getOutputStream().write((line + "\n").getBytes(StandardCharsets.UTF_8));
      process.getOutputStream().flush();
      for (String answer = stdout.readLine(); answer != null; answer = stdout.readLine()) {
        if (answer.startsWith(HarnessServer.JFR_LINE)) {
          String text = answer.substring(HarnessServer.JFR_LINE.length());
          if (text.startsWith("error")) {
            throw new IOException("server refused '" + line + "': " + text);
          }
          return text;
        }
      }
      throw new IOException("server ended before answering '" + line + "'");
    }

    /** Ms the server's JIT has compiled since it started; -1 if its JVM does not say. */
    long compileMillis() throws IOException {
      return Long.parseLong(command("jit").strip());
    }

    @Override
    public void close() throws IOException, InterruptedException {
      process.getOutputStream().close();
      if (!process.waitFor(AheadOfTimeCache.exitWaitSeconds(), TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor();
      }
    }
  }
}
