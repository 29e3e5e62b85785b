package io.spillway.threading;

import java.util.Arrays;

/**
 * µTune's load detector (mutune-osdi18 §4, "Runtime adaptation", steps 2–3; §5: a 5-entry buffer):
 * each arrival's timestamp goes into a small circular buffer, and the arrival rate is estimated
 * from the buffer's size and its oldest and youngest stamps. Event-based, so a precipitous rise is
 * seen after a handful of arrivals rather than at the end of a time window; the median of the last
 * few estimates (as the authors' code takes) smooths the outliers a 5-entry buffer produces.
 *
 * <p>Beyond the paper: when arrivals stop, the buffer would keep its last estimate for ever, so
 * once the time since the youngest stamp exceeds the buffer's span, the buffer's size over the time
 * since its oldest stamp ({@code size / (now − oldest)}) joins the estimates; a silence is read as
 * the load falling, as it is.
 *
 * <p>{@link #record} is called by one thread (the network thread that reads the requests);
 * {@link #estimate} by the adaptation loop on any thread: it reads the stamps without locking, and
 * a torn read of one slot moves one estimate, which the median absorbs. Not otherwise thread-safe.
 */
public final class ArrivalRateEstimator {

  private final long[] stamps;
  private final double[] recent;
  private final double[] sorted;
  private volatile long recorded; // arrivals recorded; the next slot is recorded % length
  private int recentCount;
  private int recentNext;
  private long estimatedAt; // recorded() when the last windowed estimate was taken
  private long updates;

  /**
   * @param size the circular buffer's entries (µTune: 5)
   * @param smoothing how many recent estimates the median is taken over
   */
  public ArrivalRateEstimator(int size, int smoothing) {
    if (size < 2 || smoothing < 1) {
      throw new IllegalArgumentException("size >= 2 and smoothing >= 1: " + size + ", " + smoothing);
    }
    stamps = new long[size];
    recent = new double[smoothing];
    sorted = new double[smoothing];
  }

  /** Records an arrival at {@code nowNanos}. One writer thread. */
  public void record(long nowNanos) {
    long n = recorded;
    stamps[(int) (n % stamps.length)] = nowNanos;
    recorded = n + 1;
  }

  /** Arrivals recorded so far. */
  public long recorded() {
    return recorded;
  }

  /**
   * The median of the recent estimates at {@code nowNanos}, in arrivals per second; 0 before two
   * arrivals. A new estimate joins them only once the buffer holds {@code size} arrivals the last
   * one did not see, so the median is taken over disjoint windows (overlapping windows would share
   * their noise, and a 5-entry window's rate varies by ±50 % under Poisson arrivals), or when no
   * arrival has come for longer than the buffer's whole span, a silence that shows the load has
   * fallen. The adaptation loop's thread only.
   */
  public double estimate(long nowNanos) {
    long n = recorded;
    if (n < 2) {
      return median();
    }
    int count = (int) Math.min(n, stamps.length);
    long youngest = stamps[(int) ((n - 1) % stamps.length)];
    long oldest = stamps[(int) ((n - count) % stamps.length)];
    long sinceOldest = nowNanos - oldest;
    double bySilence = sinceOldest > 0 ? count * 1e9 / sinceOldest : Double.MAX_VALUE;
    if (n - estimatedAt >= stamps.length || (n - estimatedAt >= 2 && recentCount == 0)) {
      long span = youngest - oldest;
      double byStamps = span > 0 ? (count - 1) * 1e9 / span : Double.MAX_VALUE;
      double rate = Math.min(byStamps, bySilence);
      estimatedAt = n;
      push(rate == Double.MAX_VALUE ? 0 : rate);
    } else if (recentCount > 0 && nowNanos - youngest > youngest - oldest && bySilence < median()) {
      push(bySilence);
    }
    return median();
  }

  /** How many estimates have joined the median so far (it changes only when one does). */
  public long updates() {
    return updates;
  }

  private void push(double rate) {
    updates++;
    recent[recentNext] = rate;
    recentNext = (recentNext + 1) % recent.length;
    recentCount = Math.min(recentCount + 1, recent.length);
  }

  private double median() {
    if (recentCount == 0) {
      return 0;
    }
    System.arraycopy(recent, 0, sorted, 0, recentCount);
    Arrays.sort(sorted, 0, recentCount);
    return recentCount % 2 == 1 ? sorted[recentCount / 2]
        : (sorted[recentCount / 2 - 1] + sorted[recentCount / 2]) / 2;
  }
}
