package io.spillway.harness;

import io.spillway.api.NoControl;
import io.spillway.api.OverloadScheme;
import io.spillway.sim.Experiment;
import io.spillway.sim.Recorder;
import io.spillway.sim.Report;
import io.spillway.sim.ResultRecord;
import io.spillway.sim.Scenario;
import io.spillway.sim.ScenarioCommand;
import io.spillway.sim.SchemeRegistry;
import io.spillway.sim.StepConvergence;
import io.spillway.transport.SpillwayClient;
import io.spillway.transport.Transport;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * {@code ./spillway harness SCENARIO [--out DIR] [--set key=value ...]}: runs a scenario on real
 * sockets. Each scheme gets a fresh server process ({@link HarnessServer}) pinned to core 0 where
 * the machine allows; this process is the load generator (the launcher pins it to core 1). The
 * harness measures capacity itself first (no control, closed loop), then runs every demand level
 * (or the schedule), and prints the same table and writes the same results.json as the simulator.
 *
 * <p>Network delay: loopback adds its own (tens of µs through the kernel and Netty); the harness
 * injects none beyond that, and the scenario's {@code rtt_us} is used only as Breakwater's control
 * period and in the SLO rule.
 */
public final class HarnessMain {

  /** Closed-loop capacity measurement: warm-up, then measured. */
  static final long CAPACITY_WARMUP_NANOS = 3_000_000_000L;
  static final long CAPACITY_MEASURE_NANOS = 2_000_000_000L;
  /**
   * Each server is warmed (JIT) at half capacity before its first measured level. A process with
   * one core compiles on the core it serves from; p99 kept falling for ~10 s after start.
   */
  static final long SERVER_WARMUP_NANOS = 5_000_000_000L;

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
    ScenarioCommand cmd = ScenarioCommand.parse(args, Map.of(
        "--connections", v -> connections[0] = Integer.parseInt(v),
        "--transport", v -> System.setProperty(Transport.PROPERTY, v)));
    if (cmd.help()) {
      System.out.println("usage: spillway harness SCENARIO [--out DIR] [--set key=value ...] [--connections N]"
          + " [--transport io_uring|epoll|nio]");
      return 0;
    }
    Path file = cmd.scenarioFile();
    Map<String, String> overrides = cmd.overrides();
    Scenario scenario = cmd.load();
    scenario.schemes().forEach(name -> SchemeRegistry.create(name, scenario));
    Path out = cmd.out() != null ? cmd.out() : Path.of("results", "harness-" + scenario.name());
    Files.createDirectories(out);
    Harness h = new Harness(scenario, file, overrides, connections[0], out);
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
      // This JVM may already be pinned to one core by the launcher, so ask the launcher, not it.
      boolean twoCores = System.getenv("SPILLWAY_PINNED") != null || Runtime.getRuntime().availableProcessors() >= 2;
      this.pin = twoCores && Files.isExecutable(Path.of("/usr/bin/taskset"))
          && System.getenv("SPILLWAY_NO_PIN") == null;
    }

    String serverPinning() {
      return pin ? "on core 0" : "unpinned";
    }

    String clientPinning() {
      String pinned = System.getenv("SPILLWAY_PINNED");
      return pinned != null ? "on core " + pinned : "unpinned";
    }

    Experiment.Results run() throws Exception {
      boolean measure = scenario.capacityRps() <= 0;
      double capacity = measure ? measureCapacity() : scenario.capacityRps();
      System.err.printf(Locale.ROOT, "harness: capacity %.0f rps (%s)%n", capacity, measure ? "measured" : "given");
      List<ResultRecord> rows = new ArrayList<>();
      List<StepConvergence> convergence = new ArrayList<>();
      for (String name : scenario.schemes()) {
        OverloadScheme scheme = SchemeRegistry.create(name, scenario);
        try (ServerProcess server = ServerProcess.start(scenarioFile, overrides, name, scenario.cores(), pin, out);
             SpillwayClient client = client(scheme, server.port())) {
          warm(client, capacity);
          if (scenario.schedule().isEmpty()) {
            List<Double> levels = scenario.demandLevels();
            for (int i = 0; i < levels.size(); i++) {
              double level = levels.get(i);
              long end = scenario.warmupNanos() + scenario.durationNanos();
              Recorder recorder = new Recorder(scenario.windowNanos());
              LoadGenerator.openLoop(client, scenario, List.of(new Scenario.DemandStep(level, 0)), capacity,
                  end, recorder, scenario.seed() * 1_000_003L + i).get(end / 1_000_000 + 30_000, TimeUnit.MILLISECONDS);
              ResultRecord r = Experiment.steadyRecord(scenario, name, level, capacity, recorder,
                  scenario.warmupNanos(), end);
              System.err.printf(Locale.ROOT, "harness: %-12s %.2fx goodput %.0f rps, p99 %.1f us%n",
                  name, level, r.goodputRps(), r.p99Micros());
              rows.add(r);
            }
          } else {
            Recorder recorder = new Recorder(scenario.windowNanos());
            LoadGenerator.openLoop(client, scenario, scenario.schedule(), capacity, scenario.durationNanos(),
                recorder, scenario.seed()).get(scenario.durationNanos() / 1_000_000 + 30_000, TimeUnit.MILLISECONDS);
            Experiment.addSeries(scenario, name, recorder, capacity, rows, convergence);
            System.err.printf(Locale.ROOT, "harness: %-12s schedule done%n", name);
          }
        }
      }
      return new Experiment.Results(scenario, capacity, measure, rows, convergence);
    }

    private SpillwayClient client(OverloadScheme scheme, int port) throws InterruptedException {
      return SpillwayClient.builder().scheme(scheme).port(port).connections(connections)
          .sessions(scenario.clients()).sloNanos(scenario.sloNanos()).build().start();
    }

    private void warm(SpillwayClient client, double capacity) throws Exception {
      LoadGenerator.openLoop(client, scenario, List.of(new Scenario.DemandStep(0.5, 0)), capacity,
          SERVER_WARMUP_NANOS, new Recorder(scenario.windowNanos()), ~scenario.seed())
          .get(SERVER_WARMUP_NANOS / 1_000_000 + 30_000, TimeUnit.MILLISECONDS);
    }

    /** No control, closed loop with enough calls outstanding that the server never idles. */
    private double measureCapacity() throws Exception {
      try (ServerProcess server = ServerProcess.start(scenarioFile, overrides, "none", scenario.cores(), pin, out);
           SpillwayClient client = client(NoControl.INSTANCE, server.port())) {
        long run = CAPACITY_WARMUP_NANOS + CAPACITY_MEASURE_NANOS;
        Recorder recorder = new Recorder(100_000_000L);
        LoadGenerator.closedLoop(client, scenario, 64 * scenario.cores(), run, recorder, scenario.seed())
            .get(run / 1_000_000 + 30_000, TimeUnit.MILLISECONDS);
        return recorder.sum(CAPACITY_WARMUP_NANOS, run).completed / (CAPACITY_MEASURE_NANOS / 1e9);
      }
    }
  }

  /** A {@link HarnessServer} child process; closing it closes its stdin, which stops it. */
  static final class ServerProcess implements AutoCloseable {
    private final Process process;
    private final int port;

    private ServerProcess(Process process, int port) {
      this.process = process;
      this.port = port;
    }

    static ServerProcess start(Path scenarioFile, Map<String, String> overrides, String scheme, int carriers,
        boolean pin, Path out) throws IOException, InterruptedException {
      List<String> cmd = new ArrayList<>();
      if (pin) {
        cmd.addAll(List.of("/usr/bin/taskset", "-c", "0"));
      }
      String java = ProcessHandle.current().info().command().orElse("java");
      cmd.add(java);
      String transport = System.getProperty(Transport.PROPERTY);
      if (transport != null) {
        cmd.add("-D" + Transport.PROPERTY + "=" + transport);
      }
      cmd.addAll(List.of("-XX:+UseParallelGC", "-Xms1g", "-Xmx1g", "-XX:MetaspaceSize=256m",
          "-Xlog:gc:file=" + out.resolve("gc-server-" + scheme + ".log"),
          "--enable-native-access=ALL-UNNAMED", "--add-opens", "java.base/java.lang=ALL-UNNAMED",
          "-cp", System.getProperty("java.class.path"), HarnessServer.class.getName(),
          scenarioFile.toString(), scheme, Integer.toString(carriers)));
      overrides.forEach((k, v) -> cmd.add(k + "=" + v));
      Path log = out.resolve("server-" + scheme + ".log");
      Process p = new ProcessBuilder(cmd).redirectError(log.toFile()).start();
      BufferedReader stdout = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
      String line = stdout.readLine();
      if (line == null || !line.startsWith(HarnessServer.PORT_LINE)) {
        p.destroyForcibly().waitFor();
        throw new IOException("server for " + scheme + " did not start (first line: " + line + "); see " + log);
      }
      return new ServerProcess(p, Integer.parseInt(line.substring(HarnessServer.PORT_LINE.length()).strip()));
    }

    int port() {
      return port;
    }

    @Override
    public void close() throws IOException, InterruptedException {
      process.getOutputStream().close();
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor();
      }
    }
  }
}
