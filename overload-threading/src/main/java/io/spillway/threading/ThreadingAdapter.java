package io.spillway.threading;

import io.spillway.api.Ticker;
import java.util.List;
import java.util.Objects;
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
 * a move's confirmations.
 *
 * <p>{@link #restart} starts the policy's confirmations over (a server calls it when an operator
 * moves the model or hands the choice back to the adaptation): a move then needs the full count of
 * decisions made from then on.
 *
 * <p>Run by one thread at a time (a scheduler's, or a test's in virtual time); {@link #lastRate}
 * and {@link #restart} may be used from any thread.
 */
public final class ThreadingAdapter implements Runnable {

  private final Ticker ticker;
  private final List<ArrivalRateEstimator> arrivals;
  private final ThreadingPolicy policy;
  private final Supplier<ThreadingModel> current;
  private final Consumer<ThreadingModel> switchTo;
  private volatile double lastRate;
  private long updates;
  /** Incremented by {@link #restart}; {@link #run} resets the policy when it differs from {@link #restarted}. */
  private final java.util.concurrent.atomic.AtomicLong restarts = new java.util.concurrent.atomic.AtomicLong();
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
    this.policy = new ThreadingPolicy(adaptation.profile(), adaptation.margin(), adaptation.headroom(),
        adaptation.confirmations());
    this.current = Objects.requireNonNull(current, "current");
    this.switchTo = Objects.requireNonNull(switchTo, "switchTo");
  }

  @Override
  public void run() {
    long now = ticker.read();
    double rate = 0;
    long updated = 0;
    for (ArrivalRateEstimator a : arrivals) {
      rate += a.estimate(now);
      updated += a.updates();
    }
    lastRate = rate;
    if (updated == updates) {
      return;
    }
    updates = updated;
    long r = restarts.get();
    if (r != restarted) {
      restarted = r;
      policy.reset();
    }
    switchTo.accept(policy.decide(rate, current.get()));
  }

  /**
   * Starts the confirmations over: the policy's next move needs its full count of decisions made
   * after this call. Any thread; takes effect at the next run.
   */
  public void restart() {
    restarts.incrementAndGet();
  }

  /** The last estimated arrival rate, per second. */
  public double lastRate() {
    return lastRate;
  }
}
