package io.spillway.sim;

import java.util.Arrays;
import java.util.function.LongBinaryOperator;

/**
 * How long goodput takes to recover after the onset of overload, as Rajomon measures it
 * (rajomon-nsdi25 §5.4, Fig. 6: "the period between the onset of overload and goodput
 * stabilization at some level"), for runs whose rates are too low for {@link StepConvergence}'s
 * 5 % band on 20 ms windows.
 *
 * <p>At a thousand responses per second a 20 ms window holds about twenty, and counting noise
 * alone moves it by more than 20 %: a ±5 % band never holds. Here the windows are longer (the
 * caller's choice; the graph harness uses 100 ms), and the band allows for that noise:
 *
 * <ul>
 *   <li>The <b>level</b> is the median count per window over the second half of the step: a dip or
 *       a burst there does not move it.
 *   <li>A window is <b>above the floor</b> when its count is at least {@code level − max(0.05 ·
 *       level, 3 · √level)}, three Poisson standard deviations or 5 %, whichever is wider. The
 *       band is one-sided: a window above the level (the backlog of a stall draining) is not a
 *       failure to recover.
 *   <li>Goodput has <b>recovered</b> at the first window that is above the floor and from which
 *       every span of two windows is above the same floor for two windows' level ({@code 2 ·
 *       level − max(0.1 · level, 3 · √(2 · level))}): stabilization is judged on 2-window means,
 *       a single window is not. A level of nine or fewer responses per window cannot be told
 *       apart from none at all (the floor is then zero): goodput that collapses has not
 *       recovered, however flat it stays.
 * </ul>
 *
 * <p>Why spans of two: with single windows, one window below the floor
 * anywhere in the step's later part read as "never recovered". On real sockets (the graph
 * harness, {@code docs/results/rajomon.md}, section "Recovery read on 200 ms spans")
 * Rajomon's goodput held its level (129 per window) from the step on, but for two single windows
 * of 92 and 88, below the single-window floor, the second of them the step's last: a tenth of a
 * second of a run on a shared core, read as no recovery at all. Read on spans, the span floor is
 * 210, and the spans holding those windows 226, 234 and 217. A dip that lasts
 * two windows, or one deep enough to pull its pair below the span floor (below about 58 % of the
 * level at a hundred per window, when its neighbours are at the level), still counts.
 *
 * <p>Pure arithmetic; thread-safe.
 */
public final class RecoveryTime {

  /** The least relative band, as {@link StepConvergence#BAND}. */
  static final double MIN_BAND = 0.05;

  /** Poisson standard deviations of counting noise the band allows. */
  static final double NOISE_SIGMAS = 3;

  /** Windows per span that stabilization is judged on. */
  static final int SPAN = 2;

  /**
   * The windows the graph harness and the simulator read recovery on, 100 ms: at their rates
   * (about a thousand responses a second on real sockets) a 20 ms window holds some twenty
   * responses, too few to tell a dip from counting noise. One value, so a claim about recovery on
   * real sockets can be checked in the simulator.
   */
  public static final long WINDOW_NANOS = 100_000_000L;

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
    double level = median(Arrays.copyOfRange(goodCounts, n / 2, n));
    double floor = floor(level);
    if (floor <= 0) {
      return -1; // nine or fewer per window: not told apart from no goodput, nothing recovered
    }
    double spanFloor = floor(SPAN * level);
    // Walking back from the end: every span starting at or after i is above the span floor.
    int first = n;
    for (int i = n - 1; i >= 0; i--) {
      if (i + SPAN <= n && span(goodCounts, i) < spanFloor) {
        break;
      }
      if (goodCounts[i] >= floor) {
        first = i;
      }
    }
    return first == n ? -1 : first * windowMillis;
  }

  /**
   * {@link #millis} of the goodput after a step at {@code stepNanos}, read from a recorder of
   * {@code recorderWindowNanos} windows in {@link #WINDOW_NANOS} windows (rounded up to whole
   * recorder windows) from the step (rounded up likewise) to {@code toNanos}; a partial last
   * window is left out.
   *
   * @param goodBetween responses within the SLO in {@code [from, to)}, nanoseconds on the
   *     recorder's clock
   */
  public static double afterStep(long stepNanos, long toNanos, long recorderWindowNanos,
      LongBinaryOperator goodBetween) {
    long window = Experiment.roundUp(WINDOW_NANOS, recorderWindowNanos);
    long start = Experiment.roundUp(stepNanos, recorderWindowNanos);
    long[] good = new long[(int) Math.max(0, (toNanos - start) / window)];
    for (int k = 0; k < good.length; k++) {
      good[k] = goodBetween.applyAsLong(start + k * window, start + (k + 1) * window);
    }
    return millis(good, window / 1e6);
  }

  /** The least count a window (or span) at {@code level} may hold and count as recovered. */
  private static double floor(double level) {
    return level - Math.max(MIN_BAND * level, NOISE_SIGMAS * Math.sqrt(level));
  }

  private static long span(long[] counts, int from) {
    long sum = 0;
    for (int k = from; k < from + SPAN; k++) {
      sum += counts[k];
    }
    return sum;
  }

  private static double median(long[] values) {
    Arrays.sort(values);
    int m = values.length / 2;
    return values.length % 2 == 1 ? values[m] : (values[m - 1] + values[m]) / 2.0;
  }
}
