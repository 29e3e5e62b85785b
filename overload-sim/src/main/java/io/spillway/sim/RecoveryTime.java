package io.spillway.sim;

/**
 * How long goodput takes to recover after the onset of overload, as Rajomon measures it
 * (rajomon-nsdi25 §5.4, Fig. 6: "the period between the onset of overload and goodput
 * stabilization at some level"), for runs whose rates are too low for {@link StepConvergence}'s
 * 5 % band on 20 ms windows.
 *
 * <p>At a thousand responses per second a 20 ms window holds about twenty, and counting noise
 * alone moves it by more than 20 %: a ±5 % band never holds. Here the windows are longer (the
 * caller's choice; the graph harness uses 100 ms), and the band allows for that noise: the level
 * is the mean count per window over the second half of the step, and a window counts as recovered
 * when its count is at least {@code level − max(0.05 · level, 3 · √level)}, three Poisson standard
 * deviations or 5 %, whichever is wider. The band is one-sided: a window above the level (the
 * backlog of a stall draining) is not a failure to recover. Recovery time is the start of the
 * first window from which every later window of the step is recovered. A level of nine or fewer
 * responses per window cannot be told apart from none at all (the floor is then zero): goodput
 * that collapses has not recovered, however flat it stays.
 *
 * <p>Pure arithmetic; thread-safe.
 */
public final class RecoveryTime {

  /** The least relative band, as {@link StepConvergence#BAND}. */
  static final double MIN_BAND = 0.05;

  /** Poisson standard deviations of counting noise the band allows. */
  static final double NOISE_SIGMAS = 3;

  private RecoveryTime() { }

  /**
   * @param goodCounts responses within the SLO in each window of the step, in order, the first
   *     window starting at the onset
   * @param windowMillis the windows' length
   * @return milliseconds from the onset until goodput stays recovered; 0 if it never dipped; -1 if
   *     it had not recovered by the step's last window, if it settled at nine or fewer per window,
   *     or if there are fewer than two windows
   */
  public static double millis(long[] goodCounts, double windowMillis) {
    int n = goodCounts.length;
    if (n < 2) {
      return -1;
    }
    double level = 0;
    for (int i = n / 2; i < n; i++) {
      level += goodCounts[i];
    }
    level /= n - n / 2;
    double floor = level - Math.max(MIN_BAND * level, NOISE_SIGMAS * Math.sqrt(level));
    if (floor <= 0) {
      return -1; // nine or fewer per window: not told apart from no goodput, nothing recovered
    }
    int first = n;
    for (int i = n - 1; i >= 0 && goodCounts[i] >= floor; i--) {
      first = i;
    }
    return first == n ? -1 : first * windowMillis;
  }
}
