package io.spillway.transport;

import io.spillway.api.Ticker;
import java.util.List;

/**
 * µTune's adaptation loop (mutune-osdi18 §4, Fig. 5(b)): every period, estimate the arrival rate from
 * each network thread's timestamp buffer, ask the {@link ThreadingPolicy} which trained model is
 * predicted fastest at that load, and move the server there through its {@link ThreadingSwitch}.
 *
 * <p>Run by one scheduler thread (the server's control loop), or by a test in virtual time.
 */
final class ThreadingAdapter implements Runnable {

  private final Ticker ticker;
  private final List<ArrivalRateEstimator> arrivals;
  private final ThreadingPolicy policy;
  private final ThreadingSwitch threading;
  private volatile double lastRate;
  private long updates;

  ThreadingAdapter(Ticker ticker, List<ArrivalRateEstimator> arrivals, ThreadingAdaptation adaptation,
      ThreadingSwitch threading) {
    this.ticker = ticker;
    this.arrivals = List.copyOf(arrivals);
    this.policy = new ThreadingPolicy(adaptation.profile(), adaptation.margin(), adaptation.headroom(),
        adaptation.confirmations());
    this.threading = threading;
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
      return; // the same estimate again: it must not count twice toward a move's confirmations
    }
    updates = updated;
    ThreadingModel next = policy.decide(rate, threading.current());
    threading.switchTo(next);
  }

  /** The last estimated arrival rate, per second. */
  double lastRate() {
    return lastRate;
  }
}
