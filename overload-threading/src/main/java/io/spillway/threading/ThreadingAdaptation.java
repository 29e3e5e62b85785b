package io.spillway.threading;

import java.util.Objects;

/**
 * How a server adapts its threading model to load (µTune, mutune-osdi18 §4): the trained profile and
 * the adaptation loop's settings. {@link #of} gives the paper's: a 5-entry arrival buffer (§5), the
 * estimate spanning the last 9 windows of 5 arrivals (about 45 arrivals; a window closes at the
 * first reading after its 5th arrival, so at 2,000 rps, a window per 3 ms, a step is read in
 * full after ~30 ms; {@link ArrivalRateEstimator}), a decision every millisecond when the estimate
 * has changed; and the hysteresis the paper leaves to tuning, made explicit ({@link
 * ThreadingPolicy}): a move only when the candidate's slowest trained run, raised by 10 %, still
 * beats the current model's fastest, it is no worse anywhere within the load estimate's noise
 * ({@link #noiseHeadroom}: from the estimate ÷ 1.22 to the estimate × 1.22 for 45 arrivals,
 * narrower for an estimate that counted more), and it has won 3 decisions on estimates that share
 * no arrivals, or 3 in a row within a band 3 times as wide in the logarithm (÷/× 1.22³ = 1.83).
 *
 * <p>Immutable and thread-safe.
 *
 * @param profile tail latency per model and load, from {@code ./spillway mutune train}
 * @param bufferSize arrival timestamps kept per network thread
 * @param smoothing windows of {@code bufferSize} arrivals the estimate spans
 * @param periodNanos how often the loop decides
 * @param margin fraction by which the candidate's slowest run must beat the current model's fastest
 * @param headroom half-width of the dead band in load, as a fraction, for an estimate over {@code
 *     bufferSize × smoothing} arrivals: the candidate's slowest run must be no worse than the
 *     current model's fastest at every load from the estimate ÷ (1 + headroom) to the estimate × (1
 *     + headroom); an estimate over {@code n} arrivals gets {@code (1 + headroom)^√(bufferSize ×
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
   * {@code e^(1.35 / √n) − 1} for an estimate over {@code n = bufferSize × smoothing} arrivals
   * (0.223 for the paper's 45), a band of 1.35 standard errors.
   *
   * <p>The estimate counts a fixed number of arrivals over the time they took; under Poisson
   * arrivals at a steady rate that time is a sum of {@code n} exponential gaps, so the estimate's
   * logarithm has a standard error of about {@code 1 / √n} whatever the rate (15 % for 45
   * arrivals). One estimate strays more than 1.35 standard errors to one side with a chance of
   * 8.9 %; the {@link ThreadingPolicy} moves on such strays only when 3 come from estimates that
   * share no arrivals, which are independent: 0.089³ = 0.07 %, as rare as one estimate straying
   * 3.2 standard errors. A steady Poisson load near a crossover then switches at most twice in 10 s
   * (ThreadingPolicyNoiseTest: three profiles, rates on both sides of each crossover, from either
   * model), each switch a drain of the model left; at 1.25 standard errors three independent strays
   * come often enough that some such loads switch three times. A wider band keeps loads further
   * from a crossover on the slower model for longer; at this one a steady load 1.4× a crossover
   * reaches the model predicted faster there within a few estimates' worth of arrivals.
   *
   * @throws IllegalArgumentException if {@code bufferSize < 2} or {@code smoothing < 1}
   */
  public static double noiseHeadroom(int bufferSize, int smoothing) {
    if (bufferSize < 2 || smoothing < 1) {
      throw new IllegalArgumentException("bufferSize >= 2 and smoothing >= 1: " + bufferSize + ", " + smoothing);
    }
    return Math.expm1(1.35 / Math.sqrt((double) bufferSize * smoothing));
  }

  /** The models a server adapting this way may run (the profile's). */
  public java.util.Set<ThreadingModel> models() {
    return profile.models();
  }
}
