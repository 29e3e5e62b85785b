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
 * <p>Hysteresis against the load estimate's noise, which the paper leaves to the buffer size (§4:
 * "avoiding oscillations triggered by outliers"). The estimate counts {@code n} arrivals over the
 * time they took; at a steady Poisson load that time is a sum of {@code n} exponential gaps, so the
 * estimate's logarithm has a standard error of about {@code 1 / √n} (15 % for µTune's 5 × 9 = 45
 * arrivals). Near a crossover that noise would flip the choice back and forth, each flip a drain of
 * the model left. A decision is a win for the candidate only when
 * <ul>
 *   <li>its slowest predicted tail, raised by {@code margin} (a fraction of it), is still below the
 *       current model's fastest: a margin for what a few repetitions fail to sample of the
 *       training's noise;
 *   <li>its slowest is no worse than the current model's fastest at every load from the estimate
 *       to the estimate × (1 + {@code h}): the move must hold should the true load be higher than
 *       the estimate (below, on why not lower). {@code h} is {@code headroom} for an estimate over
 *       the adaptation's {@code bufferSize × smoothing} arrivals and {@code (1 + headroom)^√(bufferSize
 *       × smoothing / n) − 1} for one over {@code n}: the same number of standard errors whatever
 *       the estimate counted (a window closes at a reading, so where more than {@code bufferSize}
 *       arrivals come between two readings the estimate counts more of them and errs less).
 * </ul>
 * and a move needs either
 * <ul>
 *   <li>{@code confirmations} wins on estimates that share no arrivals, every decision between them
 *       a win as well. Consecutive estimates share all but a window of their arrivals, so they stray
 *       together and wins counted on them are worth little more than one; the counts of a Poisson
 *       process in disjoint stretches are independent, so here a chance move needs {@code
 *       confirmations} independent strays in a row. With {@link ThreadingAdaptation#of}'s band of
 *       2 standard errors one estimate strays past it with a chance of 2.3 %, three in a row about
 *       one in 80,000;
 *   <li>or {@code confirmations} consecutive wins across the band raised to the power {@code
 *       confirmations} ({@code confirmations} times as wide in the logarithm), on both sides of
 *       the estimate: one estimate then carries the whole distance the independent ones would
 *       share, and the consecutive decisions guard against one outlying window. This is how a large step moves within a few windows:
 *       disjoint estimates take {@code confirmations} estimates' worth of arrivals (at 200 rps, 45
 *       arrivals take 225 ms), and a load that stops brings no new arrivals at all.
 * </ul>
 *
 * <p>The band lies above the estimate only, because the two ways of being wrong near a crossover
 * cost differently. A crossover at {@code c} (where the candidate's slowest meets the current
 * model's fastest) is crossed towards the model that wins above it as soon as the estimates
 * independently pass {@code c}, and back only once they fall below {@code c ÷ (1 + h)}. Staying too
 * long on the model that wins at low load risks its saturation: in-line and small pools stop
 * keeping up just past their crossover, and their queue then grows without bound (mutune-osdi18
 * §5, the in-line models' tails at high load; docs/results/mutune.md, in-line block at 5,000 rps).
 * Staying too long on the model that wins at high load costs what dispatch costs at low load, a
 * hand-off and a wake-up per request. So the dead band sits on the cheap side: {@code [c ÷ (1 +
 * h), c]}. A steady load inside it keeps the model it has; one that hovers near {@code c} moves up
 * once and, needing independent estimates {@code h} below {@code c} to come back, stays.
 *
 * <p>A current model the profile does not know is left at the first decision, for the model whose
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
final class ThreadingPolicy {

  private final ThreadingProfile profile;
  private final double margin;
  /** The band's half-width in the logarithm of load, {@code ln(1 + headroom)}, for {@link #nominalArrivals}. */
  private final double logHeadroom;
  /** The arrivals an estimate counts when its band is {@code headroom}: the adaptation's bufferSize × smoothing. */
  private final double nominalArrivals;
  private final int confirmations;
  private ThreadingModel candidate;
  /** Wins on estimates with disjoint arrivals, every decision since the first a win. */
  private int disjointWins;
  /** Consecutive wins across the wide band. */
  private int wideWins;
  /** Arrivals recorded when the last win in {@link #disjointWins} was counted. */
  private long countedAt;
  /** The current model the wins were counted against. */
  private ThreadingModel countedFor;

  /**
   * The policy of {@code adaptation}: its profile, margin, headroom and confirmations, the headroom
   * being the band for an estimate over its {@code bufferSize × smoothing} arrivals.
   */
  public ThreadingPolicy(ThreadingAdaptation adaptation) {
    this(adaptation.profile(), adaptation.margin(), adaptation.headroom(), adaptation.confirmations(),
        (double) adaptation.bufferSize() * adaptation.smoothing());
  }

  /**
   * A policy whose {@code headroom} is the band for an estimate over µTune's 5 × 9 = 45 arrivals
   * ({@link ThreadingAdaptation#of}'s estimator).
   *
   * @throws IllegalArgumentException unless margin and headroom are finite and non-negative and
   *     confirmations positive
   */
  public ThreadingPolicy(ThreadingProfile profile, double margin, double headroom, int confirmations) {
    this(profile, margin, headroom, confirmations, 45);
  }

  private ThreadingPolicy(ThreadingProfile profile, double margin, double headroom, int confirmations,
      double arrivals) {
    this.profile = Objects.requireNonNull(profile, "profile");
    // Finite: 0 ns × ∞ is NaN, and a NaN comparison would let a move through, not stop it.
    if (!(margin >= 0) || !(headroom >= 0) || Double.isInfinite(margin) || Double.isInfinite(headroom)
        || confirmations < 1) {
      throw new IllegalArgumentException("finite margin >= 0, finite headroom >= 0 and confirmations >= 1: " + margin
          + ", " + headroom + ", " + confirmations);
    }
    this.margin = margin;
    this.logHeadroom = Math.log1p(headroom);
    this.nominalArrivals = arrivals;
    this.confirmations = confirmations;
  }

  /**
   * The model to run at {@code rps} arrivals per second, given the one running now, each call an
   * estimate over the arrivals {@code headroom} is for, sharing none with the last: the band is
   * {@code headroom} and every win counts toward the confirmations.
   *
   * @param rps the estimated arrival rate; the move must hold from {@code rps ÷ (1 + headroom)} to
   *     {@code rps × (1 + headroom)}
   */
  public ThreadingModel decide(double rps, ThreadingModel current) {
    return decide(rps, nominalArrivals, true, 0, current);
  }

  /**
   * The model to run at {@code rps} arrivals per second, given the one running now.
   *
   * @param rps the estimated arrival rate
   * @param arrivals how many arrivals the estimate rests on (with several estimators summed, the
   *     effective number: the squared sum of their rates over the sum of each rate squared over its
   *     count); the band is sized for it, and a value below 1 is read as 1
   * @param recorded arrivals recorded so far, counted as {@code arrivals} is: the estimate shares
   *     none with the last counted win's when {@code arrivals} or more have been recorded since it
   */
  public ThreadingModel decide(double rps, double arrivals, long recorded, ThreadingModel current) {
    return decide(rps, arrivals, recorded - countedAt >= arrivals, recorded, current);
  }

  private ThreadingModel decide(double rps, double counted, boolean disjoint, long recorded,
      ThreadingModel current) {
    if (!profile.models().contains(current)) {
      reset();
      countedFor = null;
      return profile.best(rps);
    }
    if (!current.equals(countedFor)) {
      countedFor = current;
      reset();
    }
    // the other model whose slowest run is predicted lowest
    ThreadingModel best = profile.bestExcept(rps, Curve.SLOWEST, current);
    // the band's half-width in log load: the same number of standard errors (1/√n) for any count
    double band = logHeadroom * Math.sqrt(nominalArrivals / (counted >= 1 ? counted : 1));
    if (best == null
        || profile.predictNanos(best, rps, Curve.SLOWEST) * (1 + margin)
            >= profile.predictNanos(current, rps, Curve.FASTEST)
        || !profile.noSlowerAcross(best, current, rps, rps * Math.exp(band))) {
      reset();
      return current;
    }
    if (!best.equals(candidate)) {
      reset();
      candidate = best;
    }
    if (disjointWins == 0 || disjoint) {
      disjointWins++;
      countedAt = recorded;
    }
    double wide = band * confirmations;
    boolean wideWin = profile.noSlowerAcross(best, current, rps * Math.exp(-wide), rps * Math.exp(wide));
    wideWins = wideWin ? wideWins + 1 : 0;
    if (disjointWins < confirmations && wideWins < confirmations) {
      return current;
    }
    reset();
    return best;
  }

  /** Forgets the confirmations counted so far: the next move needs {@code confirmations} new wins. */
  public void reset() {
    candidate = null;
    disjointWins = 0;
    wideWins = 0;
  }
}
