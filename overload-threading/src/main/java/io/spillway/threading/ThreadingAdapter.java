package io.spillway.threading;

import io.spillway.api.Ticker;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * µTune's adaptation loop (mutune-osdi18 §4, Fig. 5(b)): each run estimates the arrival rate from
 * every network thread's timestamp buffer, asks the {@link ThreadingPolicy} which trained model is
 * predicted fastest at that load, and moves whatever runs the requests there.
 *
 * <p>Driven by the arrivals, as µTune's load detector is event-based (§4): the thread that records
 * an arrival calls {@link #runIfDue} with the clock reading the arrival already took, and a run
 * happens when {@link ThreadingAdaptation#periodNanos()} has passed since the last one; otherwise
 * the call is one volatile read. A timer that fires every period on the network thread costs that
 * thread far more than the decisions do: each firing is a wake-up, or a timeout armed on its
 * kernel wait, and on this project's µTune mid-tier on sockets (docs/results/mutune.md) a 1 ms
 * timer took 0.035–0.16 more of the server's core and raised the median at 11,000 rps from
 * 271–277 to 403–434 µs. A server that goes quiet still needs its estimate to fall (a polling model burns its core while
 * idle), so a slower timer calls {@link #runIfDue} too ({@link #SILENCE_PERIODS}).
 *
 * <p>A run decides only when an estimate has changed since the last decision: the estimators
 * update once per window of arrivals, and the same estimate read twice must not count twice toward
 * a move's confirmations. It gives the policy, with the summed rate, the arrivals the estimate
 * rests on (which size its band in load) and the arrivals recorded so far (which tell estimates on
 * disjoint arrivals apart, the only ones that confirm each other: {@link ThreadingPolicy}).
 *
 * <p>{@link #restart} starts the policy's confirmations over (a server calls it when an operator
 * moves the model or hands the choice back to the adaptation): a move then needs the full count of
 * decisions made from then on. A run is atomic with respect to it: a decision being made when it
 * is called lands before it returns, so a server that holds the model while it calls it (an
 * operator's pin) sees that decision ignored, never applied after the hold is lifted.
 *
 * <p>Thread-safe: runs are serialized by a lock, so any thread may call {@link #runIfDue} and
 * {@link #run} (the estimators are read only under it, and each estimator's arrivals are recorded
 * by one thread, as {@link ArrivalRateEstimator} requires); {@code switchTo} is called with the
 * lock held. {@link #restart} not while holding a lock that {@code switchTo} takes.
 */
public final class ThreadingAdapter implements Runnable {

  private final Ticker ticker;
  private final List<ArrivalRateEstimator> arrivals;
  private final ThreadingPolicy policy;
  private final Supplier<ThreadingModel> current;
  private final Consumer<ThreadingModel> switchTo;
  private volatile double lastRate;
  private long updates;
  /**
   * Held by a run, which it serializes, and by {@link #restart}: without it a decision counted
   * before a restart could reach {@code switchTo} after the restart returned.
   */
  private final ReentrantLock deciding = new ReentrantLock();
  private final long periodNanos;
  /** When {@link #runIfDue} may run again: a period after the last run began. */
  private volatile long nextRunNanos;
  /** Incremented by {@link #restart}; {@link #run} resets the policy when it differs from {@link #restarted}. */
  private long restarts;
  private long restarted;

  /**
   * @param arrivals one estimator per thread that records arrivals; their rates are summed
   * @param current the model running now
   * @param switchTo moves to a model (called with the current one when nothing changes)
   */
  public ThreadingAdapter(Ticker ticker, List<ArrivalRateEstimator> arrivals, ThreadingAdaptation adaptation,
      Supplier<ThreadingModel> current, Consumer<ThreadingModel> switchTo) {
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    this.arrivals = List.copyOf(arrivals);
    this.policy = new ThreadingPolicy(adaptation);
    this.current = Objects.requireNonNull(current, "current");
    this.switchTo = Objects.requireNonNull(switchTo, "switchTo");
    this.periodNanos = adaptation.periodNanos();
    this.nextRunNanos = ticker.read() + periodNanos; // relative to the ticker: wrap-around is safe
  }

  /**
   * How many periods the timer for a quiet server waits between its calls of {@link #runIfDue}:
   * with the paper's 1 ms period, a server whose arrivals have stopped decides again within 100 ms.
   */
  public static final int SILENCE_PERIODS = 100;

  /**
   * Runs the adaptation if a period has passed since its last run began, on the calling thread;
   * returns at once if not, or if another thread is running it. For the thread that has just
   * recorded an arrival at {@code nowNanos} (its own reading, so no clock is read here), and for a
   * timer every {@link #SILENCE_PERIODS} periods.
   */
  public void runIfDue(long nowNanos) {
    if (nowNanos - nextRunNanos < 0 || !deciding.tryLock()) {
      return;
    }
    try {
      if (nowNanos - nextRunNanos >= 0) {
        decide(nowNanos);
      }
    } finally {
      deciding.unlock();
    }
  }

  /** Runs the adaptation now, due or not (a test's step, an operator's request). */
  @Override
  public void run() {
    deciding.lock();
    try {
      decide(ticker.read());
    } finally {
      deciding.unlock();
    }
  }

  /** One run, holding {@link #deciding}. */
  private void decide(long now) {
    nextRunNanos = now + periodNanos;
    double rate = 0;
    double variance = 0; // of the summed rate: Σ rate² / counted (an estimate's relative variance is 1/counted)
    long updated = 0;
    long recorded = 0;
    for (ArrivalRateEstimator a : arrivals) {
      double r = a.estimate(now);
      rate += r;
      long counted = a.counted();
      if (counted > 0) {
        variance += r * r / counted;
      }
      updated += a.updates();
      recorded += a.recorded();
    }
    lastRate = rate;
    if (updated == updates) {
      return;
    }
    updates = updated;
    // The arrivals the summed estimate rests on: as many as one estimate of that rate would need for
    // the same relative error. Each estimator's counts; a silent one, its rate near 0, adds little.
    double counted = variance > 0 ? rate * rate / variance : 0;
    if (restarts != restarted) {
      restarted = restarts;
      policy.reset();
    }
    switchTo.accept(policy.decide(rate, counted, recorded, current.get()));
  }

  /**
   * Starts the confirmations over: the policy's next move needs its full count of decisions made
   * after this call. Any thread; takes effect at the next run. Waits for a run that is deciding to
   * finish (its move, if any, lands before this returns), so call it before lifting any hold on
   * the model, and not while holding a lock that {@code switchTo} takes.
   */
  public void restart() {
    deciding.lock();
    try {
      restarts++;
    } finally {
      deciding.unlock();
    }
  }

  /** The last estimated arrival rate, per second. */
  public double lastRate() {
    return lastRate;
  }
}
