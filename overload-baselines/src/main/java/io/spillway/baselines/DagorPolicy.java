package io.spillway.baselines;

import java.util.Arrays;

/**
 * DAGOR's admission-level arithmetic (Zhou et al., "Overload Control for Scaling WeChat
 * Microservices", SoCC 2018, §4.2 "Overload Detection" and §4.3 "Service Admission Control"), with
 * one priority dimension as breakwater-osdi20 §5.1 runs it: random priorities 1–128 per request,
 * lower is more important.
 *
 * <pre>
 * Over each window (every 1 ms or 2,000 requests, whichever comes first; breakwater-osdi20 §5.1):
 *   [1] overloaded  ⇔  the average queueing time of the window's requests ≥ DAGOR_q
 *   [2] H[p] = requests of priority p that arrived in the window; N(L) = Σ_{p ≤ L} H[p]
 *   [3] overloaded:  L ← the largest L' &lt; L with N(L') ≤ (1 − α)·N(L)    (shed α of the admitted)
 *   [4] otherwise:   L ← the smallest L' &gt; L with N(L') ≥ (1 + β)·N(L)   (admit β more),
 *                    or L + 1 if no level reaches it
 *   [5] 1 ≤ L ≤ P (P = 128): a request of priority p is admitted iff p ≤ L, so the level never
 *       rejects priority 1 (breakwater-osdi20 §5.1: "DAGOR does not drop its threshold to zero").
 * </pre>
 *
 * <p>[4]'s fallback: the server only sees the priorities its clients still send, and clients drop
 * locally what the advertised level rejects, so the histogram above L is mostly empty; DAGOR then
 * probes one level up per window. α = 5 %, β = 1 % (§5.1).
 *
 * <p>Pure functions; thread-safe.
 */
final class DagorPolicy {

  private DagorPolicy() { }

  /**
   * A histogram with one request at every priority 1..P: the prior when a window's requests carry no
   * priority. With it, [3] is L ← ⌊(1 − α)·L⌋ and [4] is L ← max(L + 1, ⌈(1 + β)·L⌉).
   */
  static long[] uniform(int maxPriority) {
    long[] h = new long[maxPriority + 1];
    Arrays.fill(h, 1, maxPriority + 1, 1L);
    return h;
  }

  /** [1]. */
  static boolean overloaded(long totalQueueingNanos, long requests, long thresholdNanos) {
    return requests > 0 && totalQueueingNanos >= thresholdNanos * requests;
  }

  /**
   * [3]–[5]: the next admission level.
   *
   * @param histogram requests per priority in the window, index 1..P (index 0 unused)
   * @param level the current level L
   */
  static int nextLevel(long[] histogram, int level, boolean overloaded, double alpha, double beta) {
    int maxPriority = histogram.length - 1;
    long[] cumulative = new long[histogram.length];
    for (int p = 1; p <= maxPriority; p++) {
      cumulative[p] = cumulative[p - 1] + histogram[p];
    }
    long admitted = cumulative[level];
    if (overloaded) {
      double wanted = (1 - alpha) * admitted;
      for (int l = level - 1; l >= 1; l--) {
        if (cumulative[l] <= wanted) {
          return l;
        }
      }
      return 1;
    }
    if (level >= maxPriority) {
      return maxPriority;
    }
    double wanted = (1 + beta) * admitted;
    for (int l = level + 1; l <= maxPriority; l++) {
      if (cumulative[l] >= wanted && cumulative[l] > admitted) {
        return l;
      }
    }
    return level + 1;
  }
}
