package io.spillway.threading;

import io.spillway.threading.ThreadingProfile.Curve;
import java.util.Objects;

/**
 * µTune's switching logic (mutune-osdi18 §4, "Runtime adaptation", steps 4–5) as a pure function of
 * the estimated load: interpolate each trained model's tail at that load ({@link ThreadingProfile})
 * and move to a model predicted lower.
 *
 * <p>The paper moves to the model whose one trained curve (five measurements averaged, §5) is
 * lowest. This policy moves only on a difference the training's own noise cannot explain: the
 * candidate is the model whose <em>slowest</em> repetition is predicted lowest at the estimated
 * load, and it must beat the current model's <em>fastest</em> repetition there ({@link
 * Curve#SLOWEST} against {@link Curve#FASTEST}). Where two models' runs overlap, the measurements
 * say only that they are alike, and the model running now stays. The departure is for machines
 * where one model's p99 at one load moves by 1.2–5× from run to run (host stalls on a small
 * virtual machine): there the medians of two alike models cross and re-cross by chance, each
 * crossing is a move, and a move costs a drain of the old model. Where the paper's premise holds
 * (runs that agree), fastest, median and slowest coincide and the rule is the paper's; a profile
 * trained from one run per load has one curve and behaves so too.
 *
 * <p>Hysteresis, which the paper leaves to the buffer size (§4: "avoiding oscillations triggered by
 * outliers"), on top of the spread: near a crossover the load estimate's own noise would flip a
 * choice, so the policy moves only when
 * <ul>
 *   <li>the candidate's slowest predicted tail, raised by {@code margin} (a fraction of it), is
 *       still below the current model's fastest: a margin for what a few repetitions fail to
 *       sample of the noise;
 *   <li>at {@code headroom} more load (a fraction of the estimate) the candidate's slowest is no
 *       worse than the current model's fastest either: a dead band in load around each crossover,
 *       wider than the estimate's noise, so a load hovering at a crossover stays with the model it
 *       has;
 *   <li>and the same candidate has won {@code confirmations} decisions in a row.
 * </ul>
 * A current model the profile does not know is left at the first decision, for the model whose
 * median curve is lowest.
 *
 * <p>Confirmations count decisions against one current model. A decision made with another current
 * model than the last (the server was moved by something other than this policy, such as an
 * operator) starts the count over, as does {@link #reset()}: wins counted against the model that
 * ran before are no evidence against the one running now, and carried over they would let a single
 * decision undo that move.
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
  /** The current model {@link #wins} were counted against. */
  private ThreadingModel countedFor;

  public ThreadingPolicy(ThreadingProfile profile, double margin, double headroom, int confirmations) {
    this.profile = Objects.requireNonNull(profile, "profile");
    // Finite: 0 ns × ∞ is NaN, and a NaN comparison would let a move through, not stop it.
    if (!(margin >= 0) || !(headroom >= 0) || Double.isInfinite(margin) || Double.isInfinite(headroom)
        || confirmations < 1) {
      throw new IllegalArgumentException("finite margin >= 0, finite headroom >= 0 and confirmations >= 1: " + margin
          + ", " + headroom + ", " + confirmations);
    }
    this.margin = margin;
    this.headroom = headroom;
    this.confirmations = confirmations;
  }

  /** The model to run at {@code rps} arrivals per second, given the one running now. */
  public ThreadingModel decide(double rps, ThreadingModel current) {
    if (!profile.models().contains(current)) {
      candidate = null;
      wins = 0;
      countedFor = null;
      return profile.best(rps);
    }
    if (!current.equals(countedFor)) {
      countedFor = current;
      candidate = null;
      wins = 0;
    }
    // the other model whose slowest run is predicted lowest
    ThreadingModel best = profile.bestExcept(rps, Curve.SLOWEST, current);
    double higher = rps * (1 + headroom);
    if (best == null
        || profile.predictNanos(best, rps, Curve.SLOWEST) * (1 + margin)
            >= profile.predictNanos(current, rps, Curve.FASTEST)
        || profile.predictNanos(best, higher, Curve.SLOWEST) > profile.predictNanos(current, higher, Curve.FASTEST)) {
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

  /** Forgets the confirmations counted so far: the next move needs {@code confirmations} new wins. */
  public void reset() {
    candidate = null;
    wins = 0;
  }
}
