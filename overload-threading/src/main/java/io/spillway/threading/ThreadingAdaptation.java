package io.spillway.threading;

import java.util.Objects;

/**
 * How a server adapts its threading model to load (µTune, mutune-osdi18 §4): the trained profile and
 * the adaptation loop's settings. {@link #of} gives the paper's: a 5-entry arrival buffer (§5), the
 * estimate spanning the last 9 windows of 5 arrivals (about 45 arrivals; a window closes at the
 * first reading after its 5th arrival, so at 2,000 rps, a window per 3 ms, a step is read in
 * full after ~30 ms; {@link ArrivalRateEstimator}), a decision at most every millisecond, at an
 * arrival, when the estimate has changed ({@link ThreadingAdapter#runIfDue}); and the hysteresis
 * the paper leaves to tuning, made explicit ({@link ThreadingPolicy}): a move only when the
 * candidate's slowest trained run, raised by 10 %, still beats the current model's fastest, it is
 * no worse from the estimate up to where the load estimate's noise reaches ({@link
 * #noiseHeadroom}: the estimate × 1.35 for 45 arrivals, less for an estimate that counted more),
 * and it has won 3 decisions on estimates that share no arrivals, or 3 in a row within a band 3
 * times as wide in the logarithm on both sides (÷/× 1.35³ = 2.45).
 *
 * <p>Immutable and thread-safe.
 *
 * @param profile tail latency per model and load, from {@code ./spillway mutune train}
 * @param bufferSize arrival timestamps kept per network thread
 * @param smoothing windows of {@code bufferSize} arrivals the estimate spans
 * @param periodNanos how often the loop decides
 * @param margin fraction by which the candidate's slowest run must beat the current model's fastest
 * @param headroom width of the dead band in load above the estimate, as a fraction, for an estimate over {@code
 *     bufferSize × smoothing} arrivals: the candidate's slowest run must be no worse than the
 *     current model's fastest at every load from the estimate to the estimate × (1 + headroom);
 *     an estimate over {@code n} arrivals gets {@code (1 + headroom)^√(bufferSize ×
 *     smoothing / n) − 1}, the same number of standard errors; {@link #noiseHeadroom} gives the
 *     width the estimate's own noise calls for
 * @param confirmations wins a move needs: on estimates that share no arrivals (every decision
 *     between them a win too), or consecutive ones within the band raised to this power
 */
public record ThreadingAdaptation(ThreadingProfile profile, int bufferSize, int smoothing,
    long periodNanos, double margin, double headroom, int confirmations) {

  /** Validates. */
  public ThreadingAdaptation {
    Objects.requireNonNull(profile, "profile");
    if (bufferSize < 2 || smoothing < 1 || smoothing == Integer.MAX_VALUE || periodNanos <= 0
        || !(margin >= 0) || !(headroom >= 0) || Double.isInfinite(margin) || Double.isInfinite(headroom)
        || confirmations < 1) {
      throw new IllegalArgumentException("bufferSize >= 2, 1 <= smoothing < " + Integer.MAX_VALUE
          + ", periodNanos > 0, finite margin >= 0, finite headroom >= 0, confirmations >= 1: " + bufferSize + ", " + smoothing + ", " + periodNanos
          + ", " + margin + ", " + headroom + ", " + confirmations);
    }
  }

  /** The paper's settings over {@code profile}, with the dead band its estimate's noise calls for. */
  public static ThreadingAdaptation of(ThreadingProfile profile) {
    return new ThreadingAdaptation(profile, 5, 9, 1_000_000, 0.10, noiseHeadroom(5, 9), 3);
  }

  /**
   * The headroom that the load estimate's own noise calls for when a move needs 3 confirmations:
   * {@code e^(2 / √n) − 1} for an estimate over {@code n = bufferSize × smoothing} arrivals (0.347
   * for the paper's 45), a band of 2 standard errors.
   *
   * <p>The estimate counts a fixed number of arrivals over the time they took; under Poisson
   * arrivals at a steady rate that time is a sum of {@code n} exponential gaps, so the estimate's
   * logarithm has a standard error of about {@code 1 / √n} whatever the rate (15 % for 45
   * arrivals). The band lies on the side of a crossover where staying costs least ({@link
   * ThreadingPolicy}): a move towards the model that wins at higher load comes once 3 independent
   * estimates pass the crossover, a move back only once 3 fall 2 standard errors below it, which
   * one estimate does with a chance of 2.3 %. A steady Poisson load near a crossover then switches
   * at most a few times in 10 s (ThreadingPolicyNoiseTest: three profiles, rates on both sides of
   * each crossover, from either model), each switch a drain of the model left; a band of 1.35 standard
   * errors lets some such loads switch five or six times.
   *
   * @throws IllegalArgumentException if {@code bufferSize < 2} or {@code smoothing < 1}
   */
  public static double noiseHeadroom(int bufferSize, int smoothing) {
    if (bufferSize < 2 || smoothing < 1) {
      throw new IllegalArgumentException("bufferSize >= 2 and smoothing >= 1: " + bufferSize + ", " + smoothing);
    }
    return Math.expm1(2.0 / Math.sqrt((double) bufferSize * smoothing));
  }

  /** The models a server adapting this way may run (the profile's). */
  public java.util.Set<ThreadingModel> models() {
    return profile.models();
  }
}
