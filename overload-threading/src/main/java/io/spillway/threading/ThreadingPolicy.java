package io.spillway.threading;

import java.util.Objects;

/**
 * µTune's switching logic (mutune-osdi18 §4, "Runtime adaptation", steps 4–5) as a pure function of
 * the estimated load: interpolate each trained model's tail at that load ({@link ThreadingProfile})
 * and move to the one predicted lowest.
 *
 * <p>Hysteresis, which the paper leaves to the buffer size (§4: "avoiding oscillations triggered by
 * outliers"): near a crossover two models predict nearly the same tail and a noisy estimate would
 * flip between them, each flip costing a drain of the old model. So the policy moves only when
 * <ul>
 *   <li>the best model's predicted tail beats the current one's by more than {@code margin} (a
 *       fraction of it),
 *   <li>the best model would still be no worse than the current one at {@code headroom} more load
 *       (a fraction of the estimate): a dead band in load around each crossover, wider than the
 *       estimate's noise, so a load hovering at a crossover stays with the model it has;
 *   <li>and the same model has won {@code confirmations} decisions in a row.
 * </ul>
 * A current model the profile does not know is left at the first decision.
 *
 * <p>Not thread-safe: one adaptation loop calls it.
 */
public final class ThreadingPolicy {

  private final ThreadingProfile profile;
  private final double margin;
  private final double headroom;
  private final int confirmations;
  private ThreadingModel candidate;
  private int wins;

  public ThreadingPolicy(ThreadingProfile profile, double margin, double headroom, int confirmations) {
    this.profile = Objects.requireNonNull(profile, "profile");
    if (!(margin >= 0) || !(headroom >= 0) || confirmations < 1) {
      throw new IllegalArgumentException("margin >= 0, headroom >= 0 and confirmations >= 1: " + margin
          + ", " + headroom + ", " + confirmations);
    }
    this.margin = margin;
    this.headroom = headroom;
    this.confirmations = confirmations;
  }

  /** The model to run at {@code rps} arrivals per second, given the one running now. */
  public ThreadingModel decide(double rps, ThreadingModel current) {
    ThreadingModel best = profile.best(rps);
    if (!profile.models().contains(current)) {
      candidate = null;
      return best;
    }
    double higher = rps * (1 + headroom);
    if (best.equals(current)
        || profile.predictNanos(current, rps) <= profile.predictNanos(best, rps) * (1 + margin)
        || profile.predictNanos(best, higher) > profile.predictNanos(current, higher)) {
      candidate = null;
      wins = 0;
      return current;
    }
    if (best.equals(candidate)) {
      wins++;
    } else {
      candidate = best;
      wins = 1;
    }
    if (wins < confirmations) {
      return current;
    }
    candidate = null;
    wins = 0;
    return best;
  }
}
