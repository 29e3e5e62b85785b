package io.spillway.harness;

import io.spillway.api.OverloadMetrics;
import io.spillway.api.Status;
import io.spillway.transport.SpillwayServer;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.LongAdder;

/**
 * The server of {@link SocketAbuseMain} in a JVM of its own: {@link AbuseWorkload#server} with the
 * gate wrapped in a {@link GrantLedger}, as {@code SocketAbuseTest} runs it in-process. The
 * harness pins it to core 0 and its clients to core 1, as every other socket harness does, so a
 * client added to the run takes no CPU from the server.
 *
 * <p>Speaks {@link HarnessServer}'s protocol (the port on the first line, then commands until
 * standard input closes) with two commands of its own:
 *
 * <ul>
 *   <li>{@code abuse-stats SESSION}: this JVM's CPU time so far, in all and on the event loop and
 *       the virtual-thread carriers; the ledger's account of SESSION (zeros before its first
 *       request) and the count of window-rule violations; and the credit pool since the last such
 *       command: C_total's mean, least and most over the gate's pool updates, C_issued's mean, the
 *       sessions at the last update, and how many updates there were
 *       ({@link OverloadMetrics#onCreditPool}; the plain clients' limit reports elsewhere and is
 *       not counted); and the gate's decisions on every session's requests
 *       so far, admitted, refused for credit and dropped by AQM ({@link OverloadMetrics#onAdmission});
 *       and the sessions the gate was told to deregister so far, any session ({@code
 *       sessionsEnded}). Space-separated {@code key=value}.
 *   <li>{@code ledger SESSION}: the ledger's account of SESSION as {@link GrantLedger.Account}
 *       prints it, or {@code none}.
 *   <li>{@code ended SESSION}: how many times the gate was told to deregister SESSION so far.
 * </ul>
 *
 * <p>Usage: {@code AbuseServer [jdk]}: requests run on the server's default dispatcher, one Loom
 * carrier whose queue delay the gate sees (the harness starts this JVM opened for it); with {@code
 * jdk}, on the JDK's virtual-thread scheduler, whose queue the gate does not see.
 */
public final class AbuseServer {

  private AbuseServer() { }

  public static void main(String[] args) throws Exception {
    HarnessServer.quietStdout();
    GrantLedger ledger = new GrantLedger(AbuseWorkload.scheme());
    GateReadings gate = new GateReadings();
    boolean jdk = args.length > 0 && args[0].equals("jdk");
    try (ExecutorService dispatcher = jdk ? Executors.newVirtualThreadPerTaskExecutor() : null;
        SpillwayServer server = AbuseWorkload.server(ledger, gate, dispatcher)) {
      System.err.println("abuse server: " + AbuseWorkload.scheme() + ", transport " + server.transport()
          + ", threading " + server.threading() + ", dispatcher " + (jdk ? "the JDK's virtual-thread scheduler (queue not seen)" : "default")
          + ", " + Runtime.getRuntime().availableProcessors()
          + " processor(s) visible");
      HarnessServer.announce(server.port());
      HarnessServer.serveCommands(command -> {
        String[] words = command.split(" ");
        if (words.length != 2 || !words[1].matches("[0-9]{1,18}")) {
          return null;
        }
        long session = Long.parseLong(words[1]);
        return switch (words[0]) {
          case "abuse-stats" -> cpu() + " " + account(ledger, session) + " " + gate.drain()
              + " sessionsEnded=" + ledger.deregistrations();
          case "ledger" -> String.valueOf(ledger.account(session));
          case "ended" -> String.valueOf(ledger.deregistrations(session));
          default -> null;
        };
      });
    }
  }

  /** This JVM's CPU time, and that of its event loops and its virtual-thread carriers, ns. */
  private static String cpu() {
    long process = ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
        .getProcessCpuTime();
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    long loop = 0;
    long carriers = 0;
    for (ThreadInfo t : threads.getThreadInfo(threads.getAllThreadIds())) {
      if (t == null) {
        continue;
      }
      long nanos = Math.max(0, threads.getThreadCpuTime(t.getThreadId()));
      // Netty names its loops after the group class (multiThreadIoEventLoopGroup-N-M); the default
      // virtual-thread scheduler's carriers are ForkJoinPool-N-worker-M, CarrierDispatcher's
      // spillway-carrier-N-M
      String name = t.getThreadName();
      if (name.toLowerCase(Locale.ROOT).contains("eventloop")) {
        loop += nanos;
      } else if (name.startsWith("ForkJoinPool") || name.startsWith("spillway-carrier")) {
        carriers += nanos;
      }
    }
    return "cpuNanos=" + process + " loopCpuNanos=" + loop + " carrierCpuNanos=" + carriers;
  }

  private static String account(GrantLedger ledger, long session) {
    GrantLedger.Account a = ledger.account(session);
    return "admitted=" + (a == null ? 0 : a.admitted()) + " refusedForCredit=" + (a == null ? 0 : a.refusedForCredit())
        + " admittedBeyondGrant=" + (a == null ? 0 : a.admittedBeyondGrant())
        + " refusedWithRoom=" + (a == null ? 0 : a.refusedWithRoom()) + " violations=" + ledger.violations().size();
  }

  /**
   * What the gate reports: its decisions, and the credit pool at each update. Thread-safe: the
   * decisions are counted on adders, the pool's updates (a few thousand a second) under the monitor.
   */
  private static final class GateReadings implements OverloadMetrics {
    private final LongAdder admitted = new LongAdder();
    private final LongAdder refusedForCredit = new LongAdder();
    private final LongAdder droppedByAqm = new LongAdder();
    private long updates;
    private long totalSum;
    private long totalMin = Long.MAX_VALUE;
    private long totalMax;
    private long issuedSum;
    private int sessions;

    @Override
    public void onAdmission(Status decision) {
      switch (decision) {
        case OK -> admitted.increment();
        case REJECTED_NO_CREDIT -> refusedForCredit.increment();
        case REJECTED_AQM -> droppedByAqm.increment();
        default -> { }
      }
    }

    @Override
    public synchronized void onCreditPool(long total, long issued, int sessionCount) {
      updates++;
      totalSum += total;
      totalMin = Math.min(totalMin, total);
      totalMax = Math.max(totalMax, total);
      issuedSum += issued;
      sessions = sessionCount;
    }

    /** The readings since the last call, and starts again. */
    synchronized String drain() {
      String out = String.format(Locale.ROOT, "poolMean=%.1f poolMin=%d poolMax=%d issuedMean=%.1f sessions=%d"
              + " poolUpdates=%d", updates == 0 ? 0.0 : (double) totalSum / updates, updates == 0 ? 0 : totalMin,
          totalMax, updates == 0 ? 0.0 : (double) issuedSum / updates, sessions, updates)
          + " gateAdmitted=" + admitted.sum() + " gateRefusedForCredit=" + refusedForCredit.sum()
          + " gateDroppedByAqm=" + droppedByAqm.sum();
      updates = 0;
      totalSum = 0;
      totalMin = Long.MAX_VALUE;
      totalMax = 0;
      issuedSum = 0;
      return out;
    }
  }
}
