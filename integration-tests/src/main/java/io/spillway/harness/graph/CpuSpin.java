package io.spillway.harness.graph;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * A node's computation: a busy loop on the calling thread, as the papers' synthetic services do
 * (rajomon-nsdi25 §4: "each service runs a busy-loop to emulate each request's computation").
 *
 * <p>The loop runs until the thread has used the requested <em>CPU</em> time, not until that much
 * wall-clock time has passed. Every service of the graph shares one core, with more worker threads
 * than cores: a thread the kernel preempts mid-spin would, on a wall-clock loop, finish its
 * "computation" while not running, so the graph would seem faster under load than idle. Counting
 * CPU time keeps each request's cost fixed and the core the one bottleneck it is. Where the JVM
 * cannot measure the calling thread's CPU time the loop falls back to wall-clock time: on a JVM
 * without thread CPU time, and on a virtual thread, whose CPU time the JDK's {@code ThreadMXBean}
 * reads as -1 even where platform threads' is measured.
 *
 * <p>Thread-safe; stateless.
 */
public final class CpuSpin {

  private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
  private static final boolean CPU_TIME = cpuTimeAvailable();

  private CpuSpin() { }

  /**
   * Busy-loops for {@code nanos} of this thread's CPU time. Reading thread CPU time is a system
   * call (about a microsecond), so the loop spins on the wall clock for what remains and reads CPU
   * time only at the end of each stretch: twice per call when the thread was not preempted.
   */
  public static void spin(long nanos) {
    if (nanos <= 0) {
      return;
    }
    long cpuStart = CPU_TIME ? THREADS.getCurrentThreadCpuTime() : -1;
    long remaining = nanos;
    while (true) {
      long end = System.nanoTime() + remaining;
      while (System.nanoTime() - end < 0) {
        Thread.onSpinWait();
      }
      if (cpuStart < 0) {
        return; // wall-clock time: this thread's CPU time cannot be read (a virtual thread's)
      }
      remaining = nanos - (THREADS.getCurrentThreadCpuTime() - cpuStart);
      if (remaining <= 0) {
        return;
      }
    }
  }

  /** Whether spins count thread CPU time (true) or wall-clock time. */
  static boolean countsCpuTime() {
    return CPU_TIME;
  }

  private static boolean cpuTimeAvailable() {
    try {
      if (!THREADS.isCurrentThreadCpuTimeSupported()) {
        return false;
      }
      if (!THREADS.isThreadCpuTimeEnabled()) {
        THREADS.setThreadCpuTimeEnabled(true);
      }
      return THREADS.getCurrentThreadCpuTime() >= 0;
    } catch (UnsupportedOperationException | SecurityException e) {
      return false;
    }
  }
}
