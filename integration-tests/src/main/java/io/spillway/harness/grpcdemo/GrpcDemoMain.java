package io.spillway.harness.grpcdemo;

import io.spillway.harness.SteadyCapacity;
import io.spillway.report.ReportWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.HdrHistogram.Histogram;

/**
 * {@code ./spillway grpc-demo [--out DIR] [--set key=value ...]}: a gRPC service written as the
 * README's quick start says, flooded from the other core, with and without Spillway, by plain
 * clients and by Spillway-aware ones (docs/results/grpc.md).
 *
 * <ol>
 *   <li>Capacity: the protected server's code path with no control ({@code nocontrol}: every
 *       call admitted) under a closed loop (8 calls outstanding) after a warm-up, the highest
 *       throughput the same server reaches (docs/design.md, "Measures"); the unprotected
 *       server's own is printed beside it.
 *   <li>For each mode, a fresh server process on core 0: warmed until both JVMs' compilers are
 *       quiet ({@code warmUntilSteady}, at most {@code steady_max_s} one-second slices), then each
 *       demand level (× capacity) open-loop for {@code warm_s + measure_s}, the last {@code
 *       measure_s} counted. Modes: {@code none} (unprotected, plain clients), {@code spillway-plain}
 *       (protected, clients without Spillway headers), {@code spillway-aware} (protected, one
 *       Spillway session per channel), {@code spillway-perbackend} (as aware, the channels built
 *       for a {@code dns:///} target with {@code PerBackendSessions}, as the Spring Boot starter
 *       builds them; not in the default modes), and, where the {@code ghz} binary is found ({@code GHZ},
 *       {@code ~/go/bin/ghz} or the PATH), {@code ghz-none} and {@code ghz-spillway}.
 *   <li>Mode {@code replicas}: three servers on core 0, behind one balanced channel per client
 *       ({@code runReplicas}). Each is warmed and measured alone first, then the three together
 *       (at most {@code replica_steady_max_s} slices), because three JVMs that start together on
 *       one core compile through any warm-up; rows {@code replicas-none} (unprotected, at 0.5 ×
 *       and the replica levels) and {@code replicas}, normalized by the three's summed capacity.
 *   <li>results.json (the report's schema, plus the counts), report.md and plots in {@code out}.
 *       Where a row's goodput exceeds the capacity reading by more than the reading's spread, the
 *       table says so and, if capacity was measured, reads it again on a fresh server after the
 *       run ({@code overCapacity}); the rows are not made again.
 * </ol>
 *
 * <p>With {@code repeats} N above 1, the modes run N times in turn (mode A, mode B, …, then A
 * again), each run with fresh server processes, since one run on a shared VM is one sample: the
 * table lists every run and then, per mode and level, the median run's goodput with the runs'
 * range; results.json holds the median run of each (mode, level), so the plots show real runs,
 * and {@code runs.jsonl} every run's record with its number.
 *
 * <p>Keys: {@code levels} (1, 2, 3), {@code service_us} (200), {@code slo_ms} (5), {@code block_ms} (0:
 * each handler, after its CPU time, blocks this long with no lock held, a downstream call's wait), {@code warm_s}
 * (1), {@code measure_s} (4), {@code channels} (8), {@code modes} (all), {@code capacity} (measured
 * if absent), {@code seed} (1), {@code steady_max_s} (40), {@code replica_service_us} (200, 200,
 * 400), {@code replica_levels} (2), {@code replica_steady_max_s} (120), {@code repeats} (1), {@code add_opens}
 * (false: the server
 * JVM as a team starts it; true adds {@code --add-opens java.base/java.lang=ALL-UNNAMED}, so that
 * the carriers of its virtual threads are measured, docs/design.md), {@code capacity_max_s} (30:
 * the most one-second slices a capacity reading takes), {@code cpu_quota} (none: a number of cores
 * starts every server of the non-replica modes in a control group with that CPU limit per 100 ms,
 * as a container's limit, {@link CpuQuotaGroup}; needs root).
 */
public final class GrpcDemoMain {

  private GrpcDemoMain() { }

  public static void main(String[] args) throws Exception {
    Path out = Path.of("results/grpc-demo");
    Map<String, String> keys = new LinkedHashMap<>();
    keys.put("levels", "1, 2, 3");
    keys.put("service_us", "200");
    keys.put("slo_ms", "5");
    keys.put("block_ms", "0");
    keys.put("add_opens", "false");
    keys.put("warm_s", "1");
    keys.put("measure_s", "4");
    keys.put("channels", "8");
    keys.put("modes", "none, spillway-plain, spillway-aware, ghz-none, ghz-spillway, replicas");
    keys.put("replica_service_us", "200, 200, 400");
    keys.put("replica_levels", "2");
    keys.put("replica_steady_max_s", "120");
    keys.put("seed", "1");
    keys.put("steady_max_s", "40");
    keys.put("repeats", "1");
    keys.put("cpu_quota", "none");
    keys.put("capacity_max_s", Integer.toString(Run.CAPACITY_MAX_SLICES));
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--out" -> out = Path.of(args[++i]);
        case "--set" -> {
          String kv = args[++i];
          int eq = kv.indexOf('=');
          if (eq <= 0) {
            throw new IllegalArgumentException("--set takes key=value, not " + kv);
          }
          String key = kv.substring(0, eq).trim();
          if (!keys.containsKey(key) && !key.equals("capacity")) {
            throw new IllegalArgumentException("unknown key " + key + "; known: " + keys.keySet()
                + ", capacity");
          }
          keys.put(key, kv.substring(eq + 1).trim());
        }
        case "-h", "--help" -> {
          System.out.println("./spillway grpc-demo [--out DIR] [--set key=value ...]; keys and "
              + "defaults: " + keys + ", capacity (measured if absent)");
          return;
        }
        default -> throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    Files.createDirectories(out);
    new GrpcDemoMain.Run(out, keys).run();
  }

  /**
   * One row of results.json. {@code expired_rate} is the report's "expired" column: calls that
   * ended in the client without reaching the server (expired in a session's queue, or refused
   * by its gate) ÷ calls issued, so that what aware clients shed in their own queues shows
   * beside what the server dropped. {@code reject_delay_us} is the mean reject delay and {@code
   * reject_delay_p99_us} its 99th percentile, as the harness's records have them. A ratio over
   * nothing ({@code dropRate} NaN when no call reached the server, {@code expired_rate} when none
   * was issued) is written as null, which the report shows as a dash.
   */
  static String record(String mode, double level, double capacity, double offered,
      double throughput, double goodput, double p50, double p99, long sloMicros, double dropRate,
      double rejectMean, double rejectP99, long clientRejects, long errors, long issued,
      int warmSlices, String reasons) {
    double expiredRate = io.spillway.sim.Tally.ratio(clientRejects, issued);
    return String.format(Locale.ROOT, "{\"scheme\": \"%s\", \"demand\": %.2f, "
        + "\"capacity_rps\": %.0f, \"offered_rps\": %.0f, \"throughput_rps\": %.0f, "
        + "\"goodput_rps\": %.0f, \"p50_us\": %.1f, \"p99_us\": %.1f, \"slo_us\": %d, "
        + "\"drop_rate\": %s, \"reject_delay_us\": %.1f, \"reject_delay_p99_us\": %.1f, "
        + "\"expired_rate\": %s, "
        + "\"client_rejects\": %d, \"errors\": %d, \"issued\": %d, \"warm_slices\": %d, "
        + "\"rejects_by_reason\": \"%s\"}", mode, level, capacity, offered, throughput,
        goodput, p50, p99, sloMicros, share(dropRate), rejectMean, rejectP99, share(expiredRate),
        clientRejects, errors,
        issued, warmSlices, reasons);
  }

  /** {@code v} with four decimals, or JSON's null for NaN (a ratio over nothing). */
  static String share(double v) {
    return Double.isNaN(v) ? "null" : String.format(Locale.ROOT, "%.4f", v);
  }

  /** One run's row: its place, its goodput for the median, and its results.json record. */
  record RunRow(String mode, double level, int run, double goodput, double p99Micros,
      String json) { }

  /**
   * The median run of each (mode, level) by goodput, in the order the pairs first appear; with an
   * even count the lower of the two middle runs.
   */
  static List<RunRow> medians(List<RunRow> rows) {
    return byCell(rows).stream().map(cell -> cell.get((cell.size() - 1) / 2)).toList();
  }

  /** Per (mode, level): the median run's goodput ÷ capacity, the runs' range, and their p99s. */
  static List<String> spread(List<RunRow> rows, double capacity) {
    List<String> lines = new ArrayList<>();
    for (List<RunRow> cell : byCell(rows)) {
      RunRow m = cell.get((cell.size() - 1) / 2);
      double p99lo = cell.stream().mapToDouble(RunRow::p99Micros).min().orElseThrow();
      double p99hi = cell.stream().mapToDouble(RunRow::p99Micros).max().orElseThrow();
      lines.add(String.format(Locale.ROOT, "%-16s %5.1fx  median %.3f (run %d)  range %.3f–%.3f"
          + "  p99 %.0f–%.0f us  %d runs", m.mode(), m.level(), m.goodput() / capacity, m.run(),
          cell.get(0).goodput() / capacity, cell.get(cell.size() - 1).goodput() / capacity, p99lo,
          p99hi, cell.size()));
    }
    return lines;
  }

  /**
   * The rows whose goodput exceeds the capacity reading by more than the reading's spread
   * ({@link SteadyCapacity.Reading#exceededBy}), each as {@code "mode 2.0x run 1 (+8.6 %)"}:
   * capacity is the most the server can do, so such a row shows the reading was low (the socket
   * harness's rule, docs/results/harness.md). Rows whose mode starts with {@code
   * replicas} are normalized by their own capacity and are not judged here.
   */
  static List<String> overCapacity(List<RunRow> rows, SteadyCapacity.Reading reading) {
    List<String> over = new ArrayList<>();
    for (RunRow r : rows) {
      double by = reading.exceededBy(r.goodput());
      if (!r.mode().startsWith("replicas") && by > 0) {
        over.add(String.format(Locale.ROOT, "%s %.1fx run %d (+%.1f %%)", r.mode(), r.level(),
            r.run(), 100 * (r.goodput() / reading.rps() - 1)));
      }
    }
    return over;
  }

  /** The runs of each (mode, level), in the order the pairs first appear, each by goodput. */
  private static List<List<RunRow>> byCell(List<RunRow> rows) {
    Map<String, List<RunRow>> cells = new LinkedHashMap<>();
    for (RunRow r : rows) {
      cells.computeIfAbsent(r.mode() + "@" + r.level(), k -> new ArrayList<>()).add(r);
    }
    List<List<RunRow>> sorted = new ArrayList<>();
    for (List<RunRow> cell : cells.values()) {
      List<RunRow> c = new ArrayList<>(cell);
      c.sort(java.util.Comparator.comparingDouble(RunRow::goodput));
      sorted.add(c);
    }
    return sorted;
  }

  /**
   * The machine's cores, as {@code nproc --all} counts them: this JVM may be pinned to one, so
   * {@link Runtime#availableProcessors} would say 1 where the server could have a core of its own.
   */
  static int cores() {
    try {
      Process p = new ProcessBuilder("nproc", "--all").start();
      String s = new String(p.getInputStream().readAllBytes(), StandardCharsets.US_ASCII).trim();
      p.waitFor();
      return Integer.parseInt(s);
    } catch (IOException | InterruptedException | NumberFormatException e) {
      return 1;
    }
  }

  private static final class Run {
    final Path out;
    final Map<String, String> keys;
    final long serviceMicros;
    final long sloMillis;
    /** How long each handler blocks off-core after its CPU time (a downstream call). */
    final double blockMillis;
    final long sloNanos;
    final long warmNanos;
    final long measureNanos;
    final int channels;
    final boolean addOpens;
    final long seed;
    final int serverCore;
    final int repeats;
    /** The cgroup.procs files of the CPU-quota group the servers start in; empty for none. */
    final List<Path> quotaGroup;
    /** Slices the capacity rule may take on the single server ({@code capacity_max_s}). */
    final int capacityMaxSlices;
    /** The run under way, from 1. */
    int run = 1;
    final List<RunRow> rows = new ArrayList<>();
    final List<Double> levels = new ArrayList<>();
    final List<String> modes = new ArrayList<>();
    final List<String> records = new ArrayList<>();
    final List<String> table = new ArrayList<>();
    double capacity;
    double noneCapacity = Double.NaN;
    /** Slices the current mode's server was warmed for ({@link #warmUntilSteady}); 0 if none. */
    int warmSlices;

    Run(Path out, Map<String, String> keys) {
      this.out = out;
      this.keys = keys;
      serviceMicros = Long.parseLong(keys.get("service_us"));
      sloMillis = Long.parseLong(keys.get("slo_ms"));
      blockMillis = Double.parseDouble(keys.get("block_ms"));
      if (!(blockMillis >= 0) || blockMillis > 60_000) {
        throw new IllegalArgumentException("block_ms: between 0 and 60000, got " + keys.get("block_ms"));
      }
      String opens = keys.get("add_opens");
      if (!opens.equals("true") && !opens.equals("false")) {
        throw new IllegalArgumentException("add_opens: true or false, got " + opens);
      }
      addOpens = Boolean.parseBoolean(opens);
      sloNanos = sloMillis * 1_000_000;
      warmNanos = (long) (Double.parseDouble(keys.get("warm_s")) * 1e9);
      measureNanos = (long) (Double.parseDouble(keys.get("measure_s")) * 1e9);
      channels = Integer.parseInt(keys.get("channels"));
      seed = Long.parseLong(keys.get("seed"));
      repeats = Integer.parseInt(keys.get("repeats"));
      if (repeats < 1) {
        throw new IllegalArgumentException("repeats: at least 1, got " + repeats);
      }
      capacityMaxSlices = Integer.parseInt(keys.get("capacity_max_s"));
      String quota = keys.get("cpu_quota");
      try {
        quotaGroup = quota.equals("none") ? List.of()
            : CpuQuotaGroup.create(Double.parseDouble(quota));
      } catch (IOException e) {
        throw new IllegalStateException(e.getMessage(), e);
      }
      // The launcher pins this JVM to core 1; the server takes core 0 where there are two.
      serverCore = cores() >= 2 && Files.isExecutable(Path.of("/usr/bin/taskset")) ? 0 : -1;
      for (String l : keys.get("levels").split(",")) {
        levels.add(Double.parseDouble(l.trim()));
      }
      for (String m : keys.get("modes").split(",")) {
        modes.add(m.trim());
      }
    }


    void run() throws Exception {
      String ghz = findGhz();
      System.out.printf(Locale.ROOT, "grpc-demo: service %d us under a BudgetedLock, SLO %d ms, "
          + "server on core %s, %d channels, ghz %s%n", serviceMicros, sloMillis,
          serverCore < 0 ? "any" : Integer.toString(serverCore), channels,
          ghz == null ? "not found" : ghz);
      SteadyCapacity.Reading reading;
      String capacityServer = System.getProperty("spillway.capacityServer", "nocontrol");
      if (keys.containsKey("capacity")) {
        capacity = Double.parseDouble(keys.get("capacity"));
        reading = new SteadyCapacity.Reading(capacity, 0, 0, true);
      } else {
        reading = closedLoopCapacity(capacityServer);
        capacity = reading.rps();
        noneCapacity = closedLoopCapacity("none").rps();
      }
      System.out.printf(Locale.ROOT, "capacity: %.0f rps (the same server with no control, %d "
          + "outstanding); the unprotected server's: %.0f rps%n", capacity, capacityOutstanding(),
          noneCapacity);
      table.add(String.format(Locale.ROOT, "%-16s %6s %9s %9s %7s %9s %9s %7s %8s %7s",
          "mode", "demand", "offered", "goodput", "/cap", "p50_us", "p99_us", "drop%",
          "client_rj", "errors") + "  server rejects by reason" + (repeats > 1 ? "  run" : ""));
      for (run = 1; run <= repeats; run++) {
        for (String mode : modes) {
          if (mode.equals("replicas")) {
            runReplicas();
          } else if (mode.startsWith("ghz-")) {
            if (ghz == null) {
              System.out.println(mode + ": skipped, no ghz binary");
              continue;
            }
            runGhz(ghz, mode);
          } else {
            runJava(mode);
          }
        }
      }
      if (repeats > 1) {
        table.add("");
        table.add("median run of " + repeats + " by goodput ÷ capacity (results.json), the runs'"
            + " range:");
        table.addAll(spread(rows, capacity));
      }
      List<String> over = overCapacity(rows, reading);
      if (!over.isEmpty()) {
        table.add("");
        table.add(String.format(Locale.ROOT, "capacity %s low: goodput above %.0f rps (spread "
            + "%.1f %%) beyond its spread in %s", keys.containsKey("capacity") ? "given" : "read",
            reading.rps(), 100 * reading.spread(), String.join(", ", over)));
        if (!keys.containsKey("capacity")) {
          SteadyCapacity.Reading after = closedLoopCapacity(capacityServer);
          table.add(String.format(Locale.ROOT, "capacity checked after the run: %.0f rps (spread "
              + "%.1f %%)%s", after.rps(), 100 * after.spread(), after.above(reading)
              ? ", above the reading the rows are divided by" : ", not above it beyond both spreads"));
        }
      }
      table.forEach(System.out::println);
      writeResults();
    }

    /**
     * Calls kept outstanding to read capacity: 8, plus, where handlers block, 5 a millisecond of the
     * block, so that the calls waiting on their downstream (5,000 a second's worth) leave 8 for the core.
     */
    int capacityOutstanding() {
      return 8 + (int) Math.ceil(5 * blockMillis);
    }

    /** The most one-second slices a capacity reading runs, as the socket harness's. */
    static final int CAPACITY_MAX_SLICES = 30;

    /**
     * A fresh server's closed-loop throughput with 8 calls outstanding, read as the socket harness
     * reads capacity ({@link SteadyCapacity}): one-second slices until the last three agree within
     * 5 % and neither JVM's compiler ran for more than 15 % of any of them (at most {@value
     * #CAPACITY_MAX_SLICES}); the mean of those three.
     */
    SteadyCapacity.Reading closedLoopCapacity(String serverMode) throws Exception {
      try (DemoServerProcess server = startServer(serverMode, "capacity-" + serverMode);
          DemoLoad load = new DemoLoad(server.port(), channels, false, sloNanos)) {
        SteadyCapacity.Measured m = SteadyCapacity.measure(
            index -> Math.round(load.closedLoop(capacityOutstanding(), 0, SteadyCapacity.SLICE_NANOS)
                * SteadyCapacity.SLICE_NANOS / 1e9),
            () -> jitMillis(server), capacityMaxSlices);
        SteadyCapacity.Reading r = m.reading();
        System.out.println(m.describe("capacity of " + serverMode + ":", "", capacityMaxSlices));
        return r;
      }
    }

    /**
     * Warms a fresh server until both JVMs' compilers are quiet, by the rule capacity is read with
     * ({@link SteadyCapacity#steady}): a fixed warm-up is not enough here, because a fresh server
     * compiles for 10–30 s on its one core and a level measured while it does measures the
     * compiler, not the admission. First {@value #WARM_FIRST_SLICES} open-loop slices at 0.7 ×
     * capacity, which compile the serving path; then one-second slices at the highest demand
     * level for a protected server (its refusal and expiry paths are hot only in overload) or at
     * 0.7 × for an unprotected one (which would only queue), until the last three agree within
     * 5 % in calls answered and neither JIT compiled for more than 15 % of any of them, at most
     * {@code steady_max_s} slices. Prints the trace: calls answered / ms compiled per slice.
     */
    int warmUntilSteady(DemoServerProcess server, DemoLoad load, String mode, boolean overload)
        throws Exception {
      double level = overload ? levels.stream().mapToDouble(Double::doubleValue).max().orElse(1)
          : 0.7;
      return warmUntilSteady(() -> jitMillis(server), load, mode, capacity, level);
    }

    /**
     * {@link #warmUntilSteady(DemoServerProcess, DemoLoad, String, boolean)} for servers whose
     * compilers {@code jit} sums, at {@code level} × {@code capacityRps} after the first slices.
     */
    int warmUntilSteady(SteadyCapacity.JitClock jit, DemoLoad load, String mode, double capacityRps,
        double level) throws Exception {
      return warmUntilSteady(jit, load, mode, capacityRps, level,
          Integer.parseInt(keys.get("steady_max_s")));
    }

    /** As above, at most {@code maxSlices} slices after the first. */
    int warmUntilSteady(SteadyCapacity.JitClock jit, DemoLoad load, String mode, double capacityRps,
        double level, int maxSlices) throws Exception {
      for (int i = 0; i < WARM_FIRST_SLICES; i++) {
        load.openLoop(0.7 * capacityRps, 0, SteadyCapacity.SLICE_NANOS, seed + 1000 + i);
      }
      SteadyCapacity.Slices slices = SteadyCapacity.runUntil(
          index -> load.openLoop(level * capacityRps, 0, SteadyCapacity.SLICE_NANOS,
              seed + 2000 + index).ok(),
          jit, maxSlices, SteadyCapacity::steady);
      System.out.println(SteadyCapacity.describeWarm(mode + " warm-up", WARM_FIRST_SLICES, level,
          slices));
      return WARM_FIRST_SLICES + slices.count();
    }

    /**
     * The server's CPU over a level, read before and after it: the share of its core it used, and
     * that share per call it received (answered or refused), so that modes whose clients frame
     * their calls differently can be compared by what a call costs the serving core.
     */
    record ServerCpu(DemoServerProcess server, long cpuNanos, long levelNanos) {

      /** Before a level that sends calls for {@code levelNanos} (its warm and measured parts). */
      static ServerCpu start(DemoServerProcess server, long levelNanos) throws IOException {
        return new ServerCpu(server, server.cpuNanos(), levelNanos);
      }

      /**
       * After the level and its drain. {@code receivedRps}: calls the server answered or refused a
       * second in the measured part, taken as the level's rate throughout. The share of a core is
       * over the level's own duration, so a server still draining a backlog after it reads above
       * 100 %.
       */
      String describe(String mode, double level, double receivedRps) throws IOException {
        long now = server.cpuNanos();
        if (now < 0 || cpuNanos < 0) {
          return mode + String.format(Locale.ROOT, " %.1fx: the server's JVM does not say its CPU time",
              level);
        }
        double share = (double) (now - cpuNanos) / levelNanos;
        return String.format(Locale.ROOT, "%s %.1fx: the server used %.0f %% of a core, %.0f us a "
            + "call received (%.0f/s)", mode, level, 100 * share, share * 1e6 / receivedRps,
            receivedRps);
      }
    }

    /** A replica row, normalized by the three servers' summed capacity {@code sum}. */
    void addReplicas(String mode, double level, double sum, DemoLoad.Result r, String reasons) {
      double saved = capacity;
      capacity = sum;
      add(mode, level, r.offeredRps(), r.throughputRps(), r.goodputRps(), r.okLatency(),
          r.rejectLatency(), r.dropRate(), r.clientRejects(), r.errors(), r.issued(), reasons);
      capacity = saved;
    }

    /**
     * One replica's closed-loop throughput with the others idle, read by the capacity rule
     * ({@link SteadyCapacity#measure}). Three JVMs on one core that start together compile for
     * longer than any warm-up, each taking the core from the others' compilers as well as from
     * requests; one at a time, each compiles as the single server does, and a measured level then
     * finds all three compiled.
     */
    double aloneCapacity(DemoServerProcess server, String what) throws Exception {
      try (DemoLoad load = new DemoLoad(List.of(server.port()), 3, DemoLoad.Kind.PLAIN, sloNanos)) {
        SteadyCapacity.Measured m = SteadyCapacity.measure(
            index -> Math.round(load.closedLoop(8, 0, SteadyCapacity.SLICE_NANOS)
                * SteadyCapacity.SLICE_NANOS / 1e9),
            () -> jitMillis(server), CAPACITY_MAX_SLICES);
        System.out.println(m.describe(what, "", CAPACITY_MAX_SLICES));
        return m.reading().rps();
      }
    }

    /** The compilers of {@code servers} and of this JVM, their milliseconds so far summed, or -1. */
    private static long jitMillis(List<DemoServerProcess> servers) throws IOException {
      long sum = 0;
      for (DemoServerProcess s : servers) {
        long m = s.compileMillis();
        if (m < 0) {
          return -1;
        }
        sum += m;
      }
      return SteadyCapacity.withOwnJit(sum);
    }

    /** Open-loop slices at 0.7 × capacity that begin every warm-up. */
    static final int WARM_FIRST_SLICES = 3;

    /** The server's and this JVM's compilers' milliseconds so far, or -1 if either does not say. */
    private static long jitMillis(DemoServerProcess server) throws IOException {
      return SteadyCapacity.withOwnJit(server.compileMillis());
    }

    DemoServerProcess startServer(String serverMode, String label) throws IOException {
      return DemoServerProcess.start(serverMode, serviceMicros, sloMillis,
          Math.round(blockMillis * 1000), serverCore,
          out.resolve("server-" + label + (repeats > 1 ? "-run" + run : "") + ".log"), addOpens,
          quotaGroup);
    }

    void runJava(String mode) throws Exception {
      String serverMode = mode.equals("none") ? "none" : "spillway";
      DemoLoad.Kind kind = switch (mode) {
        case "none", "spillway-plain" -> DemoLoad.Kind.PLAIN;
        case "spillway-aware" -> DemoLoad.Kind.AWARE;
        case "spillway-perbackend" -> DemoLoad.Kind.PER_BACKEND;
        default -> throw new IllegalArgumentException("unknown mode " + mode);
      };
      try (DemoServerProcess server = startServer(serverMode, mode);
          DemoLoad load = new DemoLoad(List.of(server.port()), channels, kind, sloNanos)) {
        warmSlices = warmUntilSteady(server, load, mode, !serverMode.equals("none"));
        for (double level : levels) {
          ServerCpu cpu = ServerCpu.start(server, warmNanos + measureNanos);
          long[] throttledBefore = quotaGroup.isEmpty() ? null : CpuQuotaGroup.throttling(quotaGroup);
          DemoLoad.Result r = load.openLoop(level * capacity, warmNanos, measureNanos,
              seed + Math.round(level * 100));
          add(mode, level, r.offeredRps(), r.throughputRps(), r.goodputRps(), r.okLatency(),
              r.rejectLatency(), r.dropRate(), r.clientRejects(), r.errors(), r.issued(),
              r.rejectsByReason());
          System.out.println(cpu.describe(mode, level,
              (r.ok() + r.serverRejects() + r.errors()) / r.measuredSeconds()));
          if (!quotaGroup.isEmpty()) {
            System.out.printf(Locale.ROOT, "%s %.1fx: CPU quota %s cores: %s%n", mode, level,
                keys.get("cpu_quota"), CpuQuotaGroup.describe(throttledBefore,
                    CpuQuotaGroup.throttling(quotaGroup)));
          }
        }
      }
    }

    /**
     * Three servers (their service times from {@code replica_service_us}: the last one at half
     * the capacity of the others) on the server core, each client a balanced channel over all
     * three with one session per server and retry to a replica. Capacity here is the three
     * unprotected servers' total under a closed loop; they share one core, so it is that core's
     * capacity split by their costs, not three machines'.
     */
    void runReplicas() throws Exception {
      List<Long> costs = new ArrayList<>();
      for (String c : keys.get("replica_service_us").split(",")) {
        costs.add(Long.parseLong(c.trim()));
      }
      List<Double> replicaLevels = new ArrayList<>();
      for (String l : keys.get("replica_levels").split(",")) {
        replicaLevels.add(Double.parseDouble(l.trim()));
      }
      double sum;
      double[] alone;
      List<DemoServerProcess> none = new ArrayList<>();
      try {
        List<Integer> ports = new ArrayList<>();
        for (int i = 0; i < costs.size(); i++) {
          DemoServerProcess p = DemoServerProcess.start("none", costs.get(i), sloMillis, serverCore,
              out.resolve("server-replicas-none-" + i + ".log"));
          none.add(p);
          ports.add(p.port());
        }
        alone = new double[costs.size()];
        for (int i = 0; i < costs.size(); i++) {
          alone[i] = aloneCapacity(none.get(i), "replicas: capacity of server " + i + " alone");
        }
        try (DemoLoad load = new DemoLoad(ports, 3 * costs.size(), DemoLoad.Kind.PLAIN, sloNanos)) {
          SteadyCapacity.Measured m = SteadyCapacity.measure(
              index -> Math.round(load.closedLoop(8 * costs.size(), 0, SteadyCapacity.SLICE_NANOS)
                  * SteadyCapacity.SLICE_NANOS / 1e9),
              () -> jitMillis(none), CAPACITY_MAX_SLICES);
          System.out.println(m.describe("replicas: capacity of the three together", "",
              CAPACITY_MAX_SLICES));
          sum = m.reading().rps();
          // Unprotected, at half the summed capacity (the floor three processes sharing a core
          // leave a call's latency) and at the measured levels.
          List<Double> noneLevels = new ArrayList<>(List.of(0.5));
          noneLevels.addAll(replicaLevels);
          for (double level : noneLevels) {
            DemoLoad.Result r = load.openLoop(level * sum, warmNanos, measureNanos,
                seed + Math.round(level * 100));
            addReplicas("replicas-none", level, sum, r, r.rejectsByReason());
          }
        }
      } finally {
        for (DemoServerProcess p : none) {
          p.close();
        }
      }
      warmSlices = 0;
      List<DemoServerProcess> servers = new ArrayList<>();
      try {
        List<Integer> ports = new ArrayList<>();
        for (int i = 0; i < costs.size(); i++) {
          DemoServerProcess p = DemoServerProcess.start("spillway", costs.get(i), sloMillis,
              serverCore, out.resolve("server-replicas-" + i + ".log"));
          servers.add(p);
          ports.add(p.port());
        }
        double top = replicaLevels.stream().mapToDouble(Double::doubleValue).max().orElse(1);
        for (int i = 0; i < servers.size(); i++) {
          DemoServerProcess server = servers.get(i);
          try (DemoLoad load = new DemoLoad(List.of(server.port()), channels,
              DemoLoad.Kind.BALANCED, sloNanos)) {
            warmSlices += warmUntilSteady(() -> jitMillis(server), load, "replicas: server " + i
                + " alone", alone[i], top);
          }
        }
        try (DemoLoad load = new DemoLoad(ports, channels, DemoLoad.Kind.BALANCED, sloNanos)) {
          warmSlices += warmUntilSteady(() -> jitMillis(servers), load, "replicas", sum, top,
              Integer.parseInt(keys.get("replica_steady_max_s")));
          for (double level : replicaLevels) {
            long[] before = load.retriesAndCalls();
            DemoLoad.Result r = load.openLoop(level * sum, warmNanos, measureNanos,
                seed + Math.round(level * 100));
            long[] after = load.retriesAndCalls();
            double retryShare = (double) (after[0] - before[0]) / Math.max(1, after[1] - before[1]);
            addReplicas("replicas", level, sum, r, String.format(Locale.ROOT, "retries=%.1f%% %s",
                100 * retryShare, r.rejectsByReason()));
          }
        }
      } finally {
        for (DemoServerProcess p : servers) {
          p.close();
        }
      }
    }

    void runGhz(String ghz, String mode) throws Exception {
      String serverMode = mode.equals("ghz-none") ? "none" : "spillway";
      Path proto = protoFile();
      try (DemoServerProcess server = startServer(serverMode, mode)) {
        // The server's code path is the plain-client one whichever client sends: warmed by the
        // Java plain clients until its JIT is quiet, then a short ghz warm-up for ghz's own.
        try (DemoLoad load = new DemoLoad(server.port(), channels, false, sloNanos)) {
          warmSlices = warmUntilSteady(server, load, mode, serverMode.equals("spillway"));
        }
        // Then ghz's own warm-up, until the server's compiler is quiet. Each ghz run opens new
        // connections, and the server's first calls on them deoptimize code compiled without
        // them; on the one server core that recompilation is measured at up to half a level's
        // time. So the warm-up is one-second ghz runs, each on new connections, as the levels are.
        // At capacity for a protected server, not at the top level: at 3 x most calls are
        // refused, so a 3 x slice compiles the refusal path and little of the serving one.
        double warmLevel = serverMode.equals("spillway") ? 1.0 : 0.7;
        SteadyCapacity.Slices ghzWarm = SteadyCapacity.warm(index -> {
          Path json = ghzRun(ghz, proto, server.port(), warmLevel * capacity, 1, mode + "-warm");
          try (java.io.InputStream in = Files.newInputStream(json)) {
            return GhzReport.read(in, 0, 1, sloNanos, warmLevel * capacity).ok();
          } finally {
            Files.deleteIfExists(json);
          }
        }, server::compileMillis, Integer.parseInt(keys.get("steady_max_s")));
        System.out.println(SteadyCapacity.describeWarm(mode + " ghz warm-up (one ghz run a slice)",
            0, warmLevel, ghzWarm));
        for (double level : levels) {
          double rps = level * capacity;
          long seconds = Math.round((warmNanos + measureNanos) / 1e9);
          long compiledBefore = server.compileMillis();
          ServerCpu cpu = ServerCpu.start(server, seconds * 1_000_000_000L);
          Path json = ghzRun(ghz, proto, server.port(), rps, seconds,
              mode + "-" + level + "x");
          long compiled = server.compileMillis() - compiledBefore;
          GhzReport.Result r = summarizeGhz(mode, level, rps, json);
          System.out.println(cpu.describe(mode, level,
              (r.ok() + r.rejects() + r.errors()) / r.measureSeconds()));
          System.out.printf(Locale.ROOT, "%s %.1fx: the server's compiler ran %d ms of the level's"
              + " %d s%n", mode, level, compiled, seconds);
          Files.deleteIfExists(json); // every call's details: megabytes; the summary is kept
        }
      }
    }

    Path ghzRun(String ghz, Path proto, int port, double rps, long seconds, String label)
        throws IOException, InterruptedException {
      Path json = out.resolve("ghz-" + label + ".json");
      // As the Spring demo runs it (SpringDemoMain.runGhz): no template (filling one in for each
      // call more than doubled ghz's CPU a call, which its one core cannot spare above 1x), one
      // worker per call the rate can have in flight within the deadline (so ghz stays open loop
      // against a server that answers late), and the calls in flight at the end let finish.
      long concurrency = Math.max(channels, (long) Math.ceil(rps * DemoLoad.DEADLINE_MS / 1000.0));
      List<String> cmd = List.of(ghz, "--insecure", "--proto", proto.toString(),
          "--call", "spillway.demo.Demo.Work", "-d", "{\"id\":1}",
          "--disable-template-functions", "--disable-template-data",
          "--rps", Long.toString(Math.round(rps)), "--concurrency", Long.toString(concurrency),
          "--connections", Integer.toString(channels), "-z", seconds + "s",
          "--duration-stop", "wait", "--timeout", DemoLoad.DEADLINE_MS + "ms",
          "--format", "json", "-o", json.toString(), "127.0.0.1:" + port);
      Files.writeString(out.resolve("ghz-command.txt"), String.join(" ", cmd) + "\n");
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true)
          .redirectOutput(out.resolve("ghz-" + label + ".log").toFile()).start();
      if (!p.waitFor(seconds + 60, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IOException("ghz did not finish: " + label);
      }
      return json;
    }

    GhzReport.Result summarizeGhz(String mode, double level, double rps, Path json)
        throws IOException {
      GhzReport.Result r;
      try (java.io.InputStream in = Files.newInputStream(json)) {
        r = GhzReport.read(in, warmNanos / 1e9, measureNanos / 1e9, sloNanos, rps);
      }
      long received = r.ok() + r.rejects() + r.errors();
      add(mode, level, r.startedRps(), r.throughputRps(), r.goodputRps(), r.okLatency(),
          r.rejectLatency(), io.spillway.sim.Tally.ratio(r.rejects(), received), 0, r.errors(),
          r.started(), r.byReason());
      System.out.println(mode + " " + level + "x: " + GhzReport.describe(r, rps));
      return r;
    }

    void add(String mode, double level, double offered, double throughput, double goodput,
        Histogram ok, Histogram rejects, double dropRate, long clientRejects, long errors,
        long issued, String reasons) {
      double p50 = ok.getTotalCount() == 0 ? 0 : ok.getValueAtPercentile(50) / 1e3;
      double p99 = ok.getTotalCount() == 0 ? 0 : ok.getValueAtPercentile(99) / 1e3;
      double rejectMean = rejects.getTotalCount() == 0 ? 0 : rejects.getMean() / 1e3;
      double rejectP99 = rejects.getTotalCount() == 0 ? 0 : rejects.getValueAtPercentile(99) / 1e3;
      String json = record(mode, level, capacity, offered, throughput, goodput, p50, p99,
          sloMillis * 1000, dropRate, rejectMean, rejectP99, clientRejects, errors, issued, warmSlices,
          reasons);
      records.add(json);
      rows.add(new RunRow(mode, level, run, goodput, p99, json));
      String row = String.format(Locale.ROOT,
          "%-16s %5.1fx %9.0f %9.0f %7.3f %9.0f %9.0f %7.1f %8d %7d  %s", mode, level, offered,
          goodput, goodput / capacity, p50, p99, 100 * dropRate, clientRejects, errors, reasons)
          + (repeats > 1 ? "  " + run : "");
      table.add(row);
      System.out.println(row);
    }

    void writeResults() throws IOException {
      StringBuilder json = new StringBuilder("{\n  \"scenario\": {");
      json.append("\"name\": \"grpc-demo\", \"description\": \"a unary gRPC service (")
          .append(serviceMicros).append(" us of CPU under a BudgetedLock) written as the quick "
              + "start says, with and without Spillway, plain and Spillway-aware clients\"");
      for (Map.Entry<String, String> e : keys.entrySet()) {
        json.append(", \"").append(e.getKey()).append("\": \"").append(e.getValue()).append('"');
      }
      json.append(String.format(Locale.ROOT, ", \"slo_us\": \"%d\", \"java\": \"%s\", \"cores\": "
          + "\"%d\"},%n", sloMillis * 1000, System.getProperty("java.version"), cores()));
      json.append(String.format(Locale.ROOT, "  \"unprotected_capacity_rps\": %.0f,%n",
          Double.isNaN(noneCapacity) ? -1 : noneCapacity));
      json.append(String.format(Locale.ROOT, "  \"capacity_rps\": %.0f,%n  \"capacity_measured\": "
          + "%s,%n  \"records\": [%n    ", capacity, !keys.containsKey("capacity")));
      List<String> kept = records;
      if (repeats > 1) {
        kept = medians(rows).stream().map(RunRow::json).toList();
        StringBuilder runs = new StringBuilder();
        for (RunRow r : rows) {
          runs.append(r.json(), 0, r.json().length() - 1).append(", \"run\": ").append(r.run())
              .append("}\n");
        }
        Files.writeString(out.resolve("runs.jsonl"), runs);
      }
      json.append(String.join(",\n    ", kept)).append("\n  ]\n}\n");
      Path results = out.resolve(ReportWriter.RESULTS_FILE);
      Files.writeString(results, json);
      Files.writeString(out.resolve("table.txt"), String.join("\n", table) + "\n");
      ReportWriter.write(results, out);
      System.out.println("wrote " + results + ", report.md and plots in " + out);
    }

    static String findGhz() {
      List<String> candidates = new ArrayList<>();
      String env = System.getenv("GHZ");
      if (env != null) {
        candidates.add(env);
      }
      candidates.add(System.getProperty("user.home") + "/go/bin/ghz");
      String path = System.getenv("PATH");
      if (path != null) {
        for (String dir : path.split(":")) {
          candidates.add(dir + "/ghz");
        }
      }
      for (String c : candidates) {
        if (Files.isExecutable(Path.of(c))) {
          return c;
        }
      }
      return null;
    }

    Path protoFile() throws IOException {
      Path p = Files.createTempFile("spillway-demo", ".proto"); // ghz reads it; not a result
      p.toFile().deleteOnExit();
      try (var in = GrpcDemoMain.class.getResourceAsStream("/demo.proto")) {
        if (in == null) {
          throw new IOException("demo.proto is not on the class path");
        }
        Files.write(p, in.readAllBytes());
      }
      return p;
    }
  }
}
