package io.spillway.harness.graph;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
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
 * CPU time keeps each request's cost fixed and the core the one bottleneck it is.
 *
 * <p>The same holds on a virtual thread, and it must count the same way, or a server whose
 * handlers run on virtual threads (Spillway's default workers) would be charged less for a request
 * than one on platform threads whenever its event loop preempts the spinning carrier. The JDK's
 * {@code ThreadMXBean} reads a virtual thread's CPU time as -1, so the loop reads the calling OS
 * thread's CPU clock itself ({@code clock_gettime(CLOCK_THREAD_CPUTIME_ID)}, through the FFM
 * API): on a virtual thread that is its carrier's, and a virtual thread stays on its carrier for
 * the whole loop, which never blocks (virtual threads are not time-sliced, JEP 444). Where that
 * call cannot be linked (not Linux) the loop reads {@code ThreadMXBean} on platform threads and
 * counts wall-clock time on virtual threads; {@link #clock()} says which.
 *
 * <p>Thread-safe; stateless.
 */
public final class CpuSpin {

  /** Linux's {@code CLOCK_THREAD_CPUTIME_ID} ({@code <linux/time.h>}). */
  private static final int CLOCK_THREAD_CPUTIME_ID = 3;
  private static final MethodHandle CLOCK_GETTIME = linkClockGettime();
  private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
  private static final boolean MX_CPU_TIME = mxCpuTimeAvailable();

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
    try (Arena arena = CLOCK_GETTIME != null ? Arena.ofConfined() : null) {
      MemorySegment timespec = arena != null ? arena.allocate(16, 8) : null;
      long cpuStart = cpuTime(timespec);
      long remaining = nanos;
      while (true) {
        long end = System.nanoTime() + remaining;
        while (System.nanoTime() - end < 0) {
          Thread.onSpinWait();
        }
        if (cpuStart < 0) {
          return; // wall-clock time: this thread's CPU time cannot be read
        }
        remaining = nanos - (cpuTime(timespec) - cpuStart);
        if (remaining <= 0) {
          return;
        }
      }
    }
  }

  /** How spins count time here: {@code "thread CPU time"}, or the reason they count wall-clock. */
  public static String clock() {
    if (CLOCK_GETTIME != null) {
      return "thread CPU time (clock_gettime), virtual threads included";
    }
    return MX_CPU_TIME ? "thread CPU time (ThreadMXBean); wall-clock time on virtual threads"
        : "wall-clock time (no thread CPU time here)";
  }

  /** Whether spins on the calling thread count its CPU time (true) or wall-clock time. */
  static boolean countsCpuTime() {
    if (CLOCK_GETTIME != null) {
      return true;
    }
    return MX_CPU_TIME && !Thread.currentThread().isVirtual();
  }

  /**
   * The calling thread's CPU time, ns, as spins count it (a virtual thread's carrier's); -1 where
   * spins count wall-clock time.
   */
  static long threadCpuNanos() {
    if (CLOCK_GETTIME == null) {
      return cpuTime(null);
    }
    try (Arena arena = Arena.ofConfined()) {
      return cpuTime(arena.allocate(16, 8));
    }
  }

  /** This OS thread's CPU time, ns; -1 where it cannot be read. */
  private static long cpuTime(MemorySegment timespec) {
    if (timespec != null) {
      try {
        int rc = (int) CLOCK_GETTIME.invokeExact(CLOCK_THREAD_CPUTIME_ID, timespec);
        if (rc == 0) {
          return timespec.get(ValueLayout.JAVA_LONG, 0) * 1_000_000_000L
              + timespec.get(ValueLayout.JAVA_LONG, 8);
        }
      } catch (Throwable t) {
        throw new IllegalStateException("clock_gettime failed", t);
      }
      return -1;
    }
    return MX_CPU_TIME && !Thread.currentThread().isVirtual() ? THREADS.getCurrentThreadCpuTime() : -1;
  }

  /** {@code int clock_gettime(clockid_t, struct timespec *)}, on 64-bit Linux; null elsewhere. */
  private static MethodHandle linkClockGettime() {
    if (!System.getProperty("os.name", "").startsWith("Linux")
        || !System.getProperty("os.arch", "").matches("amd64|x86_64|aarch64")) {
      return null; // timespec is two longs on 64-bit Linux only
    }
    try {
      Linker linker = Linker.nativeLinker();
      MethodHandle handle = linker.defaultLookup().find("clock_gettime")
          .map(symbol -> linker.downcallHandle(symbol, FunctionDescriptor.of(
              ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.ADDRESS)))
          .orElse(null);
      if (handle == null) {
        return null;
      }
      try (Arena arena = Arena.ofConfined()) {
        int rc = (int) handle.invokeExact(CLOCK_THREAD_CPUTIME_ID, arena.allocate(16, 8));
        return rc == 0 ? handle : null;
      }
    } catch (Throwable e) {
      return null; // not linkable here (native access refused, no such symbol)
    }
  }

  private static boolean mxCpuTimeAvailable() {
    try {
      if (!THREADS.isCurrentThreadCpuTimeSupported()) {
        return false;
      }
      if (!THREADS.isThreadCpuTimeEnabled()) {
        THREADS.setThreadCpuTimeEnabled(true);
      }
      return true;
    } catch (UnsupportedOperationException | SecurityException e) {
      return false;
    }
  }
}
