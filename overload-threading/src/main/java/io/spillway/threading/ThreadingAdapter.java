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
 * predicted fastest at that load, and moves whatever runs the requests there. Schedule it every
 * {@link ThreadingAdaptation#periodNanos()} on an injected scheduler.
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
 * <p>Run by one thread at a time (a scheduler's, or a test's in virtual time); {@link #lastRate}
 * and {@link #restart} may be used from any thread, {@link #restart} not while holding a lock that
 * {@code switchTo} takes.
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
   * Held by a run from its reading of the model to its move, and by {@link #restart}: without it a
   * decision counted before a restart could reach {@code switchTo} after the restart returned.
   */
  private final ReentrantLock deciding = new ReentrantLock();
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
  }

  @Override
  public void run() {
    long now = ticker.read();
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
    deciding.lock();
    try {
      if (restarts != restarted) {
        restarted = restarts;
        policy.reset();
      }
      switchTo.accept(policy.decide(rate, counted, recorded, current.get()));
    } finally {
      deciding.unlock();
    }
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
