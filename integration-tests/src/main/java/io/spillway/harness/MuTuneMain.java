package io.spillway.harness;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.spillway.api.NoControl;
import io.spillway.api.OverloadScheme;
import io.spillway.credit.Breakwater;
import io.spillway.credit.BreakwaterConfig;
import io.spillway.sim.Recorder;
import io.spillway.sim.Scenario;
import io.spillway.sim.Tally;
import io.spillway.threading.ThreadingModel;
import io.spillway.threading.ThreadingProfile;
import io.spillway.transport.SpillwayClient;
import io.spillway.transport.Transport;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * µTune's experiments on real sockets (mutune-osdi18 §6–§7): a synchronous mid-tier ({@link
 * MidTierServer}, core 0) fanning out to leaves that share core 1 with the open-loop generator
 * (scenario {@code mutune-midtier}).
 *
 * <ul>
 *   <li>{@code train}: every static model at each load (§4 "Training phase"); writes the measured
 *       table and the profile the adaptation reads ({@code profile.csv}).
 *   <li>{@code sweep}: every static model and the adaptive server (from {@code --profile}) at each
 *       load: p50/p99/p999, throughput, the mid-tier's CPU.
 *   <li>{@code steps}: the same configurations under a load that steps low → high → low (§7.2.3).
 * </ul>
 *
 * <p>Usage: {@code MuTuneMain train|sweep|steps [--out DIR] [--profile FILE] [--models IP,IB,DP16,DB16]
 * [--loads 50,500,...] [--seconds S] [--reps R] [--breakwater SLO_US] [--slo-us US] [--transport
 * io_uring|epoll|nio]}: with {@code --breakwater}, the generator's client and the mid-tier run
 * Breakwater for that SLO (µTune under admission control); {@code --slo-us} sets the SLO goodput is
 * counted against (10 ms by default); {@code --transport} the mid-tier's and the generator's I/O
 * transport, the same for every model (by default {@link Transport#select()}'s).
 *
 * <p>{@code --reps R} (3 by default) measures each load, or each run of the load steps, R times in a
 * row, each with its own Poisson arrivals (the scenario's seed + the repetition), and every CSV row
 * carries its repetition ({@code rep}); the profile keeps every repetition.
 * µTune averages five measurements per point (mutune-osdi18 §5); here a model's p99 at one load
 * varies by 1.2–5× from run to run (host stalls of a small VM), and the adaptation reads that spread
 * ({@link ThreadingProfile}). The plots draw the median of the repetitions.
 *
 * <p>The adaptive server's row notes its model, its switches so far and its arrival-rate estimate
 * ({@code est=}, per second): the median of readings taken once a second during the measured
 * interval, while the load runs. Read after the load has stopped, the estimate has already fallen
 * with the silence ({@link io.spillway.threading.ArrivalRateEstimator}).
 */
public final class MuTuneMain {

  /** The mid-tier's shape, shared with the gRPC mid-tier: leaves, a leaf's delay, the mid-tier's own work. */
  public static final int LEAVES = 4;
  public static final long LEAF_DELAY_NANOS = 100_000;
  public static final int LOCAL_WORK_US = 10;

  private final Map<String, String> options;
  private final Path out;
  private final Scenario scenario;
  private final boolean pin;
  private final Transport transport;

  private MuTuneMain(Map<String, String> options) throws IOException {
    this.options = options;
    this.transport = Transport.select(options.get("transport"));
    this.out = Path.of(options.getOrDefault("out", "results/mutune"));
    Files.createDirectories(out);
    this.scenario = Scenario.load(Path.of("scenarios/mutune-midtier.conf"),
        options.containsKey("slo-us") ? Map.of("slo_us", options.get("slo-us")) : Map.of());
    // This JVM may already be pinned to core 1 (the launcher does), and then sees one processor.
    this.pin = canPin();
  }

  /**
   * Whether a child server can be pinned to core 0 with taskset: two cores, or this JVM already pinned
   * to core 1 by the launcher (it then sees one processor).
   */
  public static boolean canPin() {
    boolean twoCores = System.getenv("SPILLWAY_PINNED") != null || Runtime.getRuntime().availableProcessors() >= 2;
    return twoCores && Files.isExecutable(Path.of("/usr/bin/taskset"));
  }

  /** {@code process}'s CPU time so far, user and system, in clock ticks (1/100 s), from /proc. */
  public static long cpuTicks(Process process) throws IOException {
    String stat = Files.readString(Path.of("/proc/" + process.pid() + "/stat"));
    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
    return Long.parseLong(f[11]) + Long.parseLong(f[12]);
  }

  public static void main(String[] args) throws Exception {
    if (args.length == 2 && args[0].equals("plot")) {
      plotDirectory(Path.of(args[1]));
      System.exit(0);
    }
    if (args.length >= 1 && args[0].startsWith("grpc-")) {
      io.spillway.harness.grpcdemo.GrpcMuTuneMain.main(args); // the same mid-tier over gRPC
      return;
    }
    if (args.length < 1 || !List.of("train", "sweep", "steps").contains(args[0])) {
      System.err.println("usage: mutune train|sweep|steps [--out DIR] [--profile FILE] [--models IP,IB,DP16,DB16]"
          + " [--loads a,b,..] [--seconds S] [--reps R] [--breakwater SLO_US] [--slo-us US]"
          + " [--transport io_uring|epoll|nio]");
      System.exit(2);
    }
    Map<String, String> options = new LinkedHashMap<>();
    for (int i = 1; i + 1 < args.length; i += 2) {
      if (!args[i].startsWith("--")) {
        throw new IllegalArgumentException("expected --option value, got '" + args[i] + "'");
      }
      options.put(args[i].substring(2), args[i + 1]);
    }
    MuTuneMain m = new MuTuneMain(options);
    switch (args[0]) {
      case "train" -> m.train();
      case "sweep" -> m.sweep();
      default -> m.steps();
    }
    System.exit(0);
  }

  /** Redraws {@code DIR/train-p99-by-load.png} and {@code DIR/sweep-p99-by-load.png} from their CSVs. */
  public static void plotDirectory(Path dir) throws IOException {
    plotDirectory(dir, "mid-tier with 4 leaves on sockets");
  }

  /** As {@link #plotDirectory(Path)}, titled with {@code subject}. */
  public static void plotDirectory(Path dir, String subject) throws IOException {
    for (String what : List.of("train", "sweep")) {
      Path csv = dir.resolve(what + ".csv");
      if (!Files.exists(csv)) {
        continue;
      }
      List<String> lines = Files.readAllLines(csv);
      List<String> header = List.of(lines.get(0).split(","));
      int config = header.indexOf("config");
      int offered = header.indexOf("offered_rps");
      int p99 = header.indexOf("p99_us");
      List<io.spillway.sim.MuTunePlot.Point> points = new ArrayList<>();
      for (String line : lines.subList(1, lines.size())) {
        String[] f = line.split(",");
        points.add(new io.spillway.sim.MuTunePlot.Point(f[config], Double.parseDouble(f[offered]),
            Double.parseDouble(f[p99])));
      }
      io.spillway.sim.MuTunePlot.plot(medians(points), subject + ": median p99 by load (" + what + ")",
          dir.resolve(what + "-p99-by-load.png"));
    }
  }

  /** One point per configuration and load: the median p99 of its repetitions. */
  static List<io.spillway.sim.MuTunePlot.Point> medians(List<io.spillway.sim.MuTunePlot.Point> points) {
    Map<String, Map<Double, List<Double>>> byConfig = new LinkedHashMap<>();
    for (io.spillway.sim.MuTunePlot.Point p : points) {
      byConfig.computeIfAbsent(p.config(), c -> new java.util.TreeMap<>())
          .computeIfAbsent(p.rps(), l -> new ArrayList<>()).add(p.p99us());
    }
    List<io.spillway.sim.MuTunePlot.Point> out = new ArrayList<>();
    byConfig.forEach((config, loads) -> loads.forEach((rps, p99s) -> {
      double[] sorted = p99s.stream().mapToDouble(Double::doubleValue).sorted().toArray();
      int n = sorted.length;
      out.add(new io.spillway.sim.MuTunePlot.Point(config, rps,
          n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2));
    }));
    return out;
  }

  private int reps() {
    int reps = Integer.parseInt(options.getOrDefault("reps", "3"));
    if (reps < 1) {
      throw new IllegalArgumentException("--reps must be at least 1, got " + reps);
    }
    return reps;
  }

  private List<String> staticModels() {
    List<String> models = new ArrayList<>();
    for (String m : options.getOrDefault("models", "IP,IB,DP16,DB16").split(",")) {
      models.add(ThreadingModel.parse(m).name());
    }
    return models;
  }

  private List<Double> loads(String fallback) {
    List<Double> loads = new ArrayList<>();
    for (String l : options.getOrDefault("loads", fallback).split(",")) {
      loads.add(Double.parseDouble(l.strip()));
    }
    return loads;
  }

  private long measureNanos() {
    return (long) (Double.parseDouble(options.getOrDefault("seconds", "5")) * 1e9);
  }

  /** One row: a configuration at a load. */
  record Row(String config, double offered, int rep, double achieved, double goodput, double p50us,
      double p90us, double p99us, double p999us, double cpu, String note) {
    String csv() {
      return String.format(Locale.ROOT, "%s,%.0f,%d,%.0f,%.0f,%.1f,%.1f,%.1f,%.1f,%.3f,%s", config, offered, rep,
          achieved, goodput, p50us, p90us, p99us, p999us, cpu, note);
    }
  }

  private void train() throws Exception {
    List<Double> loads = loads("50,500,1500,3000,4500,6000,8000,10000,12000");
    List<Row> rows = new ArrayList<>();
    ThreadingProfile.Builder profile = ThreadingProfile.builder();
    for (String model : staticModels()) {
      for (Row r : runLevels(model, loads)) {
        rows.add(r);
        profile.add(ThreadingModel.parse(model), r.offered(), Math.min(r.p99us(), 1e6) * 1e3);
      }
    }
    profile.build().write(out.resolve("profile.csv"));
    write(rows, "train");
    System.err.println("mutune: profile written to " + out.resolve("profile.csv"));
  }

  private void sweep() throws Exception {
    List<Double> loads = loads("100,1000,2000,3500,5000,7000,9000,11000");
    List<Row> rows = new ArrayList<>();
    List<String> configs = new ArrayList<>(staticModels());
    configs.add("adaptive:" + profilePath());
    for (String config : configs) {
      rows.addAll(runLevels(config, loads));
    }
    write(rows, "sweep");
  }

  private void steps() throws Exception {
    long phase = measureNanos();
    double low = Double.parseDouble(options.getOrDefault("low", "200"));
    double high = Double.parseDouble(options.getOrDefault("high", "6000"));
    List<Scenario.DemandStep> schedule = List.of(new Scenario.DemandStep(low, 0),
        new Scenario.DemandStep(high, phase), new Scenario.DemandStep(low, 2 * phase),
        new Scenario.DemandStep(high, 3 * phase), new Scenario.DemandStep(low, 4 * phase));
    List<Row> rows = new ArrayList<>();
    List<String> configs = new ArrayList<>(staticModels());
    configs.add("adaptive:" + profilePath());
    int reps = reps();
    for (String config : configs) {
      try (Run run = new Run(config)) {
        run.warm();
        for (int rep = 0; rep < reps; rep++) {
          long cpu0 = run.cpuTicks();
          Recorder rec = run.load(schedule, 5 * phase, rep);
          double cpu = (run.cpuTicks() - cpu0) / 100.0 / (5 * phase / 1e9);
          Tally all = rec.sum(0, 5 * phase);
          Tally lows = rec.sum(0, phase);
          lows.add(rec.sum(2 * phase, 3 * phase));
          lows.add(rec.sum(4 * phase, 5 * phase));
          Tally highs = rec.sum(phase, 2 * phase);
          highs.add(rec.sum(3 * phase, 4 * phase));
          rows.add(row(config, -1, rep, all, 5 * phase, cpu, "whole run; " + run.model()));
          rows.add(row(config, low, rep, lows, 3 * phase, cpu, "low phases"));
          rows.add(row(config, high, rep, highs, 2 * phase, cpu, "high phases"));
          System.err.println(rows.get(rows.size() - 3).csv());
        }
      }
    }
    write(rows, "steps");
  }

  private String profilePath() {
    String p = options.get("profile");
    if (p == null) {
      throw new IllegalArgumentException("--profile FILE is needed (./spillway mutune train writes one)");
    }
    return Path.of(p).toAbsolutePath().toString();
  }

  /**
   * Each load {@code --reps} times in a row on one process, after one warm-up. A run whose median
   * passes 200 ms ends the configuration: the model is saturated, its queue growing for the whole
   * run, and higher loads (and the rest of its repetitions) only queue more. The median, not the
   * p99: a stall of this VM's host (up to a few hundred ms) lifts one run's p99 past 200 ms while
   * the model keeps up (DB16 at 4,500 rps: p99 300 ms, median 265 µs, 4,364 rps achieved), and a
   * model cut off there has no profile above that load for the adaptation to choose it by.
   */
  private List<Row> runLevels(String config, List<Double> loads) throws Exception {
    List<Row> rows = new ArrayList<>();
    int reps = reps();
    try (Run run = new Run(config)) {
      run.warm();
      levels:
      for (double load : loads) {
        for (int rep = 0; rep < reps; rep++) {
          long measure = measureNanos();
          long settle = 1_000_000_000L;
          long cpu0 = run.cpuTicks();
          java.util.concurrent.CompletableFuture<Recorder> running =
              run.start(List.of(new Scenario.DemandStep(load, 0)), settle + measure, rep);
          String estimate = config.startsWith("adaptive:") ? run.estimateWhile(running, settle, measure) : "";
          Recorder rec = running.get((settle + measure) / 1_000_000_000L + 60, TimeUnit.SECONDS);
          double cpu = (run.cpuTicks() - cpu0) / 100.0 / ((settle + measure) / 1e9);
          Row r = row(config, load, rep, rec.sum(settle, settle + measure), measure, cpu, run.model() + estimate);
          rows.add(r);
          System.err.println(r.csv());
          if (r.p50us() > 200_000) {
            break levels; // saturated: higher loads only queue more
          }
        }
      }
    }
    return rows;
  }

  private static Row row(String config, double offered, int rep, Tally t, long nanos, double cpu, String note) {
    double p = t.latency.getTotalCount() == 0 ? Double.NaN : 0;
    return new Row(config.startsWith("adaptive:") ? "mutune" : config, offered, rep, t.completed / (nanos / 1e9),
        t.good / (nanos / 1e9),
        p + t.latency.getValueAtPercentile(50) / 1e3, p + t.latency.getValueAtPercentile(90) / 1e3,
        p + t.latency.getValueAtPercentile(99) / 1e3,
        p + t.latency.getValueAtPercentile(99.9) / 1e3, cpu, note);
  }

  private void write(List<Row> rows, String what) throws IOException {
    StringBuilder csv = new StringBuilder(
        "config,offered_rps,rep,achieved_rps,goodput_rps,p50_us,p90_us,p99_us,p999_us,midtier_cpu,note\n");
    rows.forEach(r -> csv.append(r.csv()).append('\n'));
    Files.writeString(out.resolve(what + ".csv"), csv);
    System.out.print(csv);
    if (!what.equals("steps")) {
      io.spillway.sim.MuTunePlot.plot(medians(rows.stream().map(r -> new io.spillway.sim.MuTunePlot.Point(
          r.config(), r.offered(), r.p99us())).toList()), "mid-tier with 4 leaves on sockets: median p99 by load ("
          + what + ")", out.resolve(what + "-p99-by-load.png"));
    }
  }

  /** A mid-tier process, the leaves and the generator's client, for one configuration. */
  private final class Run implements AutoCloseable {
    private final Process process;
    private final BufferedReader stdout;
    private final SpillwayClient client;
    private final Channel leaves;
    private final String config;

    Run(String config) throws Exception {
      this.config = config;
      String bw = options.get("breakwater");
      OverloadScheme scheme = bw == null ? NoControl.INSTANCE
          : Breakwater.of(BreakwaterConfig.forSlo(Long.parseLong(bw) * 1_000, 50_000));
      List<String> cmd = new ArrayList<>();
      if (pin) {
        cmd.addAll(List.of("/usr/bin/taskset", "-c", "0"));
      }
      cmd.add(ProcessHandle.current().info().command().orElse("java"));
      cmd.addAll(List.of("-XX:+UseParallelGC", "-Xms1g", "-Xmx1g", "-XX:+AlwaysPreTouch",
          "-XX:MetaspaceSize=256m", "--enable-native-access=ALL-UNNAMED",
          "-D" + Transport.PROPERTY + "=" + transport.id(),
          "-cp", System.getProperty("java.class.path"), MidTierServer.class.getName()));
      // The leaves listen on the generator client's loop, which needs the mid-tier's port, and the
      // mid-tier needs theirs: so the leaves take a free port found first.
      int leafPort;
      try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
        leafPort = s.getLocalPort();
      }
      cmd.addAll(List.of(Integer.toString(leafPort), Integer.toString(LEAVES), Integer.toString(LOCAL_WORK_US),
          config));
      if (bw != null) {
        cmd.add("breakwater:" + bw);
      }
      // The generator's client connects to the mid-tier; start the mid-tier, then the client and
      // leaves; the mid-tier's threads connect to the leaves on their first request.
      Path log = out.resolve("midtier-" + config.replaceAll("[^A-Za-z0-9]", "_") + ".log");
      process = new ProcessBuilder(cmd).redirectError(log.toFile()).start();
      stdout = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
      String line = stdout.readLine();
      if (line == null || !line.startsWith(HarnessServer.PORT_LINE)) {
        process.destroyForcibly().waitFor();
        throw new IOException("mid-tier " + config + " did not start (" + line + "); see " + log);
      }
      int port = Integer.parseInt(line.substring(HarnessServer.PORT_LINE.length()).strip());
      client = SpillwayClient.builder().scheme(scheme).transport(transport).port(port).connections(1)
          .sessions(scenario.clients()).sloNanos(scenario.sloNanos()).build().start();
      leaves = new ServerBootstrap().group(client.eventLoop(0)).channel(client.transport().serverChannelClass())
          .childOption(ChannelOption.TCP_NODELAY, true)
          .childHandler(new ChannelInitializer<>() {
            @Override
            protected void initChannel(Channel ch) {
              ch.pipeline().addLast(new LeafHandler(LEAF_DELAY_NANOS));
            }
          }).bind(new InetSocketAddress("127.0.0.1", leafPort)).sync().channel();
    }

    /** JIT warm-up: long enough that the compilers are quiet before anything is measured. */
    void warm() throws Exception {
      load(List.of(new Scenario.DemandStep(2_000, 0)), 6_000_000_000L);
    }

    Recorder load(List<Scenario.DemandStep> steps, long nanos) throws Exception {
      return load(steps, nanos, 0);
    }

    Recorder load(List<Scenario.DemandStep> steps, long nanos, int rep) throws Exception {
      return start(steps, nanos, rep).get(nanos / 1_000_000_000L + 60, TimeUnit.SECONDS);
    }

    /** Starts the open-loop load; repetition {@code rep} draws its arrivals from the scenario's seed + rep. */
    java.util.concurrent.CompletableFuture<Recorder> start(List<Scenario.DemandStep> steps, long nanos, int rep) {
      return LoadGenerator.openLoop(client, scenario, steps, 1.0, nanos, new Recorder(scenario.windowNanos()),
          scenario.seed() + rep);
    }

    /**
     * The mid-tier's arrival-rate estimate while {@code running} offers its load: read once a second
     * from {@code settle} on, for {@code measure}; {@code "/est=N"} with N the median reading (per
     * second) and the readings' range, or {@code ""} if the run ended first.
     */
    String estimateWhile(java.util.concurrent.CompletableFuture<Recorder> running, long settle, long measure)
        throws Exception {
      long start = System.nanoTime();
      List<Long> readings = new ArrayList<>();
      for (long at = settle; at < settle + measure; at += 1_000_000_000L) {
        long wait = start + at - System.nanoTime();
        if (wait > 0) {
          Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
        }
        if (running.isDone()) {
          break;
        }
        String[] f = model().split("/");
        if (f.length == 3) { // model=M/switches/estimate
          readings.add(Long.parseLong(f[2]));
        }
      }
      if (readings.isEmpty()) {
        return "";
      }
      java.util.Collections.sort(readings);
      return "/est=" + readings.get(readings.size() / 2) + "[" + readings.get(0) + "-"
          + readings.get(readings.size() - 1) + "]";
    }

    /** The mid-tier's CPU time so far, in clock ticks (1/100 s). */
    long cpuTicks() throws IOException {
      return MuTuneMain.cpuTicks(process);
    }

    String model() throws IOException {
      process.getOutputStream().write("model\n".getBytes(StandardCharsets.UTF_8));
      process.getOutputStream().flush();
      String line = stdout.readLine();
      return line == null ? "?" : line.replace("SPILLWAY-MODEL ", "model=").replace(' ', '/');
    }

    @Override
    public void close() throws Exception {
      leaves.close().sync(); // on the client's loop: before the client shuts it down
      client.close();
      process.getOutputStream().close();
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor();
      }
      System.err.println("mutune: " + config + " done");
    }
  }

}
