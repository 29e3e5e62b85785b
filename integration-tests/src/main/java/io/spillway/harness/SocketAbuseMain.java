package io.spillway.harness;

import io.spillway.transport.SpillwayClient;
import io.spillway.transport.SpillwayServer;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.stream.Collectors;

/**
 * How much a client that ignores its credit window is served on real sockets, and what it costs
 * the honest sessions beside it ({@link AbuseWorkload}): four measured windows of the same length,
 * back to back after a warm-up: the honest sessions alone; with the greedy session beside them;
 * with, instead, an honest session of the same appetite (through its gate, on a connection of its
 * own: the yardstick the admission contract uses); alone again. Prints one {@code ABUSE-ROW} line
 * (the rows of docs/results/reliability.md): what the greedy session was served against the
 * same-appetite honest one, the best and the median honest session, the honest sessions' goodput
 * (served within the SLO) in each window, the CPU the JVM used, and the server's ledger of the
 * greedy session ({@link GrantLedger}). Server and clients share this JVM and the machine's cores,
 * so these are measurements, not checks; {@code SocketAbuseTest} asserts the behaviour.
 *
 * <p>{@code ./spillway harness-abuse [--seconds N] [--resend-micros N] [--warmup-seconds N]}:
 * each window N seconds (default 3); the greedy session waits that many microseconds before each
 * resend (default 0), to weigh what answering its refusals costs the server; the warm-up
 * (default 6 s) lets the JIT and the credit pool settle.
 */
public final class SocketAbuseMain {

  private SocketAbuseMain() { }

  /** What one measured window saw. */
  private record Window(long[] honestServed, long honestGood, long besideServed, long cpuNanos) {
    long best() {
      return Arrays.stream(honestServed).max().orElse(0);
    }

    long median() {
      long[] sorted = honestServed.clone();
      Arrays.sort(sorted);
      return (sorted[(sorted.length - 1) / 2] + sorted[sorted.length / 2]) / 2;
    }
  }

  public static void main(String[] args) throws Exception {
    long seconds = 3;
    long resendMicros = 0;
    long warmupSeconds = 6;
    for (int i = 0; i < args.length; i++) {
      String value = i + 1 < args.length ? args[i + 1] : null;
      switch (args[i]) {
        case "--seconds" -> seconds = positive(args[i], value);
        case "--resend-micros" -> resendMicros = positive(args[i], value);
        case "--warmup-seconds" -> warmupSeconds = positive(args[i], value);
        default -> usage("unknown argument '" + args[i] + "'");
      }
      i++;
    }
    if (seconds == 0) {
      usage("--seconds must be at least 1");
    }
    run(TimeUnit.SECONDS.toNanos(seconds), TimeUnit.MICROSECONDS.toNanos(resendMicros),
        TimeUnit.SECONDS.toMillis(warmupSeconds));
  }

  private static long positive(String name, String value) {
    if (value == null || !value.matches("[0-9]{1,9}")) {
      usage(name + " needs a whole number, got " + (value == null ? "nothing" : "'" + value + "'"));
    }
    return Long.parseLong(value);
  }

  private static void usage(String problem) {
    System.err.println("harness-abuse: " + problem);
    System.err.println("usage: ./spillway harness-abuse [--seconds N] [--resend-micros N] [--warmup-seconds N]");
    System.exit(2);
  }

  private static void run(long windowNanos, long resendNanos, long warmupMillis) throws Exception {
    GrantLedger ledger = new GrantLedger(AbuseWorkload.scheme());
    Window alone;
    Window beside;
    Window besideHonest;
    Window aloneAgain;
    AbuseWorkload.Greedy greedy;
    AbuseWorkload.Honest honest;
    AbuseWorkload.Honest heavy;
    long greedyCpu;
    String greedyLedger;
    try (SpillwayServer server = AbuseWorkload.server(ledger);
        SpillwayClient client = AbuseWorkload.client(server.port(), AbuseWorkload.HONEST_SESSIONS, 1)) {
      honest = new AbuseWorkload.Honest(client, AbuseWorkload.UNTIL_STOPPED);
      Thread.sleep(warmupMillis);
      alone = measure(honest, () -> 0, windowNanos);
      try (AbuseWorkload.Greedy g = new AbuseWorkload.Greedy(server.port(), resendNanos)) {
        greedy = g;
        long cpuBefore = g.cpuNanos();
        beside = measure(honest, g.served::get, windowNanos);
        greedyCpu = g.cpuNanos() - cpuBefore;
        g.stop();
        if (!g.awaitDrained(30, TimeUnit.SECONDS)) {
          System.err.println("harness-abuse: the greedy session's requests were not all answered in 30 s");
        }
        greedyLedger = String.valueOf(ledger.account(AbuseWorkload.GREEDY_SESSION));
      }
      // the yardstick: the same appetite through an honest client's gate, on its own connection
      try (SpillwayClient one = AbuseWorkload.client(server.port(), 1, AbuseWorkload.GREEDY_SESSION + 1)) {
        heavy = new AbuseWorkload.Honest(one, AbuseWorkload.UNTIL_STOPPED);
        besideHonest = measure(honest, () -> heavy.served.get(0), windowNanos);
        heavy.stop();
        heavy.awaitEnded(30, TimeUnit.SECONDS);
      }
      aloneAgain = measure(honest, () -> 0, windowNanos);
      honest.stop();
      honest.awaitEnded(30, TimeUnit.SECONDS);
    }
    double seconds = windowNanos / 1e9;
    Map<String, Object> row = new LinkedHashMap<>();
    row.put("scheme", "spillway");
    row.put("seconds", windowNanos / 1_000_000_000);
    row.put("resendMicros", resendNanos / 1_000);
    row.put("greedyServed", beside.besideServed());
    row.put("greedyRefusedForCredit", greedy.refusedForCredit.get());
    row.put("greedyRefusedOther", greedy.refusedOther.get());
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
    row.put("cpuCoresAloneBesideGreedyBesideHonest", String.format(Locale.ROOT,
        "%.2f/%.2f/%.2f", alone.cpuNanos() / 1e9 / seconds, beside.cpuNanos() / 1e9 / seconds,
        besideHonest.cpuNanos() / 1e9 / seconds));
    row.put("greedyThreadCpuCores", String.format(Locale.ROOT, "%.2f", greedyCpu / 1e9 / seconds));
    row.put("honestRefused", honest.refused.entrySet().stream()
        .map(e -> e.getKey() + ":" + e.getValue()).collect(Collectors.joining(",", "{", "}")));
    row.put("honestFailed", honest.failed.get() + heavy.failed.get());
    row.put("lost", honest.issued.get() - honest.ended.get() + heavy.issued.get() - heavy.ended.get());
    row.put("endedTwice", honest.endedTwice.get() + heavy.endedTwice.get());
    row.put("windowRuleViolations", ledger.violations().size());
    System.out.println("ABUSE-ROW greedy-socket " + row.entrySet().stream()
        .map(e -> e.getKey() + "=" + e.getValue()).collect(Collectors.joining(" ")));
    System.out.println("ABUSE-LEDGER greedy session " + greedyLedger);
  }

  /**
   * One window of load: what the honest sessions and, beside them, session 1,000,000 (greedy, or
   * honest with the same appetite, or absent) were served in it.
   */
  private static Window measure(AbuseWorkload.Honest honest, LongSupplier beside, long windowNanos)
      throws InterruptedException {
    long[] servedBefore = honest.servedNow();
    long goodBefore = honest.goodNow();
    long besideBefore = beside.getAsLong();
    long cpuBefore = processCpuNanos();
    Thread.sleep(TimeUnit.NANOSECONDS.toMillis(windowNanos)); // the window is a span of load
    long[] served = honest.servedNow();
    for (int i = 0; i < served.length; i++) {
      served[i] -= servedBefore[i];
    }
    return new Window(served, honest.goodNow() - goodBefore, beside.getAsLong() - besideBefore,
        processCpuNanos() - cpuBefore);
  }

  /** CPU time of this JVM (server, clients and all), in nanoseconds. */
  private static long processCpuNanos() {
    return ((com.sun.management.OperatingSystemMXBean)
        java.lang.management.ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
  }
}
