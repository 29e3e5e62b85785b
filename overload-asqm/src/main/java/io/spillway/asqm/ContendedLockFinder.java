package io.spillway.asqm;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
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
 * <p>Virtual threads are the exception: JFR records neither event when a virtual thread waits
 * (JDK 25), so a service that runs its requests on virtual threads (Spillway's carrier dispatcher,
 * Spring's {@code spring.threads.virtual.enabled}) would look uncontended. Their waits are
 * estimated from thread dumps taken at intervals ({@code ThreadDumpLockWaits}): each dump lists
 * what every virtual thread is parked or blocked on, and a thread seen waiting stands for the time
 * since the previous dump. Those rows are marked {@link LockContention#sampled}; a lock that both
 * kinds of thread wait for has a row of each.
 *
 * <p>Three ways in: {@link #profile} records around a workload in this JVM (JFR for platform
 * threads, dumps for virtual threads); {@link #analyze} reads a recording made with {@code
 * -XX:StartFlightRecording} (see {@link #main}), e.g. of a service under a real load test; {@link
 * #sample} samples a running JVM on this machine by its process id, virtual and platform threads
 * alike, with nothing added to its command line. Record with {@code jdk.ThreadPark#threshold=0ms}
 * and {@code jdk.JavaMonitorEnter#threshold=0ms} to see short waits (the JDK's defaults drop waits
 * under 20 ms).
 *
 * <p><b>Sampling can crash the sampled JVM, rarely.</b> The dumps come from HotSpot's thread
 * dumper ({@code HotSpotDiagnosticMXBean.dumpThreads}), which on JDK 25 can fail with a fatal
 * error when it catches a virtual thread mounting or unmounting, or one that has just ended
 * (OpenJDK bugs JDK-8359870 and JDK-8364343). The risk grows with the number of dumps and of
 * virtual-thread switches between them. Sample a JVM you can afford to restart (a canary or a
 * staging instance under a replayed load), not the only instance of a service; platform threads
 * alone are covered without dumps by a JFR recording ({@link #analyze}).
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
   * @param waits how many waits were recorded (sampled: how many were seen)
   * @param totalWaitNanos their summed duration: the ranking key
   * @param maxWaitNanos the longest single wait
   * @param sampled whether the figures are estimated from thread dumps (virtual threads, or a
   *     process sampled by id) rather than recorded wait by wait; an estimate resolves waits no
   *     shorter than the interval between dumps, and counts a thread's wait once however many
   *     dumps saw it
   */
  public record LockContention(String lock, String site, long waits, long totalWaitNanos, long maxWaitNanos,
      boolean sampled) {
    /** The mean wait. */
    public long meanWaitNanos() {
      return waits == 0 ? 0 : totalWaitNanos / waits;
    }
  }

  /** The interval between thread dumps where none is given. */
  public static final Duration DEFAULT_SAMPLE_INTERVAL = Duration.ofMillis(10);

  /**
   * Records lock waits while {@code workload} runs on the calling thread (and whatever threads it
   * drives), then ranks them, most total waiting first: platform threads' waits from JFR, virtual
   * threads' from thread dumps every {@link #DEFAULT_SAMPLE_INTERVAL} (or less often where a dump
   * takes long; {@code LockWaitSampler}).
   */
  public static List<LockContention> profile(Runnable workload) throws IOException {
    try (LockWaitSampler.DumpSource dumps = LockWaitSampler.thisJvm()) {
      return profile(workload, dumps, DEFAULT_SAMPLE_INTERVAL);
    }
  }

  static List<LockContention> profile(Runnable workload, LockWaitSampler.DumpSource dumps, Duration interval)
      throws IOException {
    Path file = Files.createTempFile("spillway-locks", ".jfr");
    Throwable primary = null;
    try {
      return record(workload, dumps, interval, file);
    } catch (Throwable t) {
      primary = t;
      throw t;
    } finally {
      try {
        Files.deleteIfExists(file);
      } catch (IOException | RuntimeException e) {
        if (primary == null) {
          throw e;
        }
        primary.addSuppressed(e); // the failure that ended the profile is the one to report
      }
    }
  }

  /**
   * Records into {@code file} around {@code workload}. The first failure is the one thrown: the
   * workload's, with a failure to stop the sampler suppressed in it, or else the sampler's, the
   * recording's or the analysis's (the recording's close then rides along as suppressed).
   */
  private static List<LockContention> record(Runnable workload, LockWaitSampler.DumpSource dumps,
      Duration interval, Path file) throws IOException {
    try (Recording recording = new Recording()) {
      recording.enable("jdk.ThreadPark").withThreshold(Duration.ZERO).withStackTrace();
      recording.enable("jdk.JavaMonitorEnter").withThreshold(Duration.ZERO).withStackTrace();
      LockWaitSampler sampler = new LockWaitSampler(dumps, interval, true);
      recording.start();
      sampler.start();
      try {
        workload.run();
      } catch (Throwable workloadFailure) {
        try {
          sampler.stop(); // its thread must end either way
        } catch (IOException | RuntimeException e) {
          workloadFailure.addSuppressed(e);
        }
        throw workloadFailure;
      }
      List<LockContention> sampled = sampler.stop();
      recording.stop();
      recording.dump(file);
      return merge(analyze(file), sampled);
    }
  }

  /**
   * Samples the lock waits of another JVM on this machine for {@code duration}, from thread dumps
   * taken about every {@code interval}, and ranks them, most estimated waiting first. Virtual and
   * platform threads are both counted; every row is {@link LockContention#sampled}. The target
   * needs no flag: the Attach API starts its local management agent (it must run as the same user
   * and not disable attach). Needs the {@code jdk.attach} and {@code java.management.rmi} modules,
   * present on the class path of any full JDK.
   */
  public static List<LockContention> sample(long pid, Duration duration, Duration interval)
      throws IOException, InterruptedException {
    return sample(pid, duration, interval, false);
  }

  /**
   * As {@link #sample(long, Duration, Duration)}; {@code virtualThreadsOnly} counts only virtual
   * threads, for a process whose platform threads a JFR recording covers at the same time (their
   * waits would otherwise be counted twice when the two rankings are merged).
   */
  public static List<LockContention> sample(long pid, Duration duration, Duration interval,
      boolean virtualThreadsOnly) throws IOException, InterruptedException {
    if (duration.isNegative() || duration.isZero()) {
      throw new IllegalArgumentException("duration must be positive: " + duration);
    }
    try (LockWaitSampler.DumpSource dumps = LockWaitSampler.process(pid)) {
      return sample(dumps, duration, interval, virtualThreadsOnly);
    }
  }

  static List<LockContention> sample(LockWaitSampler.DumpSource dumps, Duration duration,
      Duration interval, boolean virtualThreadsOnly) throws IOException, InterruptedException {
    LockWaitSampler sampler = new LockWaitSampler(dumps, interval, virtualThreadsOnly).start();
    try {
      Thread.sleep(duration);
    } catch (InterruptedException e) {
      try {
        sampler.stop(); // its thread must end either way; the interrupt is what ended the sample
      } catch (IOException | RuntimeException failure) {
        e.addSuppressed(failure);
      }
      throw e;
    }
    return sampler.stop();
  }

  /** Both rankings in one, most total waiting first. */
  public static List<LockContention> merge(List<LockContention> a, List<LockContention> b) {
    List<LockContention> all = new ArrayList<>(a);
    all.addAll(b);
    all.sort(LockTally.MOST_WAITING_FIRST);
    return all;
  }

  /**
   * Ranks the lock waits in a JFR recording, most total waiting first. Reads the recording one
   * event at a time: a recording of a long run under load holds millions of events, and memory
   * then grows with the locks, not with the events.
   */
  public static List<LockContention> analyze(Path recording) throws IOException {
    Map<Long, LockTally> byLock = new HashMap<>();
    try (RecordingFile file = new RecordingFile(recording)) {
      while (file.hasMoreEvents()) {
        tally(file.readEvent(), byLock);
      }
    }
    return LockTally.ranked(byLock.values(), false);
  }

  /** Adds {@code e} to its lock's tally if it is a wait for a lock. */
  private static void tally(RecordedEvent e, Map<Long, LockTally> byLock) {
    String type = e.getEventType().getName();
    String lockClass;
    if (type.equals("jdk.ThreadPark")) {
      RecordedClass blocker = e.getClass("parkedClass");
      if (blocker == null || e.getLong("timeout") > 0 || e.getLong("until") > 0
          || blocker.getName().endsWith("ConditionObject") || isSignal(blocker.getName())) {
        return;
      }
      lockClass = blocker.getName();
    } else if (type.equals("jdk.JavaMonitorEnter")) {
      RecordedClass monitor = e.getClass("monitorClass");
      lockClass = monitor == null ? "?" : monitor.getName();
    } else {
      return;
    }
    long address = e.getLong("address");
    long nanos = e.getDuration().toNanos();
    LockTally t = byLock.computeIfAbsent(address, k -> new LockTally(lockClass));
    t.newWait();
    t.add(applicationSite(e.getStackTrace()), nanos, nanos);
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
      if (isPlatformOrWrapper(type)) {
        continue;
      }
      return type + "." + f.getMethod().getName() + ":" + f.getLineNumber();
    }
    return "?";
  }

  /**
   * Synchronizers a thread parks on to wait for an event, not to enter a critical section: a
   * latch, a future, a phaser, a hand-off queue, a fork-join pool's idle worker waiting for a task.
   * Waiting on them is not lock queueing (a server's main thread awaiting shutdown, or the idle
   * carriers of virtual threads, would otherwise rank first). A thread joining a fork-join task
   * parks on the task, a future: the JDK's adapters ({@code ForkJoinTask$Adapted...}) and a parallel
   * stream's tasks ({@code java.util.stream}); a task class of the application's own cannot be told
   * from a lock by its name.
   */
  static boolean isSignal(String blockerClass) {
    return blockerClass.startsWith("java.util.concurrent.CountDownLatch")
        || blockerClass.equals("java.util.concurrent.ForkJoinPool")
        || blockerClass.startsWith("java.util.concurrent.ForkJoinTask")
        || blockerClass.startsWith("java.util.stream.")
        || blockerClass.startsWith("java.util.concurrent.CompletableFuture")
        || blockerClass.startsWith("java.util.concurrent.FutureTask")
        || blockerClass.startsWith("java.util.concurrent.Phaser")
        || blockerClass.startsWith("java.util.concurrent.Exchanger")
        || blockerClass.startsWith("java.util.concurrent.SynchronousQueue")
        || blockerClass.startsWith("java.util.concurrent.LinkedTransferQueue");
  }

  /**
   * The JDK's frames and Spillway's own lock types (the budgeted lock, condition, semaphore and
   * data source), whose frames sit between the application and the JDK's lock: a wait is labelled
   * with the first frame that is neither.
   */
  static boolean isPlatformOrWrapper(String type) {
    return type.startsWith("java.") || type.startsWith("jdk.") || type.startsWith("sun.")
        || type.startsWith("io.spillway.asqm.BudgetedLock") || type.startsWith("io.spillway.asqm.BudgetedCondition")
        || type.startsWith("io.spillway.asqm.BudgetedSemaphore")
        || type.startsWith("io.spillway.asqm.BudgetedDataSource")
        || type.startsWith("io.spillway.asqm.WaiterLine");
  }

  /**
   * Prints a ranked table. Sampled rows (estimates from thread dumps) say so in the last column and
   * give no mean or longest wait: where dumps are further apart than the lock is held, one thread
   * seen waiting in two dumps in a row may have waited twice in between.
   */
  public static void print(List<LockContention> ranked, int limit, PrintStream out) {
    out.printf(Locale.ROOT, "%-4s %-48s %-56s %9s %12s %10s %10s %s%n", "rank", "lock", "site", "waits",
        "total_ms", "mean_us", "max_us", "how");
    for (int i = 0; i < Math.min(limit, ranked.size()); i++) {
      LockContention c = ranked.get(i);
      String mean = c.sampled() ? "-" : String.format(Locale.ROOT, "%.1f", c.meanWaitNanos() / 1e3);
      String longest = c.sampled() ? "-" : String.format(Locale.ROOT, "%.1f", c.maxWaitNanos() / 1e3);
      out.printf(Locale.ROOT, "%-4d %-48s %-56s %9d %12.3f %10s %10s %s%n", i + 1, c.lock(), c.site(),
          c.waits(), c.totalWaitNanos() / 1e6, mean, longest, c.sampled() ? "sampled" : "recorded");
    }
  }

  /**
   * {@code java -cp ... io.spillway.asqm.ContendedLockFinder RECORDING.jfr [TOP]}: ranks the locks
   * in a recording made with, for example, {@code -XX:StartFlightRecording:filename=app.jfr,
   * jdk.ThreadPark#threshold=0ms,jdk.JavaMonitorEnter#threshold=0ms}.
   *
   * <p>{@code ... ContendedLockFinder --pid PID [--seconds S] [--interval-ms I] [TOP]}: samples the
   * running JVM {@code PID} on this machine for {@code S} seconds (default 10), a thread dump about
   * every {@code I} ms (default 10), and ranks its locks ({@link #sample}); for services whose
   * requests run on virtual threads, which a recording does not show waiting.
   */
  public static void main(String[] args) throws IOException, InterruptedException {
    String usage = "usage: ContendedLockFinder RECORDING.jfr [TOP]\n"
        + "       ContendedLockFinder --pid PID [--seconds S] [--interval-ms I] [TOP]";
    if (args.length < 1) {
      System.err.println(usage);
      System.exit(2);
    }
    if (args[0].equals("--pid")) {
      long pid = -1;
      double seconds = 10;
      long intervalMs = DEFAULT_SAMPLE_INTERVAL.toMillis();
      int top = 20;
      try {
        for (int i = 0; i < args.length; i++) {
          switch (args[i]) {
            case "--pid" -> pid = Long.parseLong(args[++i]);
            case "--seconds" -> seconds = Double.parseDouble(args[++i]);
            case "--interval-ms" -> intervalMs = Long.parseLong(args[++i]);
            default -> top = Integer.parseInt(args[i]);
          }
        }
      } catch (NumberFormatException | ArrayIndexOutOfBoundsException e) {
        System.err.println("bad arguments: " + String.join(" ", args) + "\n" + usage);
        System.exit(2);
      }
      if (pid <= 0 || !(seconds > 0) || intervalMs <= 0 || top <= 0) {
        System.err.println("--pid, --seconds, --interval-ms and TOP must be positive\n" + usage);
        System.exit(2);
      }
      System.err.println("sampling process " + pid + " with thread dumps; on JDK 25 a dump can,"
          + " rarely, crash the sampled JVM (JDK-8359870, JDK-8364343): sample an instance you can"
          + " afford to restart");
      List<LockContention> ranked;
      try {
        ranked = sample(pid, Duration.ofNanos((long) (seconds * 1e9)), Duration.ofMillis(intervalMs));
      } catch (IOException e) {
        System.err.println("cannot sample process " + pid + ": " + e.getMessage());
        System.exit(1);
        return;
      }
      print(ranked, top, System.out);
      return;
    }
    Path file = Path.of(args[0]);
    if (!Files.isRegularFile(file)) {
      System.err.println("no recording at " + file);
      System.exit(2);
    }
    print(analyze(file), args.length > 1 ? Integer.parseInt(args[1]) : 20, System.out);
  }
}
