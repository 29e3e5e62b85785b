package io.spillway.api;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * A running estimate of the p99 of the server's service time, the part of a deadline Protego
 * sets aside before the rest becomes queueing budget (protego-nsdi23 §3.2: budget = target −
 * p99 service − p99 network).
 *
 * <p>Stochastic approximation of a quantile (Robbins–Monro): each sample above the estimate moves
 * it up by 0.99·δ, each one at or below moves it down by 0.01·δ, so it settles where 1 % of the
 * samples lie above it. The step δ is a sixteenth of the estimate (at least 1 µs), so it follows
 * service times from microseconds to seconds at the same relative pace. O(1), no allocation, no
 * lock: concurrent updates may lose one another, which only slows the estimate down. The first
 * sample is taken as the estimate, so a server's first calls do not see an estimate of zero.
 *
 * <p>An estimate with no sample for longer than itself is stale, and with the clock given ({@link
 * #record(long, long)}, {@link #p99Nanos(long)}) it halves for every such span. This matters where
 * the estimate decides who runs: a server that refuses the calls whose deadline its p99 exceeds
 * gets no samples from them, so after a transient spike (a refresh holding a lock for a second) an
 * estimate that only samples could move would refuse every call for ever. Without the clock
 * ({@link #record(long)}, {@link #p99Nanos()}) it never decays. A sample restarts a decayed
 * estimate no lower than itself.
 *
 * <p>Where the estimate decides who runs, idleness alone is no sign that it is stale: a server
 * called once every few of its service times (a third of capacity, one call at a time) would
 * read half its p99 or less at every call and admit calls whose deadline it cannot meet. A
 * tracker made by {@link #decayingWhileRefusing()} therefore decays only while it turns calls
 * away: from the first {@link #refused} after its last sample, halving for every span of its own
 * length, so that a server whose every call is refused admits one again within about twice the
 * estimate (its spans halve), and that call's sample restarts the estimate. Its samples still
 * restart an estimate they find stale by idleness: a call that starts after the server idled for
 * longer than the estimate sets the estimate no lower than its own length.
 *
 * <p>A pause that holds every running call (a collection, a descheduled process, a refresh holding
 * a lock every search needs) ends with one long sample per call. Where the estimate sets budgets,
 * those are slow samples like any other, one step each ({@link #record(long, long)}): an estimate
 * raised to the pause's length would leave every plain request a budget of zero until it had
 * decayed, about 1,600 samples for each factor of e. Where it sets how much queue the server
 * allows in front of its handlers, and that threshold is the only bound on requests without a
 * budget, a tracker made by {@link #raisedByStalls()} takes such a pause's length at once: a
 * stall that recurs, a refresh every few hundred requests, is then left room for by the queue's
 * share rather than added to the tail (measured on examples-lucene's sockets,
 * docs/results/lucene.md).
 *
 * <p>Thread-safe.
 */
public final class ServiceTimeTracker {

  private static final long MIN_STEP_NANOS = 1_000;

  /**
   * Every completion writes the estimate and the last sample's time, from whichever thread ran it.
   * Release stores: readers see them as they see a volatile write, without the full fence a
   * volatile store costs the writer on every request (docs/results/jmh.md, "One gate, two
   * threads"). The update stays a read and a write, not an atomic one: two samples recorded at once
   * may count as one, which moves the estimate one step less, as the estimator's noise does anyway.
   */
  private static final VarHandle P99;
  private static final VarHandle LAST_SAMPLE;

  static {
    try {
      MethodHandles.Lookup lookup = MethodHandles.lookup();
      P99 = lookup.findVarHandle(ServiceTimeTracker.class, "p99Nanos", long.class);
      LAST_SAMPLE = lookup.findVarHandle(ServiceTimeTracker.class, "lastSampleNanos", long.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private volatile long p99Nanos;
  /** When the last sample was recorded with a clock reading; meaningful once {@link #timed}. */
  private volatile long lastSampleNanos;
  private volatile boolean timed;
  /** Whether the estimate decays only while it refuses calls ({@link #decayingWhileRefusing}). */
  private final boolean decaysWhileRefusing;
  /** Whether a span without samples is counted to a sample's end, not its start. */
  private final boolean raisedByStalls;
  /** Whether a call was refused on the estimate since its last sample, and since when. */
  private volatile boolean refusing;
  private volatile long refusingSinceNanos;

  /** A tracker whose estimate, given the clock, decays while no sample arrives (class comment). */
  public ServiceTimeTracker() {
    this(false, false);
  }

  private ServiceTimeTracker(boolean decaysWhileRefusing, boolean raisedByStalls) {
    this.decaysWhileRefusing = decaysWhileRefusing;
    this.raisedByStalls = raisedByStalls;
  }

  /**
   * A tracker whose estimate a stall of every running call raises to the stall's length: a sample
   * that ends a span without samples longer than the estimate restarts it, the call's own length
   * counted in the span (class comment). Otherwise as {@link #ServiceTimeTracker()}.
   */
  public static ServiceTimeTracker raisedByStalls() {
    return new ServiceTimeTracker(false, true);
  }

  /**
   * A tracker for an estimate that refuses calls: it decays only from the first {@link
   * #refused} after its last sample (class comment).
   */
  public static ServiceTimeTracker decayingWhileRefusing() {
    return new ServiceTimeTracker(true, false);
  }

  /**
   * Says that a call was refused at {@code nowNanos} because of this estimate (its deadline could
   * not cover it). Starts the decay of a {@link #decayingWhileRefusing()} tracker, unless a refusal
   * since the last sample already has; does nothing for other trackers.
   */
  public void refused(long nowNanos) {
    if (decaysWhileRefusing && !refusing) {
      refusingSinceNanos = nowNanos;
      refusing = true;
    }
  }

  /**
   * Records one request's service time, ended at {@code nowNanos}. An estimate is stale here when
   * no sample came between the last one and this call's start for longer than the estimate (the
   * server was idle); it then restarts from its decayed value or from the sample, whichever is
   * larger: the call that just ended shows that calls take that long now, and a stale estimate
   * says no more than that. Restarting from the decayed value alone, a server whose calls come one
   * at a time with gaps longer than a call would halve its estimate at every sample and read a p99
   * near zero at any load short of saturation, so that no deadline would be found too short to
   * meet. A call that was already running when the last sample was taken finds the estimate
   * fresh, however long it took: a pause that stalls every running call (a collection, a
   * descheduled process) moves the estimate one step per stalled call, as any slow sample does,
   * instead of setting it to the pause's length; except for a {@link #raisedByStalls()} tracker,
   * which counts the span to the sample's end.
   */
  public void record(long serviceNanos, long nowNanos) {
    long stored = p99Nanos;
    // stale by idleness whatever the tracker's reads do, counted to the call's start: a server
    // that ran this call while the previous sample was taken was not idle, and a stall that held
    // every running call is one slow sample per call, not a reason to forget the estimate (to the
    // call's end where stalls are to raise it)
    long idle = nowNanos - (raisedByStalls ? 0 : Math.max(0, serviceNanos)) - lastSampleNanos;
    long e = timed && stored > 0 ? halved(stored, idle) : stored;
    if (e != stored) {
      e = Math.max(e, serviceNanos);
      if (e != stored) {
        P99.setRelease(this, e);
      }
    }
    LAST_SAMPLE.setRelease(this, nowNanos);
    if (refusing) {
      refusing = false; // a call ran: the estimate has a sample again
    }
    if (!timed) {
      timed = true; // once: a volatile write per request would be wasted after the first
    }
    record(serviceNanos);
  }

  /**
   * The estimate at {@code nowNanos}: halved for every span of its own length without a sample
   * (for a {@link #decayingWhileRefusing()} tracker, counted from the first refusal since the
   * last sample, and not halved without one).
   */
  public long p99Nanos(long nowNanos) {
    long e = p99Nanos;
    if (!timed || e <= 0) {
      return e;
    }
    long since = lastSampleNanos;
    if (decaysWhileRefusing) {
      if (!refusing) {
        return e;
      }
      since = refusingSinceNanos;
    }
    return halved(e, nowNanos - since);
  }

  /** {@code e} halved for every span of its own length in {@code idle}. */
  private static long halved(long e, long idle) {
    for (int i = 0; i < 64 && e > 0 && idle >= e; i++) {
      idle -= e;
      e >>= 1;
    }
    return e;
  }

  /** Records one request's service time. */
  public void record(long serviceNanos) {
    if (serviceNanos < 0) {
      return;
    }
    long e = p99Nanos;
    if (e == 0) {
      P99.setRelease(this, Math.max(serviceNanos, 1));
      return;
    }
    long step = step(e);
    P99.setRelease(this,
        serviceNanos > e ? e + step * 99 / 100 : Math.max(0, e - Math.max(step / 100, 1)));
  }

  /** The current estimate; zero before the first sample. */
  public long p99Nanos() {
    return p99Nanos;
  }

  /**
   * How far one sample moves the current estimate up: a sixteenth of it, at least 1 µs; the width
   * the estimate dithers in around the true p99 once it has settled.
   */
  public long stepNanos() {
    return step(p99Nanos);
  }

  /** The step at estimate {@code e}: a sixteenth of it, at least {@link #MIN_STEP_NANOS}. */
  private static long step(long e) {
    return Math.max(e >> 4, MIN_STEP_NANOS);
  }
}
