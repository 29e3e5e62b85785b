package io.spillway.harness;

import java.util.List;

/**
 * When a closed-loop capacity reading on real sockets can be trusted, and how far a run may
 * exceed it. Capacity is the highest throughput the server reaches with no control
 * (docs/design.md "Measures"). A reading taken while the server's JIT is still compiling reads low:
 * the server compiles on the one core it serves from, so its throughput sits on plateaus that look
 * steady while the compiler takes a large share of each second. The harnesses therefore read
 * capacity in one-second slices and accept it only once the last {@value #STEADY_SLICES} agree
 * within {@value #STEADY_SPREAD} and the server's JIT compiled for at most {@value #JIT_QUIET} of
 * each of them (the harness counts its own JIT too: it compiles on the load generator's core).
 *
 * <p>A reading's own spread, {@code (highest − lowest) ÷ mean} of those slices, is how far it can
 * be trusted: a run whose goodput exceeds the reading by more than that spread shows the reading
 * was low ({@link Reading#exceededBy}).
 *
 * <p>The same JIT rule ends each scheme's warm-up ({@link #warm}): a measured level on a server
 * still compiling reads low for the same reason a capacity reading does.
 *
 * <p>Not thread-safe; plain values.
 */
public final class SteadyCapacity {

  /** One slice of a capacity reading. */
  public static final long SLICE_NANOS = 1_000_000_000L;
  /** Slices that must agree for a reading to count. */
  public static final int STEADY_SLICES = 3;
  /** How far those slices may differ, as a share of the highest. */
  public static final double STEADY_SPREAD = 0.05;
  /** The share of a slice the server's JIT may spend compiling for the slice to count as steady. */
  public static final double JIT_QUIET = 0.15;
  /** {@link #JIT_QUIET} of a slice, in ms. */
  public static final long JIT_QUIET_MILLIS = (long) (JIT_QUIET * SLICE_NANOS / 1e6);

  private SteadyCapacity() { }

  /** The milliseconds this JVM's compilers have spent so far, or -1 where the JVM does not say. */
  public static long ownJitMillis() {
    var jit = java.lang.management.ManagementFactory.getCompilationMXBean();
    return jit != null && jit.isCompilationTimeMonitoringSupported() ? jit.getTotalCompilationTime() : -1;
  }

  /**
   * {@code theirs} (a server JVM's compilers' milliseconds) plus this JVM's, or -1 where either
   * does not say: both count, as the class comment says.
   */
  public static long withOwnJit(long theirs) {
    long ours = ownJitMillis();
    return theirs < 0 || ours < 0 ? -1 : theirs + ours;
  }

  /** One closed-loop slice of {@link #SLICE_NANOS}: the calls it completed. */
  @FunctionalInterface
  public interface Slice {
    long run(int index) throws Exception;
  }

  /** The milliseconds the JITs concerned have compiled so far, or -1 where one does not say. */
  @FunctionalInterface
  public interface JitClock {
    long millis() throws Exception;
  }

  /** What ends a run of slices: the completions and the JIT's ms of every slice so far. */
  @FunctionalInterface
  public interface StopRule {
    boolean met(List<Long> completed, List<Long> compilingMillis);
  }

  /**
   * Slices run until a {@link StopRule} held or the bound ran out.
   *
   * @param completed each slice's completed calls
   * @param compilingMillis the ms the JITs compiled during each slice (0 where one does not say)
   * @param settled whether the rule held at the last slice (false: the bound ran out first)
   */
  public record Slices(List<Long> completed, List<Long> compilingMillis, boolean settled) {

    public Slices {
      completed = List.copyOf(completed);
      compilingMillis = List.copyOf(compilingMillis);
    }

    public int count() {
      return completed.size();
    }

    /** {@code "completed/ms compiled"} per slice, the harnesses' trace. */
    public String trace() {
      StringBuilder trace = new StringBuilder();
      for (int i = 0; i < completed.size(); i++) {
        trace.append(completed.get(i)).append('/').append(compilingMillis.get(i)).append(' ');
      }
      return trace.toString().strip();
    }
  }

  /**
   * Runs slices until {@code rule} holds or {@code maxSlices} ran, the JIT read before the first
   * slice and after each. Capacity ({@link #measure}) and a server's warm-up ({@link #warm}) both
   * run on this, so that "steady" is one rule, judged the same way, wherever the harnesses use it.
   */
  public static Slices runUntil(Slice slice, JitClock jit, int maxSlices, StopRule rule) throws Exception {
    if (maxSlices < 1) {
      throw new IllegalArgumentException("at least one slice, not " + maxSlices);
    }
    List<Long> completed = new java.util.ArrayList<>();
    List<Long> compiling = new java.util.ArrayList<>();
    long before = jit.millis();
    boolean settled = false;
    while (!settled && completed.size() < maxSlices) {
      completed.add(slice.run(completed.size()));
      long now = jit.millis();
      compiling.add(before < 0 || now < 0 ? 0 : now - before);
      before = now;
      settled = rule.met(completed, compiling);
    }
    return new Slices(completed, compiling, settled);
  }

  /** A reading and its per-slice trace, {@code "completed/ms compiled"} per slice. */
  public record Measured(Reading reading, String trace) {

    /**
     * The reading as the harnesses log it: {@code what}, the rate, {@code when}, then the spread
     * and the trace (integration-tests/bench/demo-ten.sh parses this line).
     */
    public String describe(String what, String when, int maxSlices) {
      return String.format(java.util.Locale.ROOT, "%s %.0f rps%s (spread %.1f%%; per second, calls "
          + "completed / ms the JITs compiled: %s)%s", what, reading.rps(), when,
          100 * reading.spread(), trace,
          reading.settled() ? "" : " NOT steady after " + maxSlices + " s: may read low");
    }
  }

  /**
   * Runs slices until {@link #steady} or {@code maxSlices}, the JIT read around each, and returns
   * the {@link Reading#of reading} with its trace.
   */
  public static Measured measure(Slice slice, JitClock jit, int maxSlices) throws Exception {
    Slices s = runUntil(slice, jit, maxSlices, SteadyCapacity::steady);
    return new Measured(Reading.of(s.completed(), s.settled()), s.trace());
  }

  /**
   * Warms a server in slices until {@link #jitQuiet} or {@code maxSlices}. A server whose JIT is
   * still compiling when a measured level starts takes its core from the requests for as long as
   * it compiles (class comment), and a fresh server compiled for 10–30 s on one shared core, longer
   * than any fixed warm-up that is not wasteful on a quiet machine. Throughput is not judged: a
   * warm-up's load is open loop, so its completions follow the offered rate, not the server.
   */
  public static Slices warm(Slice slice, JitClock jit, int maxSlices) throws Exception {
    return runUntil(slice, jit, maxSlices, (completed, compiling) -> jitQuiet(compiling));
  }

  /**
   * The warm-up as the harnesses log it: {@code what}, the seconds of load it took ({@code
   * fixedSeconds} before the slices, then one per slice), the slices' {@code level} (× capacity)
   * and their trace.
   */
  public static String describeWarm(String what, double fixedSeconds, double level, Slices s) {
    return String.format(java.util.Locale.ROOT, "%s %.0f s (%.0f s fixed, then %d one-second slice(s) at "
        + "%.2fx%s; per slice, calls completed / ms the JITs compiled: %s)%s", what,
        fixedSeconds + s.count() * (SLICE_NANOS / 1e9), fixedSeconds, s.count(), level,
        s.settled() ? " until the JITs were quiet" : "", s.trace(),
        s.settled() ? "" : " NOT quiet after " + s.count() + " slices: may still compile in measured levels");
  }

  /**
   * Whether the last {@value #STEADY_SLICES} slices' completions agree within {@value
   * #STEADY_SPREAD} of the highest and the JIT was quiet in each ({@code compilingMillis} 0 where a
   * JVM does not report its JIT, so that throughput alone decides).
   */
  public static boolean steady(List<Long> completed, List<Long> compilingMillis) {
    int k = completed.size();
    if (k < STEADY_SLICES || compilingMillis.size() != k) {
      return false;
    }
    List<Long> last = completed.subList(k - STEADY_SLICES, k);
    long lo = last.stream().mapToLong(Long::longValue).min().orElse(0);
    long hi = last.stream().mapToLong(Long::longValue).max().orElse(0);
    return lo > 0 && hi - lo <= STEADY_SPREAD * hi && jitQuiet(compilingMillis);
  }

  /**
   * Whether the JITs compiled for at most {@value #JIT_QUIET} of each of the last {@value
   * #STEADY_SLICES} slices (0 where a JVM does not report its JIT).
   */
  public static boolean jitQuiet(List<Long> compilingMillis) {
    int k = compilingMillis.size();
    return k >= STEADY_SLICES
        && compilingMillis.subList(k - STEADY_SLICES, k).stream().allMatch(ms -> ms <= JIT_QUIET_MILLIS);
  }

  /**
   * A capacity reading.
   *
   * @param rps the mean throughput of the last {@value #STEADY_SLICES} slices
   * @param spread their {@code (highest − lowest) ÷ mean}
   * @param slices how many slices the reading took, warm-up included
   * @param settled whether those slices met {@link #steady} (false: the slice limit ran out first,
   *     and the reading may be low)
   */
  public record Reading(double rps, double spread, int slices, boolean settled) {

    /** The reading the slices so far give: their last {@value #STEADY_SLICES} (or fewer). */
    public static Reading of(List<Long> completed, boolean settled) {
      if (completed.isEmpty()) {
        throw new IllegalArgumentException("a capacity reading needs at least one slice");
      }
      List<Long> last = completed.subList(Math.max(0, completed.size() - STEADY_SLICES), completed.size());
      double mean = last.stream().mapToLong(Long::longValue).average().orElse(0) / (SLICE_NANOS / 1e9);
      long lo = last.stream().mapToLong(Long::longValue).min().orElse(0);
      long hi = last.stream().mapToLong(Long::longValue).max().orElse(0);
      double spread = mean > 0 ? (hi - lo) / (SLICE_NANOS / 1e9) / mean : 0;
      return new Reading(mean, spread, completed.size(), settled);
    }

    /**
     * How far {@code goodputRps} exceeds this reading beyond its spread, as a share of the reading;
     * 0 or less when it does not. A positive value means the reading was low (capacity is the most
     * the server can do, so no run can beat it by more than the reading's own noise).
     */
    public double exceededBy(double goodputRps) {
      return goodputRps / rps - 1 - spread;
    }

    /**
     * Whether this reading is higher than {@code other} beyond both spreads: its range, {@code rps}
     * less its spread, lies wholly above {@code other}'s, {@code rps} plus its spread. Readings within
     * each other's noise do not count as different.
     */
    public boolean above(Reading other) {
      return rps * (1 - spread) > other.rps * (1 + other.spread);
    }

    /** The higher of two readings: capacity is the most the server reaches. */
    public static Reading higher(Reading a, Reading b) {
      return b.rps > a.rps ? b : a;
    }
  }
}
