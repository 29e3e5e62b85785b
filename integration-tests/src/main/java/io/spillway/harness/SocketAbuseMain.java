package io.spillway.harness;

import io.spillway.transport.SpillwayClient;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.stream.Collectors;
import java.util.stream.LongStream;

/**
 * How much a client that ignores its credit window is served on real sockets, and what it costs
 * the honest sessions beside it ({@link AbuseWorkload}): four measured windows of the same length,
 * back to back after a warm-up: the honest sessions alone; with the greedy session beside them;
 * with, instead, an honest session of the same appetite (through its gate, on a connection of its
 * own: the yardstick the admission contract uses); alone again. Prints one {@code ABUSE-ROW} line
 * (the rows of docs/results/reliability.md): what the greedy session was served against the
 * same-appetite honest one, the best and the median honest session, the honest sessions' goodput
 * (served within the SLO) in each window, the CPU each process used, the greedy session's
 * refusals a second and the credit pool as the server saw them, and the server's ledger of the
 * greedy session ({@link GrantLedger}).
 *
 * <p>The server runs in a JVM of its own ({@link AbuseServer}), pinned to core 0 where the machine
 * has two, as every socket harness's server is ({@link HarnessMain.ServerProcess}); every client,
 * honest and greedy, runs in this JVM, which the launcher pins to core 1. So a session added to the
 * run costs the server's core only what the server does for it, not the client's own threads.
 * These are measurements, not checks; {@code SocketAbuseTest} asserts the behaviour.
 *
 * <p>{@code ./spillway harness-abuse [--seconds N] [--resend-micros N] [--warmup-seconds N]
 * [--honest-sessions N] [--jdk-scheduler] [--flood-sessions | --forge-deregistrations] [--out DIR]}:
 * each window N seconds (default 3); with {@code --flood-sessions} the ninth client floods sessions
 * instead of ignoring its window (each request registers a new session id); with {@code
 * --forge-deregistrations} it is an honest session of the same appetite, through its gate on a
 * connection of its own, that also sends a deregister frame for every honest session's id (the
 * real ids) once a millisecond ({@link AbuseWorkload.Forger}), and the row adds how many it sent,
 * all read by the server before the forger's last call was answered, and how many sessions the
 * server ended meanwhile, the honest ones among them; with {@code --resend-micros N} the greedy
 * session waits N microseconds before each resend (default 0), to weigh what answering its
 * refusals costs the server; the warm-up (default 6 s, then one-second slices until both JVMs'
 * JITs are quiet, {@link SteadyCapacity#warm}) lets the JITs and the credit pool settle;
 * N honest sessions (default {@value AbuseWorkload#HONEST_SESSIONS}: on a saturated server a
 * session added to N takes a fair 1/(N+1) of what is served from them, so the more sessions, the
 * less a fair one costs the others); the server runs its requests on its default dispatcher, one
 * Loom carrier whose queue delay its gate sees, and with {@code --jdk-scheduler} on the JDK's own
 * virtual-thread scheduler, whose queue it does not see (the server's default where the JVM is not
 * opened for the carrier dispatcher: {@link AbuseServer}), so the credit pool follows the event
 * loop's backlog alone; the server's log goes to DIR (default results/harness-abuse).
 */
public final class SocketAbuseMain {

  /** The most one-second slices the warm-up adds after its fixed part, waiting for the JITs. */
  private static final int MAX_WARM_SLICES = 30;

  /**
   * How often the forger sends a deregister frame for each honest session: with 8 of them, 8,000
   * frames a second, of the order of the requests the server serves (12,000-15,000 a second), so
   * the frames' own cost to the server's event loop shows, and each window holds thousands of
   * them whatever the scheduling.
   */
  private static final long FORGE_PERIOD_NANOS = 1_000_000;

  /** What the ninth client does beside the honest sessions. */
  private enum Abuse {
    IGNORES_WINDOW("ignores-window"),
    FLOOD_SESSIONS("flood-sessions"),
    FORGE_DEREGISTRATIONS("forge-deregistrations");

    final String label;

    Abuse(String label) {
      this.label = label;
    }
  }

  private SocketAbuseMain() { }

  /** What one measured window saw: from the clients, and from the server ({@link AbuseServer}). */
  private record Window(long[] honestServed, long honestGood, long besideServed, long clientCpuNanos,
      Map<String, String> serverBefore, Map<String, String> serverAfter) {
    long best() {
      return Arrays.stream(honestServed).max().orElse(0);
    }

    long median() {
      long[] sorted = honestServed.clone();
      Arrays.sort(sorted);
      return (sorted[(sorted.length - 1) / 2] + sorted[sorted.length / 2]) / 2;
    }

    /** How much a count the server keeps from its start grew in the window. */
    long serverDelta(String key) {
      return Long.parseLong(serverAfter.get(key)) - Long.parseLong(serverBefore.get(key));
    }

    /** A reading the server took over the window (the pool's, drained at its start). */
    String server(String key) {
      return serverAfter.get(key);
    }
  }

  public static void main(String[] args) throws Exception {
    long seconds = 3;
    long resendMicros = 0;
    long warmupSeconds = 6;
    int honestSessions = AbuseWorkload.HONEST_SESSIONS;
    boolean jdkScheduler = false;
    Abuse abuse = Abuse.IGNORES_WINDOW;
    Path out = Path.of("results", "harness-abuse");
    for (int i = 0; i < args.length; i++) {
      String value = i + 1 < args.length ? args[i + 1] : null;
      switch (args[i]) {
        case "--seconds" -> seconds = positive(args[i], value);
        case "--resend-micros" -> resendMicros = positive(args[i], value);
        case "--warmup-seconds" -> warmupSeconds = positive(args[i], value);
        case "--honest-sessions" -> honestSessions = (int) positive(args[i], value);
        case "--jdk-scheduler" -> {
          jdkScheduler = true;
          i--; // a flag: no value
        }
        case "--flood-sessions", "--forge-deregistrations" -> {
          if (abuse != Abuse.IGNORES_WINDOW) {
            usage("--flood-sessions and --forge-deregistrations are two abuses: one at a time");
          }
          abuse = args[i].equals("--flood-sessions") ? Abuse.FLOOD_SESSIONS : Abuse.FORGE_DEREGISTRATIONS;
          i--; // a flag: no value
        }
        case "--out" -> {
          if (value == null) {
            usage("--out needs a directory");
          }
          out = Path.of(value);
        }
        default -> usage("unknown argument '" + args[i] + "'");
      }
      i++;
    }
    if (seconds == 0 || honestSessions == 0) {
      usage("--seconds and --honest-sessions must be at least 1");
    }
    Files.createDirectories(out);
    run(TimeUnit.SECONDS.toNanos(seconds), TimeUnit.MICROSECONDS.toNanos(resendMicros),
        TimeUnit.SECONDS.toMillis(warmupSeconds), honestSessions, jdkScheduler, abuse, out);
  }

  private static long positive(String name, String value) {
    if (value == null || !value.matches("[0-9]{1,9}")) {
      usage(name + " needs a whole number, got " + (value == null ? "nothing" : "'" + value + "'"));
    }
    return Long.parseLong(value);
  }

  private static void usage(String problem) {
    System.err.println("harness-abuse: " + problem);
    System.err.println("usage: ./spillway harness-abuse [--seconds N] [--resend-micros N] [--warmup-seconds N]"
        + " [--honest-sessions N] [--jdk-scheduler] [--flood-sessions | --forge-deregistrations] [--out DIR]");
    System.exit(2);
  }

  private static void run(long windowNanos, long resendNanos, long warmupMillis, int honestSessions,
      boolean jdkScheduler, Abuse abuse, Path out) throws Exception {
    Window alone;
    Window beside;
    Window besideHonest;
    Window aloneAgain;
    AbuseWorkload.Honest honest;
    AbuseWorkload.Honest heavy;
    AbuseWorkload.Honest forgerCalls = null;
    // what only one abuse has: filled in its branch, printed after the served counts
    Map<String, Object> abuseColumns = new LinkedHashMap<>();
    String greedyLedger;
    String heavyLedger;
    Map<String, String> last;
    boolean pin = HarnessMain.ServerProcess.mayPin();
    // the honest sessions are 1..N, so the forger's own session, named after them, is N + 1
    long besideId = abuse == Abuse.FORGE_DEREGISTRATIONS ? honestSessions + 1 : AbuseWorkload.GREEDY_SESSION;
    long heavyId = AbuseWorkload.GREEDY_SESSION + 1;
    try (HarnessMain.ServerProcess server = HarnessMain.ServerProcess.launch(List.of(),
            AbuseServer.class.getName(), jdkScheduler ? List.of("jdk") : List.of(), "abuse", pin, out);
        SpillwayClient client = AbuseWorkload.client(server.port(), honestSessions, 1)) {
      System.err.println("harness-abuse: server " + (pin ? "on core 0" : "unpinned") + ", clients "
          + (System.getenv("SPILLWAY_PINNED") != null ? "on core 1" : "unpinned") + "; server log in "
          + out.resolve("server-abuse.log"));
      honest = new AbuseWorkload.Honest(client, AbuseWorkload.UNTIL_STOPPED);
      AbuseWorkload.Honest load = honest;
      settle(server, "the honest sessions alone", () -> LongStream.of(load.servedNow()).sum(), warmupMillis);
      alone = measure(server, besideId, honest, () -> 0, windowNanos);
      if (abuse == Abuse.FORGE_DEREGISTRATIONS) {
        try (AbuseWorkload.Forger f = new AbuseWorkload.Forger(server.port(), 1, honestSessions)) {
          forgerCalls = f.own;
          Map<String, String> beforeForging = stats(server, besideId);
          f.forgeEvery(FORGE_PERIOD_NANOS);
          settle(server, "beside the forger", () -> LongStream.of(load.servedNow()).sum() + f.own.served.get(0), 0);
          long forgedBefore = f.forged();
          beside = measure(server, besideId, honest, () -> f.own.served.get(0), windowNanos);
          long forgedInWindow = f.forged() - forgedBefore;
          long forged = f.stopForging();
          f.confirmDecoded();
          // read before any connection closes: closing one ends its sessions, as it should
          long ended = Long.parseLong(stats(server, besideId).get("sessionsEnded"))
              - Long.parseLong(beforeForging.get("sessionsEnded"));
          long honestEnded = 0;
          for (long id = 1; id <= honestSessions; id++) {
            honestEnded += Long.parseLong(server.command("ended " + id).strip());
          }
          abuseColumns.put("greedyRefused", refusals(f.own));
          abuseColumns.put("forgePeriodMicros", FORGE_PERIOD_NANOS / 1_000);
          abuseColumns.put("forgedDeregistrations", forged);
          abuseColumns.put("forgedPerSecondInWindow", Math.round(forgedInWindow / (windowNanos / 1e9)));
          abuseColumns.put("sessionsEndedWhileForging", ended);
          abuseColumns.put("honestSessionsEnded", honestEnded);
          greedyLedger = server.command("ledger " + besideId);
        }
      } else {
        try (AbuseWorkload.Greedy g = new AbuseWorkload.Greedy(server.port(), resendNanos,
            abuse == Abuse.FLOOD_SESSIONS)) {
          // each window's own paths (refusals, holds) compile before it, not inside it
          settle(server, "beside the greedy session", () -> LongStream.of(load.servedNow()).sum() + g.answered(), 0);
          long cpuBefore = g.cpuNanos();
          beside = measure(server, besideId, honest, g.served::get, windowNanos);
          long greedyCpu = g.cpuNanos() - cpuBefore;
          g.stop();
          if (!g.awaitDrained(30, TimeUnit.SECONDS)) {
            System.err.println("harness-abuse: the greedy session's requests were not all answered in 30 s");
          }
          abuseColumns.put("greedyRefusedForCredit", g.refusedForCredit.get());
          abuseColumns.put("greedyRefusedOther", g.refusedOther.get());
          abuseColumns.put("greedyThreadCpuCores", String.format(Locale.ROOT, "%.2f", greedyCpu / 1e9 / (windowNanos / 1e9)));
          greedyLedger = server.command("ledger " + besideId);
        }
      }
      // the yardstick: the same appetite through an honest client's gate, on its own connection
      try (SpillwayClient one = AbuseWorkload.client(server.port(), 1, heavyId)) {
        heavy = new AbuseWorkload.Honest(one, AbuseWorkload.UNTIL_STOPPED);
        AbuseWorkload.Honest ninth = heavy;
        settle(server, "beside an honest ninth",
            () -> LongStream.of(load.servedNow()).sum() + ninth.served.get(0), 0);
        besideHonest = measure(server, heavyId, honest, () -> heavy.served.get(0), windowNanos);
        heavy.stop();
        heavy.awaitEnded(30, TimeUnit.SECONDS);
        heavyLedger = server.command("ledger " + heavyId);
      }
      aloneAgain = measure(server, besideId, honest, () -> 0, windowNanos);
      honest.stop();
      honest.awaitEnded(30, TimeUnit.SECONDS);
      last = stats(server, besideId);
    }
    double seconds = windowNanos / 1e9;
    Map<String, Object> row = new LinkedHashMap<>();
    row.put("scheme", "spillway");
    row.put("seconds", windowNanos / 1_000_000_000);
    row.put("resendMicros", resendNanos / 1_000);
    row.put("honestSessions", honestSessions);
    row.put("dispatcher", jdkScheduler ? "jdk-scheduler" : "default");
    row.put("abuse", abuse.label);
    row.put("layout", pin && System.getenv("SPILLWAY_PINNED") != null ? "server:core0,clients:core1" : "unpinned");
    row.put("greedyServed", beside.besideServed());
    abuseColumns.entrySet().stream().filter(e -> e.getKey().startsWith("greedyRefused"))
        .forEach(e -> row.put(e.getKey(), e.getValue()));
    row.put("sameAppetiteHonestServed", besideHonest.besideServed());
    row.put("honestBest", beside.best());
    row.put("honestMedian", beside.median());
    row.put("honestMedianBesideHonest", besideHonest.median());
    row.put("greedyOverMedian", String.format(Locale.ROOT, "%.2f",
        (double) beside.besideServed() / Math.max(1, beside.median())));
    row.put("honestGoodRpsBesideGreedy", Math.round(beside.honestGood() / seconds));
    row.put("honestGoodRpsBesideHonest", Math.round(besideHonest.honestGood() / seconds));
    row.put("honestGoodRpsAlone", Math.round(alone.honestGood() / seconds));
    row.put("honestGoodRpsAloneAfter", Math.round(aloneAgain.honestGood() / seconds));
    Window[] three = {alone, beside, besideHonest};
    row.put("clientCpuCoresAloneBesideGreedyBesideHonest", perWindow(three, w -> w.clientCpuNanos() / 1e9 / seconds));
    row.put("serverCpuCoresAloneBesideGreedyBesideHonest",
        perWindow(three, w -> w.serverDelta("cpuNanos") / 1e9 / seconds));
    row.put("serverLoopCores", perWindow(three, w -> w.serverDelta("loopCpuNanos") / 1e9 / seconds));
    row.put("serverCarrierCores", perWindow(three, w -> w.serverDelta("carrierCpuNanos") / 1e9 / seconds));
    row.put("serverServedRps", perWindow(three, w -> (Arrays.stream(w.honestServed()).sum() + w.besideServed()) / seconds));
    row.put("gateDecisionsPerSecond", perWindow(three, w -> (w.serverDelta("gateAdmitted")
        + w.serverDelta("gateRefusedForCredit") + w.serverDelta("gateDroppedByAqm")) / seconds));
    row.put("gateRefusedForCreditPerSecond", perWindow(three, w -> w.serverDelta("gateRefusedForCredit") / seconds));
    row.put("gateDroppedByAqmPerSecond", perWindow(three, w -> w.serverDelta("gateDroppedByAqm") / seconds));
    row.put("greedyRefusedPerSecond", Math.round(beside.serverDelta("refusedForCredit") / seconds));
    row.put("greedyAdmittedPerSecond", Math.round(beside.serverDelta("admitted") / seconds));
    row.put("poolMean", perWindow(three, w -> Double.parseDouble(w.server("poolMean"))));
    row.put("poolMin", perWindow(three, w -> Double.parseDouble(w.server("poolMin"))));
    row.put("issuedMean", perWindow(three, w -> Double.parseDouble(w.server("issuedMean"))));
    abuseColumns.entrySet().stream().filter(e -> !e.getKey().startsWith("greedyRefused"))
        .forEach(e -> row.put(e.getKey(), e.getValue()));
    row.put("honestRefused", refusals(honest));
    row.put("sameAppetiteHonestRefusedForCredit", besideHonest.serverDelta("refusedForCredit"));
    List<AbuseWorkload.Honest> callers = forgerCalls == null ? List.of(honest, heavy) : List.of(honest, heavy, forgerCalls);
    row.put("honestFailed", callers.stream().mapToLong(h -> h.failed.get()).sum());
    row.put("lost", callers.stream().mapToLong(h -> h.issued.get() - h.ended.get()).sum());
    row.put("endedTwice", callers.stream().mapToLong(h -> h.endedTwice.get()).sum());
    row.put("windowRuleViolations", last.get("violations"));
    System.out.println("ABUSE-ROW greedy-socket " + row.entrySet().stream()
        .map(e -> e.getKey() + "=" + e.getValue()).collect(Collectors.joining(" ")));
    System.out.println("ABUSE-LEDGER " + (abuse == Abuse.FORGE_DEREGISTRATIONS ? "forger's own session " : "greedy session ")
        + greedyLedger);
    System.out.println("ABUSE-LEDGER same-appetite honest session " + heavyLedger);
  }

  /** An {@link AbuseWorkload.Honest}'s refused calls by status, as {@code {STATUS:count,...}}. */
  private static String refusals(AbuseWorkload.Honest calls) {
    return calls.refused.entrySet().stream()
        .map(e -> e.getKey() + ":" + e.getValue()).collect(Collectors.joining(",", "{", "}"));
  }

  /**
   * Runs the load as it is for {@code fixedMillis}, then in one-second slices until both JVMs' JITs
   * are quiet ({@link SteadyCapacity#warm}): a server JVM compiling on its one core serves less, and
   * each window brings paths of its own (the greedy session's refusals, a ninth session's grants).
   */
  private static void settle(HarnessMain.ServerProcess server, String what, LongSupplier answered,
      long fixedMillis) throws Exception {
    Thread.sleep(fixedMillis);
    SteadyCapacity.Slices warm = SteadyCapacity.warm(slice -> {
      long before = answered.getAsLong();
      Thread.sleep(TimeUnit.NANOSECONDS.toMillis(SteadyCapacity.SLICE_NANOS));
      return answered.getAsLong() - before;
    }, () -> SteadyCapacity.withOwnJit(server.compileMillis()), MAX_WARM_SLICES);
    System.err.println("harness-abuse: settled " + what + " for " + (fixedMillis / 1000 + warm.count()) + " s ("
        + (warm.settled() ? "until the JITs were quiet" : "NOT quiet: may still compile in the window")
        + "; per slice, calls answered / ms the JITs compiled: " + warm.trace() + ")");
  }

  /** A value for each window, slash-separated, two decimals. */
  private static String perWindow(Window[] windows, java.util.function.ToDoubleFunction<Window> value) {
    return Arrays.stream(windows).map(w -> String.format(Locale.ROOT, "%.2f", value.applyAsDouble(w)))
        .collect(Collectors.joining("/"));
  }

  /**
   * One window of load: what the honest sessions and, beside them, {@code besideSession} (greedy,
   * or honest with the same appetite, or absent) were served in it, and what the server counted.
   */
  private static Window measure(HarnessMain.ServerProcess server, long besideSession,
      AbuseWorkload.Honest honest, LongSupplier beside, long windowNanos) throws Exception {
    Map<String, String> serverBefore = stats(server, besideSession);
    long[] servedBefore = honest.servedNow();
    long goodBefore = honest.goodNow();
    long besideBefore = beside.getAsLong();
    long cpuBefore = processCpuNanos();
    Thread.sleep(TimeUnit.NANOSECONDS.toMillis(windowNanos)); // the window is a span of load
    long[] served = honest.servedNow();
    long good = honest.goodNow() - goodBefore;
    long besideServed = beside.getAsLong() - besideBefore;
    long cpu = processCpuNanos() - cpuBefore;
    for (int i = 0; i < served.length; i++) {
      served[i] -= servedBefore[i];
    }
    return new Window(served, good, besideServed, cpu, serverBefore, stats(server, besideSession));
  }

  /** The server's {@code abuse-stats} for a session ({@link AbuseServer}), by key. */
  private static Map<String, String> stats(HarnessMain.ServerProcess server, long session) throws IOException {
    Map<String, String> out = new LinkedHashMap<>();
    for (String pair : server.command("abuse-stats " + session).strip().split(" ")) {
      int eq = pair.indexOf('=');
      out.put(pair.substring(0, eq), pair.substring(eq + 1));
    }
    return out;
  }

  /** CPU time of this JVM (the clients), in nanoseconds. */
  private static long processCpuNanos() {
    return ((com.sun.management.OperatingSystemMXBean)
        java.lang.management.ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
  }
}
