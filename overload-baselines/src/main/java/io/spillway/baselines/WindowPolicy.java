package io.spillway.baselines;

/**
 * The window arithmetic of the ORCA-style client-side rate limiting that breakwater-osdi20 §2.2
 * examines: "The client maintains a window size representing the maximum number of outstanding
 * requests. Upon receiving a response, if the response time is less than the SLO, it additively
 * increases the window size; otherwise, it multiplicatively decreases the window size", with "a
 * minimum of one open slot in the window".
 *
 * <pre>
 * [1] good response (response time within the threshold):  w ← min(w + ai / w, w_max)
 * [2] late response:                                         w ← max(w · md, 1)
 * [3] the window admits ⌊w⌋ requests in flight, at least one.
 * </pre>
 *
 * <p>[1] is TCP's congestion-avoidance increase (one window's worth of good responses grows the
 * window by {@code ai}); [2] is applied at most once per window of requests (the gate ignores late
 * responses to requests sent before the last decrease), as TCP reduces once per loss episode, so
 * one burst of late responses does not collapse the window.
 *
 * <p>Pure functions; thread-safe.
 */
final class WindowPolicy {

  private WindowPolicy() { }

  /** [1]. */
  static double increase(double window, double ai, double maxWindow) {
    return Math.min(window + ai / window, maxWindow);
  }

  /** [2]. */
  static double decrease(double window, double md) {
    return Math.max(window * md, 1.0);
  }

  /** [3]: requests that may be in flight with window {@code w}. */
  static int slots(double window) {
    return Math.max(1, (int) window);
  }
}
