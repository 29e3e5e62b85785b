package io.spillway.harness.grpcdemo;

import io.grpc.netty.shaded.io.netty.channel.nio.NioEventLoopGroup;
import io.spillway.harness.SteadyCapacity;
import io.spillway.harness.grpcdemo.GrpcFloodWorkload.End;
import io.spillway.harness.grpcdemo.GrpcFloodWorkload.Flooder;
import io.spillway.harness.grpcdemo.GrpcFloodWorkload.Honest;
import io.spillway.harness.grpcdemo.GrpcFloodWorkload.Windows;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.function.IntToDoubleFunction;
import java.util.stream.Collectors;

/**
 * What a session flood through gRPC costs the honest sessions beside it: the demo's service
 * ({@link DemoServer}, 200 µs of CPU a call under a lock) protected as the README's quick start
 * protects it (the default scheme, SLO 5 ms) in a JVM of its own on core 0, overloaded by
 * Spillway-aware sessions ({@link GrpcFloodWorkload.Honest}), beside a plain client that invents a
 * session id for every call ({@link GrpcFloodWorkload.Flooder}). The gRPC counterpart of {@code
 * SocketAbuseMain --flood-sessions} (docs/results/reliability.md, "Session floods").
 *
 * <p>Four measured windows of the same length, back to back after a warm-up: the honest sessions
 * alone; with the flooder beside them; with, instead, an honest extra session of the same appetite
 * as one honest session (a Spillway-aware session on a connection of its own: the yardstick the
 * admission contract uses, since a fair added session takes about 1/(N+1) of what a saturated
 * server serves); alone again. Before each of the first three the load runs until both JVMs' JITs
 * are quiet ({@link SteadyCapacity#warm}), so that each window's own paths (refusals for credit,
 * a ninth session's grants) compile outside it. A call counts in the window it was issued in
 * ({@link GrpcFloodWorkload.Windows}). Prints one {@code GRPC-FLOOD-ROW} line and appends it,
 * with the warm-up traces, to {@code DIR/grpc-flood-rows.txt}: per window the honest goodput
 * (calls served within the SLO, counted from their due time, a second), what the flooder was
 * served and refused, the CPU of the server JVM, of its transport threads (where gRPC answers each
 * refusal) and of this JVM, and the machine's steal time.
 *
 * <p>Then {@code --pairs} N (default {@value #DEFAULT_PAIRS}) pairs of windows: a fresh flooding
 * connection runs {@value #PAIR_SETTLE_MILLIS} ms unmeasured and then through a flood window, is
 * stopped, and after as long again an alone window follows. The row compares the mean of the N
 * flood windows with that of the N + 1 alone windows that bracket them (alone after, then each
 * pair's): one window against one reads the drift of the honest goodput between windows (up to
 * 12 % between the two alone windows of one run) as well as the flood.
 *
 * <p>All clients run in this JVM, which the launcher pins to core 1, so a client added to a window
 * costs the server's core only what the server does for it; where this JVM reads a whole core, the
 * honest calls also waited for the client's core, and the window's drop is not the server's alone.
 * These are measurements, not checks;
 * {@code SessionFloodOverSocketsTest} (overload-grpc) asserts the bound per connection.
 *
 * <p>{@code ./spillway grpc-flood [--seconds N] [--warmup-seconds N] [--honest-sessions N]
 * [--offered-rps N] [--flood-calls N] [--pairs N] [--out DIR]}: each window N seconds (default {@value
 * #DEFAULT_SECONDS}); the warm-up {@value #DEFAULT_WARMUP_SECONDS} s before its one-second slices
 * (at most {@value #MAX_WARM_SLICES}); N honest sessions (default {@value #DEFAULT_HONEST}) offering
 * together {@value #OVERLOAD} × the capacity read first, as the demo reads it (a fresh {@code
 * nocontrol} server under a closed loop; readings on the same VM ranged 3,110–3,418 rps in
 * docs/results/grpc.md, so a rate fixed from one of them would overload the server by a different
 * factor on each run), or
 * {@code --offered-rps} calls a second with no reading; the honest extra session offers that ÷ N;
 * the flooder keeps {@value #DEFAULT_FLOOD_CALLS} calls outstanding (as many as the socket
 * harness's greedy session); the servers' logs go to DIR (default results/grpc-flood).
 */
public final class GrpcFloodMain {

  static final int DEFAULT_SECONDS = 5;
  static final int DEFAULT_WARMUP_SECONDS = 10;
  static final int DEFAULT_HONEST = 8;
  static final int DEFAULT_FLOOD_CALLS = 16;
  /** The demo's service time and SLO (GrpcDemoMain's defaults). */
  static final long SERVICE_MICROS = 200;
  static final long SLO_MILLIS = 5;
  /**
   * The most one-second slices each settling adds after its fixed part, waiting for the JITs: a
   * fresh server compiles for 10–30 s on its one core (GrpcDemoMain), longer on a slow VM.
   */
  static final int MAX_WARM_SLICES = 60;
  /**
   * The most one-second slices a capacity reading takes: twice the demo's default, since on a slow
   * VM a fresh server was still compiling after 30 (the reading then reads low, and the overload
   * is higher than {@link #OVERLOAD}).
   */
  static final int MAX_CAPACITY_SLICES = 60;
  /** Calls kept outstanding for the capacity reading, as the demo's. */
  static final int CAPACITY_OUTSTANDING = 8;
  /** The honest sessions' offered load, × capacity, unless a rate is given. */
  static final double OVERLOAD = 1.5;
  /** The server's transport threads as the kernel names them: gRPC's Netty event loops (epoll, NIO). */
  static final String[] TRANSPORT_THREADS = {"grpc-default-wo", "grpc-nio-worker"};

  static final int ALONE = 0;
  static final int BESIDE_FLOOD = 1;
  static final int BESIDE_HONEST = 2;
  static final int ALONE_AFTER = 3;
  static final int WINDOWS = 4;
  /** Flood and alone windows that alternate after the four, by default. */
  static final int DEFAULT_PAIRS = 3;
  /** Load run before each alternating window, unmeasured: the paths it takes have compiled. */
  static final long PAIR_SETTLE_MILLIS = 2_000;

  private GrpcFloodMain() { }

  public static void main(String[] args) throws Exception {
    long seconds = DEFAULT_SECONDS;
    long warmupSeconds = DEFAULT_WARMUP_SECONDS;
    int honest = DEFAULT_HONEST;
    long offered = 0; // measured
    int floodCalls = DEFAULT_FLOOD_CALLS;
    int pairs = DEFAULT_PAIRS;
    Path out = Path.of("results", "grpc-flood");
    for (int i = 0; i < args.length; i += 2) {
      String value = i + 1 < args.length ? args[i + 1] : null;
      switch (args[i]) {
        case "--seconds" -> seconds = whole(args[i], value);
        case "--warmup-seconds" -> warmupSeconds = whole(args[i], value);
        case "--honest-sessions" -> honest = (int) whole(args[i], value);
        case "--offered-rps" -> offered = whole(args[i], value);
        case "--flood-calls" -> floodCalls = (int) whole(args[i], value);
        case "--pairs" -> pairs = (int) whole(args[i], value);
        case "--out" -> {
          if (value == null) {
            usage("--out needs a directory");
          }
          out = Path.of(value);
        }
        default -> usage("unknown argument '" + args[i] + "'");
      }
    }
    if (seconds == 0 || honest == 0 || floodCalls == 0) {
      usage("--seconds, --honest-sessions and --flood-calls must be at least 1");
    }
    Files.createDirectories(out);
    new GrpcFloodMain.Run(TimeUnit.SECONDS.toNanos(seconds), TimeUnit.SECONDS.toMillis(warmupSeconds), honest,
        offered, floodCalls, pairs, out).run();
  }

  private static long whole(String name, String value) {
    if (value == null || !value.matches("[0-9]{1,9}")) {
      usage(name + " needs a whole number, got " + (value == null ? "nothing" : "'" + value + "'"));
    }
    return Long.parseLong(value);
  }

  private static void usage(String problem) {
    System.err.println("grpc-flood: " + problem);
    System.err.println("usage: ./spillway grpc-flood [--seconds N] [--warmup-seconds N] [--honest-sessions N]"
        + " [--offered-rps N] [--flood-calls N] [--pairs N] [--out DIR]");
    System.exit(2);
  }

  /** The median of {@code values}: the mean of the two middle ones for an even count. */
  static long median(long[] values) {
    long[] sorted = values.clone();
    Arrays.sort(sorted);
    return (sorted[(sorted.length - 1) / 2] + sorted[sorted.length / 2]) / 2;
  }

  /** {@code now} against {@code base} as a signed percentage with one decimal, {@code "-5.9%"}. */
  static String change(double now, double base) {
    return base == 0 ? "n/a" : String.format(Locale.ROOT, "%+.1f%%", 100 * (now / base - 1));
  }

  /** One value per window, slash-separated, two decimals. */
  static String perWindow(double[] values) {
    return Arrays.stream(values).mapToObj(v -> String.format(Locale.ROOT, "%.2f", v))
        .collect(Collectors.joining("/"));
  }

  /**
   * The steal time in a {@code /proc/stat} text's first line (the eighth value after {@code cpu}),
   * in clock ticks of 10 ms, summed over the machine's CPUs; -1 where the line does not have it.
   */
  static long stealTicks(String procStat) {
    String[] f = procStat.lines().findFirst().orElse("").trim().split("\\s+");
    return f.length > 8 && f[0].equals("cpu") ? Long.parseLong(f[8]) : -1;
  }

  /** The machine's steal time so far in 10 ms ticks, or -1 where not readable. */
  private static long stealTicks() {
    try {
      return stealTicks(Files.readString(Path.of("/proc/stat"), StandardCharsets.US_ASCII));
    } catch (java.io.IOException | RuntimeException e) {
      return -1;
    }
  }

  /**
   * What one window cost: the server JVM's CPU and its transport threads' (gRPC's event loops,
   * where each refusal is answered), this JVM's, in nanoseconds, and the machine's steal time
   * (CPU the hypervisor gave elsewhere) in 10 ms ticks.
   */
  private record Cpu(long server, long serverTransport, long client, long steal) { }

  private static final class Run {
    final long windowNanos;
    final long warmupMillis;
    final int honestSessions;
    long offeredRps;
    final int floodCalls;
    final int pairs;
    /** The four windows, then each pair's flood window and alone window. */
    final int windowCount;
    final Path out;
    final Windows windows = new Windows();
    final Cpu[] cpu;
    final List<String> trace = new ArrayList<>();
    /** What each pair's flooder was served in its window, and the calls it made a second. */
    final long[] pairFloodServed;
    final long[] pairFloodCalls;

    Run(long windowNanos, long warmupMillis, int honestSessions, long offeredRps, int floodCalls, int pairs,
        Path out) {
      this.windowNanos = windowNanos;
      this.warmupMillis = warmupMillis;
      this.honestSessions = honestSessions;
      this.offeredRps = offeredRps;
      this.floodCalls = floodCalls;
      this.pairs = pairs;
      this.windowCount = WINDOWS + 2 * pairs;
      this.cpu = new Cpu[windowCount];
      this.pairFloodServed = new long[pairs];
      this.pairFloodCalls = new long[pairs];
      this.out = out;
    }

    static int pairFlood(int pair) {
      return WINDOWS + 2 * pair;
    }

    static int pairAlone(int pair) {
      return WINDOWS + 2 * pair + 1;
    }

    void run() throws Exception {
      // The launcher pins this JVM to core 1; the server takes core 0 where there are two.
      int core = GrpcDemoMain.cores() >= 2 && Files.isExecutable(Path.of("/usr/bin/taskset")) ? 0 : -1;
      long sloNanos = TimeUnit.MILLISECONDS.toNanos(SLO_MILLIS);
      SteadyCapacity.Reading capacity = null;
      if (offeredRps == 0) {
        capacity = capacity(core, sloNanos);
        offeredRps = Math.round(OVERLOAD * capacity.rps());
      }
      double extraRps = (double) offeredRps / honestSessions;
      long floodServedAll;
      long sessionsInvented;
      boolean drained = true;
      NioEventLoopGroup group = new NioEventLoopGroup(1);
      Honest honest;
      Honest extra;
      Flooder flooder;
      try (DemoServerProcess server = DemoServerProcess.start("spillway", SERVICE_MICROS, SLO_MILLIS, core,
          out.resolve("server-grpc-flood.log"))) {
        log("server " + (core >= 0 ? "on core " + core : "unpinned") + ", clients "
            + (System.getenv("SPILLWAY_PINNED") != null ? "on core 1" : "unpinned") + "; " + honestSessions
            + " honest sessions at " + offeredRps + " rps in all; server log in " + out.resolve("server-grpc-flood.log"));
        honest = new Honest(server.port(), group, honestSessions, offeredRps, sloNanos, windows, windowCount, 1,
            "honest-arrivals");
        try (Honest h = honest) {
          settle(server, "the honest sessions alone", h::answered, warmupMillis);
          measure(server, ALONE);
          flooder = new Flooder(server.port(), windows, windowCount);
          try (Flooder f = flooder) {
            f.start(floodCalls);
            settle(server, "beside the flood", () -> h.answered() + f.answered(), 0);
            measure(server, BESIDE_FLOOD);
            drained &= f.stop();
            sessionsInvented = f.sessionsInvented();
            floodServedAll = f.answered();
          }
          // the yardstick: one more honest session of the same appetite, on a connection of its own
          extra = new Honest(server.port(), group, 1, extraRps, sloNanos, windows, windowCount, 2, "extra-arrivals");
          try (Honest e = extra) {
            settle(server, "beside an honest extra session", () -> h.answered() + e.answered(), 0);
            measure(server, BESIDE_HONEST);
            drained &= e.stop();
          }
          measure(server, ALONE_AFTER);
          // Alternating: each flood window between two alone windows, a fresh flooding connection
          // each time, so that a drift of the honest goodput over the run shows as such
          for (int p = 0; p < pairs; p++) {
            int floodWindow = pairFlood(p);
            try (Flooder f = new Flooder(server.port(), windows, windowCount)) {
              f.start(floodCalls);
              Thread.sleep(PAIR_SETTLE_MILLIS);
              measure(server, floodWindow);
              drained &= f.stop();
              pairFloodServed[p] = f.count(floodWindow, End.SERVED);
              pairFloodCalls[p] = Math.round(Arrays.stream(End.values())
                  .mapToLong(e -> f.count(floodWindow, e)).sum() / (windowNanos / 1e9));
            }
            Thread.sleep(PAIR_SETTLE_MILLIS);
            measure(server, pairAlone(p));
          }
          drained &= h.stop();
        }
      } finally {
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(5, TimeUnit.SECONDS);
      }
      if (!drained) {
        log("some calls had not ended three deadlines after their load stopped; their windows count them as not served");
      }
      String row = row(honest, extra, flooder, sessionsInvented, floodServedAll, core, capacity, drained);
      System.out.println(row);
      List<String> lines = new ArrayList<>();
      lines.add(row);
      trace.forEach(t -> lines.add("# " + t));
      Path rows = out.resolve("grpc-flood-rows.txt");
      Files.write(rows, lines, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
      log("row appended to " + rows);
    }

    String row(Honest honest, Honest extra, Flooder flooder, long sessionsInvented, long floodAnswered, int core,
        SteadyCapacity.Reading capacity, boolean drained) {
      double seconds = windowNanos / 1e9;
      long[] beside = honest.served(BESIDE_FLOOD);
      long median = median(beside);
      double[] good = new double[windowCount];
      for (int w = 0; w < windowCount; w++) {
        good[w] = honest.good(w) / seconds;
      }
      Map<String, Object> row = new LinkedHashMap<>();
      row.put("scheme", "spillway-quickstart");
      row.put("seconds", windowNanos / 1_000_000_000);
      row.put("honestSessions", honestSessions);
      row.put("capacityRps", capacity == null ? "given" : Math.round(capacity.rps()));
      row.put("capacitySpread", capacity == null ? "-" : String.format(Locale.ROOT, "%.3f", capacity.spread()));
      row.put("capacitySettled", capacity == null ? "-" : capacity.settled());
      row.put("offeredRps", offeredRps);
      row.put("floodCalls", floodCalls);
      row.put("serviceMicros", SERVICE_MICROS);
      row.put("sloMillis", SLO_MILLIS);
      row.put("layout", core >= 0 && System.getenv("SPILLWAY_PINNED") != null ? "server:core0,clients:core1" : "unpinned");
      row.put("floodServed", flooder.count(BESIDE_FLOOD, End.SERVED));
      row.put("floodRefusedForCredit", flooder.count(BESIDE_FLOOD, End.REFUSED_FOR_CREDIT));
      row.put("floodRefusedOther", flooder.count(BESIDE_FLOOD, End.REFUSED_OTHER));
      row.put("floodFailed", flooder.count(BESIDE_FLOOD, End.FAILED) + flooder.count(BESIDE_FLOOD, End.ENDED_IN_CLIENT));
      long floodInWindow = Arrays.stream(End.values()).mapToLong(e -> flooder.count(BESIDE_FLOOD, e)).sum();
      row.put("floodCallsPerSecond", Math.round(floodInWindow / seconds));
      row.put("floodSessionsInvented", sessionsInvented);
      row.put("floodCallsAnswered", floodAnswered);
      row.put("sameAppetiteHonestServed", extra.served(BESIDE_HONEST)[0]);
      row.put("honestBest", Arrays.stream(beside).max().orElse(0));
      row.put("honestMedian", median);
      row.put("honestMedianBesideHonest", median(honest.served(BESIDE_HONEST)));
      row.put("floodOverMedian", ratio(flooder.count(BESIDE_FLOOD, End.SERVED), median));
      row.put("sameAppetiteOverMedian", ratio(extra.served(BESIDE_HONEST)[0], median(honest.served(BESIDE_HONEST))));
      row.put("honestGoodRpsAlone", Math.round(good[ALONE]));
      row.put("honestGoodRpsBesideFlood", Math.round(good[BESIDE_FLOOD]));
      row.put("honestGoodRpsBesideHonest", Math.round(good[BESIDE_HONEST]));
      row.put("honestGoodRpsAloneAfter", Math.round(good[ALONE_AFTER]));
      row.put("besideFloodVsAlone", change(good[BESIDE_FLOOD], good[ALONE]));
      row.put("besideFloodVsAloneAfter", change(good[BESIDE_FLOOD], good[ALONE_AFTER]));
      row.put("besideHonestVsAlone", change(good[BESIDE_HONEST], good[ALONE]));
      if (pairs > 0) {
        // the alone windows that bracket the flood windows: alone after, then each pair's
        double aloneSum = good[ALONE_AFTER];
        double floodSum = 0;
        double[] alone = new double[pairs];
        double[] flood = new double[pairs];
        for (int p = 0; p < pairs; p++) {
          alone[p] = good[pairAlone(p)];
          flood[p] = good[pairFlood(p)];
          aloneSum += alone[p];
          floodSum += flood[p];
        }
        row.put("pairsGoodRpsBesideFlood", perWindow(flood));
        row.put("pairsGoodRpsAlone", perWindow(alone));
        row.put("pairsBesideFloodVsBracketingAlone", change(floodSum / pairs, aloneSum / (pairs + 1)));
        row.put("pairsFloodServed", Arrays.stream(pairFloodServed).mapToObj(Long::toString)
            .collect(Collectors.joining("/")));
        row.put("pairsFloodCallsPerSecond", Arrays.stream(pairFloodCalls).mapToObj(Long::toString)
            .collect(Collectors.joining("/")));
      }
      row.put("honestServedRps", each(w -> Arrays.stream(honest.served(w)).sum() / seconds));
      row.put("honestEndedInClientPerSecond", each(w -> honest.endedInClient(w) / seconds));
      row.put("honestRefusedPerSecond", each(w -> honest.refused(w) / seconds));
      row.put("honestFailed", each(honest::failed));
      row.put("everyCallEnded", drained);
      row.put("serverCpuCores", each(w -> cpu[w].server() / 1e9 / seconds));
      row.put("serverTransportCores", each(w -> cpu[w].serverTransport() / 1e9 / seconds));
      row.put("clientCpuCores", each(w -> cpu[w].client() / 1e9 / seconds));
      row.put("stealCores", each(w -> cpu[w].steal() / 100.0 / seconds));
      return "GRPC-FLOOD-ROW " + row.entrySet().stream().map(e -> e.getKey() + "=" + e.getValue())
          .collect(Collectors.joining(" "));
    }

    private String each(IntToDoubleFunction value) {
      double[] v = new double[windowCount];
      for (int w = 0; w < windowCount; w++) {
        v[w] = value.applyAsDouble(w);
      }
      return perWindow(v);
    }

    private static String ratio(long a, long b) {
      return String.format(Locale.ROOT, "%.2f", (double) a / Math.max(1, b));
    }

    /** One window of load: its calls are those issued in it, counted once they have ended. */
    void measure(DemoServerProcess server, int window) throws Exception {
      Path proc = Path.of("/proc", Long.toString(server.pid()));
      long serverBefore = server.cpuNanos();
      long transportBefore = ThreadCpu.threadsMillis(proc, TRANSPORT_THREADS);
      long clientBefore = DemoServer.processCpuNanos();
      long stealBefore = stealTicks();
      windows.open(window);
      Thread.sleep(TimeUnit.NANOSECONDS.toMillis(windowNanos)); // the window is a span of load
      windows.close();
      long transport = ThreadCpu.threadsMillis(proc, TRANSPORT_THREADS);
      long steal = stealTicks();
      cpu[window] = new Cpu(server.cpuNanos() - serverBefore,
          transport < 0 || transportBefore < 0 ? -1 : TimeUnit.MILLISECONDS.toNanos(transport - transportBefore),
          DemoServer.processCpuNanos() - clientBefore, steal < 0 || stealBefore < 0 ? -1 : steal - stealBefore);
    }

    /**
     * The demo's capacity as its harness reads it (GrpcDemoMain): a fresh server with the
     * protected server's code path and no control ({@code nocontrol}) under a closed loop of
     * {@value #CAPACITY_OUTSTANDING} plain calls, in one-second slices until the last three agree
     * and the JITs are quiet ({@link SteadyCapacity#measure}).
     */
    SteadyCapacity.Reading capacity(int core, long sloNanos) throws Exception {
      try (DemoServerProcess server = DemoServerProcess.start("nocontrol", SERVICE_MICROS, SLO_MILLIS, core,
              out.resolve("server-capacity.log"));
          DemoLoad load = new DemoLoad(server.port(), CAPACITY_OUTSTANDING, false, sloNanos)) {
        SteadyCapacity.Measured m = SteadyCapacity.measure(
            index -> Math.round(load.closedLoop(CAPACITY_OUTSTANDING, 0, SteadyCapacity.SLICE_NANOS)
                * SteadyCapacity.SLICE_NANOS / 1e9),
            () -> SteadyCapacity.withOwnJit(server.compileMillis()), MAX_CAPACITY_SLICES);
        String line = m.describe("capacity (nocontrol, " + CAPACITY_OUTSTANDING + " outstanding):", "",
            MAX_CAPACITY_SLICES);
        trace.add(line);
        log(line);
        return m.reading();
      }
    }

    /**
     * Runs the load as it is for {@code fixedMillis}, then in one-second slices until both JVMs'
     * JITs are quiet ({@link SteadyCapacity#warm}).
     */
    void settle(DemoServerProcess server, String what, LongSupplier answered, long fixedMillis) throws Exception {
      Thread.sleep(fixedMillis);
      SteadyCapacity.Slices warm = SteadyCapacity.warm(slice -> {
        long before = answered.getAsLong();
        Thread.sleep(TimeUnit.NANOSECONDS.toMillis(SteadyCapacity.SLICE_NANOS));
        return answered.getAsLong() - before;
      }, () -> SteadyCapacity.withOwnJit(server.compileMillis()), MAX_WARM_SLICES);
      String line = "settled " + what + " for " + (fixedMillis / 1000 + warm.count()) + " s ("
          + (warm.settled() ? "until the JITs were quiet" : "NOT quiet: may still compile in the window")
          + "; per slice, calls answered / ms the JITs compiled: " + warm.trace() + ")";
      trace.add(line);
      log(line);
    }

    private static void log(String line) {
      System.err.println("grpc-flood: " + line);
    }
  }
}
