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
 * beats the current model's fastest, it would still be no worse at 25 % more load, and it has won 3
 * decisions in a row.
 *
 * <p>Immutable and thread-safe.
 *
 * @param profile tail latency per model and load, from {@code ./spillway mutune train}
 * @param bufferSize arrival timestamps kept per network thread
 * @param smoothing windows of {@code bufferSize} arrivals the estimate spans
 * @param periodNanos how often the loop decides
 * @param margin fraction by which the candidate's slowest run must beat the current model's fastest
 * @param headroom fraction of extra load at which the candidate's slowest run must still be no worse
 * @param confirmations consecutive wins before a move
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

  /** The paper's settings over {@code profile}. */
  public static ThreadingAdaptation of(ThreadingProfile profile) {
    return new ThreadingAdaptation(profile, 5, 9, 1_000_000, 0.10, 0.25, 3);
  }

  /** The models a server adapting this way may run (the profile's). */
  public java.util.Set<ThreadingModel> models() {
    return profile.models();
  }
}
