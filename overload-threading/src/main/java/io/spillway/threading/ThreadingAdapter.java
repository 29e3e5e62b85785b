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
 * <p>Run by one thread at a time (a scheduler's, or a test's in virtual time); {@link #lastRate}
 * may be read from any thread.
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
    switchTo.accept(policy.decide(rate, current.get()));
  }

  /** The last estimated arrival rate, per second. */
  public double lastRate() {
    return lastRate;
  }
}
