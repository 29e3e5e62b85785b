package io.spillway.asqm;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Lock waits estimated from a series of thread dumps: the part of {@link ContendedLockFinder} that
 * sees virtual threads.
 *
 * <p>Why dumps: the JDK Flight Recorder records no {@code jdk.ThreadPark} event when a virtual
 * thread parks behind a {@code java.util.concurrent} lock, and no {@code jdk.JavaMonitorEnter} when
 * one blocks on a contended {@code synchronized} (JDK 25: the parks go through
 * {@code VirtualThread.park}, not the carrier's {@code Unsafe.park}, which is what JFR instruments).
 * The JDK's thread dump ({@code HotSpotDiagnosticMXBean.dumpThreads}, {@code jcmd
 * Thread.dump_to_file}) does list virtual threads, each with what it is parked on ("parking to wait
 * for &lt;...&gt;") or blocked on ("waiting to lock &lt;...&gt;"). Sampled at intervals, a thread
 * seen waiting for a lock in a sample stands for the time since the previous sample: the sum over
 * samples estimates each lock's total queueing time (Protego §4 ranks locks by it), without a
 * per-wait cost on the service.
 *
 * <p>The same filters as for recorded waits apply (condition waits, timed waits and signals are
 * not lock queueing; {@link ContendedLockFinder#isSignal}). A thread seen waiting for the same lock
 * in consecutive samples is one wait; its length is the sum of those samples' weights.
 *
 * <p>Pure: text and weights in, ranking out. Not thread-safe; one sampler thread feeds it.
 */
final class ThreadDumpLockWaits {

  /**
   * One thread queueing for a lock in one dump.
   *
   * @param threadId the dump's thread id ({@code #N})
   * @param lock the lock's identity as the dump prints it ({@code Class@hash})
   * @param lockClass the lock's class
   * @param site the first application frame, as {@link ContendedLockFinder#applicationSite}
   *     writes it ({@code type.method:line})
   */
  record LockWait(long threadId, String lock, String lockClass, String site) { }

  private final Map<String, LockTally> byLock = new HashMap<>();
  /** Each thread's wait at the previous sample, to join consecutive sightings into one wait. */
  private Map<Long, Wait> waitingBefore = new HashMap<>();
  private long samples;

  /** How many dumps were added. */
  long samples() {
    return samples;
  }

  /**
   * Adds one dump.
   *
   * @param dump a thread dump in the JDK's plain-text format
   * @param weightNanos the time this sample stands for: since the previous sample
   * @param virtualOnly whether to count virtual threads only (platform threads' waits recorded by
   *     JFR elsewhere)
   */
  void add(String dump, long weightNanos, boolean virtualOnly) {
    add(parse(dump, virtualOnly), weightNanos);
  }

  void add(List<LockWait> waits, long weightNanos) {
    samples++;
    Map<Long, Wait> waitingNow = new HashMap<>();
    for (LockWait w : waits) {
      LockTally lock = byLock.computeIfAbsent(w.lock(), k -> new LockTally(w.lockClass()));
      Wait wait = waitingBefore.get(w.threadId());
      if (wait == null || wait.lock != lock) {
        wait = new Wait(lock);
        lock.newWait();
      }
      wait.length += weightNanos;
      lock.add(w.site(), weightNanos, wait.length);
      waitingNow.put(w.threadId(), wait);
    }
    waitingBefore = waitingNow;
  }

  /** The locks seen, most estimated waiting first. */
  List<ContendedLockFinder.LockContention> ranked() {
    return LockTally.ranked(byLock.values(), true);
  }

  /**
   * The threads of one plain-text dump that queue for a lock: {@code BLOCKED} on a monitor's
   * entry, or {@code WAITING} (untimed) parked on a synchronizer that is neither a condition nor a
   * signal.
   */
  static List<LockWait> parse(String dump, boolean virtualOnly) {
    List<LockWait> waits = new ArrayList<>();
    String[] lines = dump.split("\n");
    int i = 0;
    while (i < lines.length) {
      String header = lines[i++];
      if (!header.startsWith("#")) {
        continue;
      }
      int close = header.lastIndexOf('"');
      int space = header.indexOf(' ');
      if (close < 0 || space < 0) {
        continue;
      }
      long threadId;
      try {
        threadId = Long.parseLong(header.substring(1, space));
      } catch (NumberFormatException e) {
        continue;
      }
      String[] rest = header.substring(close + 1).trim().split(" ");
      boolean virtual = rest.length > 0 && rest[0].equals("virtual");
      String state = rest.length > (virtual ? 1 : 0) ? rest[virtual ? 1 : 0] : "";
      String lock = null;
      String site = null;
      for (; i < lines.length && !lines[i].startsWith("#"); i++) {
        String line = lines[i].trim();
        if (lock == null && (line.startsWith("- parking to wait for <") || line.startsWith("- waiting to lock <")
            || line.startsWith("- waiting to re-lock in wait() <"))) {
          int end = line.lastIndexOf('>');
          if (end < 0) { // a dump cut short in this line: the lock cannot be named
            continue;
          }
          lock = line.substring(line.indexOf('<') + 1, end);
        } else if (site == null && line.startsWith("at ")) {
          site = applicationSite(line.substring(3));
        }
      }
      if (lock == null || (virtualOnly && !virtual)) {
        continue;
      }
      String lockClass = lock.contains("@") ? lock.substring(0, lock.lastIndexOf('@')) : lock;
      boolean monitor = state.equals("BLOCKED");
      boolean parked = state.equals("WAITING") && !lockClass.endsWith("ConditionObject")
          && !ContendedLockFinder.isSignal(lockClass);
      if (monitor || parked) {
        waits.add(new LockWait(threadId, lock, lockClass, site == null ? "?" : site));
      }
    }
    return waits;
  }

  /**
   * {@code pkg.Type.method:line} for a dump's frame ({@code module/pkg.Type.method(File.java:line)}),
   * or null where the frame is the JDK's or one of Spillway's lock wrappers.
   */
  static String applicationSite(String frame) {
    int paren = frame.indexOf('(');
    String method = paren < 0 ? frame : frame.substring(0, paren);
    int slash = method.indexOf('/');
    if (slash >= 0) {
      method = method.substring(slash + 1);
    }
    int dot = method.lastIndexOf('.');
    String type = dot < 0 ? method : method.substring(0, dot);
    if (ContendedLockFinder.isPlatformOrWrapper(type)) {
      return null;
    }
    String line = "";
    if (paren >= 0) {
      int colon = frame.lastIndexOf(':');
      int end = frame.lastIndexOf(')');
      if (colon > paren && end > colon) {
        line = frame.substring(colon + 1, end);
      }
    }
    return line.isEmpty() ? method : method + ":" + line;
  }

  /** One thread's wait for one lock, seen in one or more consecutive samples. */
  private static final class Wait {
    final LockTally lock;
    long length;

    Wait(LockTally lock) {
      this.lock = lock;
    }
  }
}
