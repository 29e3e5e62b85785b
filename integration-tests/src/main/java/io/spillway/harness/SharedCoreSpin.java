package io.spillway.harness;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * Spins for a wall-clock time while giving the core away between clock checks ({@code
 * sched_yield(2)}, called through the FFM API), so that several spinners on one physical core all
 * end on time and a runnable I/O thread is never kept waiting behind them.
 *
 * <p>Why: the harness pins its server to one core. A plain busy spin there is CPU work, so two
 * lock holders spinning "at once" run one after the other and the core, not the mutexes, is the
 * bottleneck. Protego's two-path experiment gives each data path its own core and two more for
 * system overhead so that the CPU is never the bottleneck (protego-nsdi23 §2, Fig. 2). A spinner
 * that yields between checks is the single-core stand-in: each lock holder occupies its mutex for
 * its service time in wall-clock terms, as if on a core of its own, while the real core runs the
 * event loop and the dispatcher whenever they have work. The CPU the spin burns is filler.
 * Measured with scenarios/harness-two-path.conf (two paths, exponential 1 ms, closed loop): a busy
 * spin serves about 950 requests/s, one service time at a time (1/S); the yielding spin about
 * 1,600 to 1,850, close to the two mutexes' 2/S = 2,000.
 *
 * <p>On a virtual thread the downcall pins the thread to its carrier for the instant of the call,
 * which is what is wanted: it is the carrier (the OS thread) that must yield, not the virtual
 * thread ({@link Thread#yield()} on a virtual thread only yields to other virtual threads).
 *
 * <p>Where {@code sched_yield} cannot be linked (not Linux, native access not enabled) the spin is
 * a plain busy spin and {@link #unavailabilityCause()} says why.
 *
 * <p>Thread-safe: stateless.
 */
final class SharedCoreSpin {

  private static final MethodHandle SCHED_YIELD;
  private static final String UNAVAILABLE;

  static {
    MethodHandle handle = null;
    String cause = null;
    try {
      Linker linker = Linker.nativeLinker();
      handle = linker.defaultLookup().find("sched_yield")
          .map(symbol -> linker.downcallHandle(symbol, FunctionDescriptor.of(ValueLayout.JAVA_INT)))
          .orElse(null);
      if (handle == null) {
        cause = "no sched_yield in the C library";
      }
    } catch (RuntimeException | LinkageError e) {
      cause = "cannot link sched_yield: " + e;
    }
    SCHED_YIELD = handle;
    UNAVAILABLE = cause;
  }

  private SharedCoreSpin() { }

  /** Whether spinners give the core away between checks. */
  static boolean isAvailable() {
    return SCHED_YIELD != null;
  }

  /** Why spinners busy-spin instead, or {@code null} if they yield. */
  static String unavailabilityCause() {
    return UNAVAILABLE;
  }

  /** Returns once {@code nanos} of wall-clock time have passed. */
  static void spin(long nanos) {
    long end = System.nanoTime() + nanos;

    while (System.nanoTime() - end < 0) {
      yieldCore();
    }
  }

  private static void yieldCore() {
    if (SCHED_YIELD == null) {
      Thread.onSpinWait();
      return;
    }
    try {
      int ignored = (int) SCHED_YIELD.invokeExact();
    } catch (Throwable t) {
      throw new IllegalStateException("sched_yield failed", t);
    }
  }
}
