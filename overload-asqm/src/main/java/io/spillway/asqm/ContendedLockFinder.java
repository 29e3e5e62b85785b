package io.spillway.asqm;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedClass;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedStackTrace;
import jdk.jfr.consumer.RecordingFile;

/**
 * Finds the locks worth wrapping in {@link BudgetedLock}: run the service under load with the JDK
 * Flight Recorder on, then rank every lock by the time threads spent queueing for it (Protego
 * §4, "Identifying contended locks": measure per-lock queueing delay rather than guess).
 *
 * <p>The JDK already records what is needed: a {@code jdk.ThreadPark} event for every thread that
 * parks behind a {@code java.util.concurrent} lock (the blocker's class and identity), and a
 * {@code jdk.JavaMonitorEnter} event for every contended {@code synchronized}. Waits are grouped
 * per lock instance and labelled with the lock's class and the first application frame that took
 * it. Parks that are not lock queueing are left out: condition waits (an idle pool worker, a
 * consumer waiting for work), timed parks (sleeps, timeouts) and parks with no blocker.
 *
 * <p>Two ways in: {@link #profile} records around a workload in this JVM; {@link #analyze} reads a
 * recording made with {@code -XX:StartFlightRecording} (see {@link #main}), e.g. of a service
 * under a real load test. Record with {@code jdk.ThreadPark#threshold=0ms} and {@code
 * jdk.JavaMonitorEnter#threshold=0ms} to see short waits (the JDK's defaults drop waits under 20
 * ms).
 *
 * <p>Thread-safe: stateless.
 */
public final class ContendedLockFinder {

  private ContendedLockFinder() { }

  /**
   * One lock's contention.
   *
   * @param lock the lock's class (e.g. {@code ReentrantLock$NonfairSync}, or the monitor's class)
   * @param site the first application frame that waited for it
   * @param waits how many waits were recorded
   * @param totalWaitNanos their summed duration: the ranking key
   * @param maxWaitNanos the longest single wait
   */
  public record LockContention(String lock, String site, long waits, long totalWaitNanos, long maxWaitNanos) {
    /** The mean wait. */
    public long meanWaitNanos() {
      return waits == 0 ? 0 : totalWaitNanos / waits;
    }
  }

  /**
   * Records lock waits while {@code workload} runs on the calling thread (and whatever threads it
   * drives), then ranks them, most total waiting first.
   */
  public static List<LockContention> profile(Runnable workload) throws IOException {
    Path file = Files.createTempFile("spillway-locks", ".jfr");
    try (Recording recording = new Recording()) {
      recording.enable("jdk.ThreadPark").withThreshold(Duration.ZERO).withStackTrace();
      recording.enable("jdk.JavaMonitorEnter").withThreshold(Duration.ZERO).withStackTrace();
      recording.start();
      try {
        workload.run();
      } finally {
        recording.stop();
        recording.dump(file);
      }
      return analyze(file);
    } finally {
      Files.deleteIfExists(file);
    }
  }

  /** Ranks the lock waits in a JFR recording, most total waiting first. */
  public static List<LockContention> analyze(Path recording) throws IOException {
    Map<Long, Accumulator> byLock = new HashMap<>();
    for (RecordedEvent e : RecordingFile.readAllEvents(recording)) {
      String type = e.getEventType().getName();
      String lockClass;
      if (type.equals("jdk.ThreadPark")) {
        RecordedClass blocker = e.getClass("parkedClass");
        if (blocker == null || e.getLong("timeout") > 0 || e.getLong("until") > 0
            || blocker.getName().endsWith("ConditionObject") || isSignal(blocker.getName())) {
          continue;
        }
        lockClass = blocker.getName();
      } else if (type.equals("jdk.JavaMonitorEnter")) {
        RecordedClass monitor = e.getClass("monitorClass");
        lockClass = monitor == null ? "?" : monitor.getName();
      } else {
        continue;
      }
      long address = e.getLong("address");
      long nanos = e.getDuration().toNanos();
      Accumulator a = byLock.computeIfAbsent(address, k -> new Accumulator(lockClass));
      a.add(nanos, applicationSite(e.getStackTrace()));
    }
    List<LockContention> ranked = new ArrayList<>();
    for (Accumulator a : byLock.values()) {
      ranked.add(a.result());
    }
    ranked.sort(Comparator.comparingLong(LockContention::totalWaitNanos).reversed());
    return ranked;
  }

  /** The first frame outside the JDK and Spillway's own lock wrappers. */
  static String applicationSite(RecordedStackTrace stack) {
    if (stack == null) {
      return "?";
    }
    for (RecordedFrame f : stack.getFrames()) {
      if (!f.isJavaFrame()) {
        continue;
      }
      String type = f.getMethod().getType().getName();
      if (type.startsWith("java.") || type.startsWith("jdk.") || type.startsWith("sun.")
          || isLockWrapper(type)) {
        continue;
      }
      return type + "." + f.getMethod().getName() + ":" + f.getLineNumber();
    }
    return "?";
  }

  /**
   * Synchronizers a thread parks on to wait for an event, not to enter a critical section: a
   * latch, a future, a phaser, a hand-off queue. Waiting on them is not lock queueing (a server's
   * main thread awaiting shutdown would otherwise rank first).
   */
  static boolean isSignal(String blockerClass) {
    return blockerClass.startsWith("java.util.concurrent.CountDownLatch")
        || blockerClass.startsWith("java.util.concurrent.CompletableFuture")
        || blockerClass.startsWith("java.util.concurrent.FutureTask")
        || blockerClass.startsWith("java.util.concurrent.Phaser")
        || blockerClass.startsWith("java.util.concurrent.Exchanger")
        || blockerClass.startsWith("java.util.concurrent.SynchronousQueue")
        || blockerClass.startsWith("java.util.concurrent.LinkedTransferQueue");
  }

  /** Spillway's own lock types, whose frames sit between the application and the JDK's lock. */
  private static boolean isLockWrapper(String type) {
    return type.startsWith("io.spillway.asqm.BudgetedLock") || type.startsWith("io.spillway.asqm.BudgetedCondition")
        || type.startsWith("io.spillway.asqm.WaiterLine");
  }

  /** Prints a ranked table. */
  public static void print(List<LockContention> ranked, int limit, PrintStream out) {
    out.printf(Locale.ROOT, "%-4s %-48s %-56s %9s %12s %10s %10s%n", "rank", "lock", "site", "waits",
        "total_ms", "mean_us", "max_us");
    for (int i = 0; i < Math.min(limit, ranked.size()); i++) {
      LockContention c = ranked.get(i);
      out.printf(Locale.ROOT, "%-4d %-48s %-56s %9d %12.3f %10.1f %10.1f%n", i + 1, c.lock(), c.site(),
          c.waits(), c.totalWaitNanos() / 1e6, c.meanWaitNanos() / 1e3, c.maxWaitNanos() / 1e3);
    }
  }

  /**
   * {@code java -cp ... io.spillway.asqm.ContendedLockFinder RECORDING.jfr [TOP]}: ranks the locks
   * in a recording made with, for example, {@code -XX:StartFlightRecording:filename=app.jfr,
   * jdk.ThreadPark#threshold=0ms,jdk.JavaMonitorEnter#threshold=0ms}.
   */
  public static void main(String[] args) throws IOException {
    if (args.length < 1) {
      System.err.println("usage: ContendedLockFinder RECORDING.jfr [TOP]");
      System.exit(2);
    }
    Path file = Path.of(args[0]);
    if (!Files.isRegularFile(file)) {
      System.err.println("no recording at " + file);
      System.exit(2);
    }
    print(analyze(file), args.length > 1 ? Integer.parseInt(args[1]) : 20, System.out);
  }

  private static final class Accumulator {
    private final String lockClass;
    private final Map<String, Long> sites = new HashMap<>();
    private long waits;
    private long total;
    private long max;

    Accumulator(String lockClass) {
      this.lockClass = lockClass;
    }

    void add(long nanos, String site) {
      waits++;
      total += nanos;
      max = Math.max(max, nanos);
      sites.merge(site, nanos, Long::sum);
    }

    LockContention result() {
      String site = sites.entrySet().stream().max(Map.Entry.comparingByValue())
          .map(Map.Entry::getKey).orElse("?");
      return new LockContention(lockClass, site, waits, total, max);
    }
  }
}
