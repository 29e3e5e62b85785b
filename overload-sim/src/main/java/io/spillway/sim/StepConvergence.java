package io.spillway.sim;

/**
 * How fast goodput settles after a demand step (docs/design.md, "Convergence time"): the
 * time from the step until goodput stays within 5 % of its converged value, read from fixed
 * windows (20 ms, as Breakwater Fig. 7). The converged value is the mean goodput over the second
 * half of the step's windows. The result is the start of the first window from which every later
 * window of the step is within the band, minus the step's start: from then on goodput stays
 * converged. Resolution is one window: 0 means the first window after the step was already within
 * the band (converged within one window), 20 means the second was.
 *
 * @param scheme the scheme
 * @param fromLevel demand before the step
 * @param toLevel demand after the step
 * @param stepMillis when the step happened
 * @param convergedGoodputRps the converged goodput
 * @param convergenceMillis time to converge; -1 if goodput never settled within the step
 */
public record StepConvergence(String scheme, double fromLevel, double toLevel, double stepMillis,
    double convergedGoodputRps, double convergenceMillis) {

  /** The band around the converged value that counts as converged. */
  static final double BAND = 0.05;

  /**
   * @param goodputRps goodput of each window of the step, in order, the first starting at the
   *     step
   * @param windowMillis the windows' length
   */
  public static StepConvergence of(String scheme, double fromLevel, double toLevel, double stepMillis,
      double[] goodputRps, double windowMillis) {
    int n = goodputRps.length;
    if (n < 2) {
      return new StepConvergence(scheme, fromLevel, toLevel, stepMillis, n == 1 ? goodputRps[0] : 0, -1);
    }
    double sum = 0;
    for (int i = n / 2; i < n; i++) {
      sum += goodputRps[i];
    }
    double converged = sum / (n - n / 2);
    int firstStable = n;
    for (int i = n - 1; i >= 0; i--) {
      if (Math.abs(goodputRps[i] - converged) <= BAND * converged) {
        firstStable = i;
      } else {
        break;
      }
    }
    double millis = firstStable == n ? -1 : firstStable * windowMillis;
    return new StepConvergence(scheme, fromLevel, toLevel, stepMillis, converged, millis);
  }
}
