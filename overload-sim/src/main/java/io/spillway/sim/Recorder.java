package io.spillway.sim;

import java.util.ArrayList;
import java.util.List;

/**
 * Collects a run's results in fixed windows of simulated time (20 ms by default, as Breakwater
 * Fig. 7). A steady run sums the windows after its warm-up; a scheduled run reports each window.
 * Events are attributed to the window in which they happen: an arrival when the client issues it,
 * a drop when the server decides, a response when the client receives it.
 *
 * <p>Not thread-safe; one per run.
 */
public final class Recorder {

  private final long windowNanos;
  private final List<Tally> windows = new ArrayList<>();
  private final List<double[]> demandChanges = new ArrayList<>();

  public Recorder(long windowNanos) {
    if (windowNanos <= 0) {
      throw new IllegalArgumentException("window must be positive: " + windowNanos);
    }
    this.windowNanos = windowNanos;
  }

  /** The tally of the window containing {@code nowNanos} (simulated time since the run began). */
  public Tally at(long nowNanos) {
    int index = (int) (nowNanos / windowNanos);
    while (windows.size() <= index) {
      windows.add(new Tally());
    }
    return windows.get(index);
  }

  public void demandChanged(long nowNanos, double level) {
    demandChanges.add(new double[] {nowNanos, level});
  }

  public long windowNanos() {
    return windowNanos;
  }

  /** How many windows have data; the last may be partial if the run ended inside it. */
  public int windowCount() {
    return windows.size();
  }

  public Tally window(int index) {
    return index < windows.size() ? windows.get(index) : new Tally();
  }

  /** The demand level in force at {@code nowNanos}. */
  public double demandAt(long nowNanos) {
    double level = 0;
    for (double[] change : demandChanges) {
      if (change[0] <= nowNanos) {
        level = change[1];
      }
    }
    return level;
  }

  /** Every window's counts, the last one's too if the run ended inside it. */
  public Tally total() {
    Tally total = new Tally();
    for (Tally w : windows) {
      total.add(w);
    }
    return total;
  }

  /** The sum of the windows that start at or after {@code fromNanos} and end by {@code toNanos}. */
  public Tally sum(long fromNanos, long toNanos) {
    Tally total = new Tally();
    for (int i = 0; i < windows.size(); i++) {
      long start = i * windowNanos;
      if (start >= fromNanos && start + windowNanos <= toNanos) {
        total.add(windows.get(i));
      }
    }
    return total;
  }
}
