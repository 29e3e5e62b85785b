package io.spillway.credit;

/**
 * Breakwater's credit arithmetic as pure functions: numbers in, numbers out, no state, no locks,
 * no clock. {@link BreakwaterServerGate} calls these; the unit tests feed them the paper's numbers.
 *
 * <pre>
 * Breakwater (breakwater-osdi20.txt), §3.2.1 and §3.2.2:
 *   [1] C_total ← C_total + A                                  if d_m &lt; d_t        (eq. 1)
 *   [2] C_total ← C_total · max(1 − β·(d_m − d_t)/d_t, 0.5)     otherwise            (eq. 2)
 *   [3] A = max(α · n_c, 1)                                                          (eq. 3)
 *   [4] C_oc = max((C_total − C_issued) / n_c, 1)                                    (eq. 4)
 *   §4 "Lazy credit distribution", for client x when a response to it is sent:
 *   [5] c_x ← min(demand_x + C_oc, c_x + C_avail)   if C_issued &lt; C_total            (eq. 5)
 *   [6] c_x ← min(demand_x + C_oc, c_x − 1)         if C_issued &gt; C_total            (eq. 6)
 * </pre>
 *
 * <p>The paper states [5] and [6] for c_x, the client's <em>unused</em> credits. Spillway keeps,
 * as the authors' implementation does, a per-session <em>window</em> w_x = pending_x + c_x (requests
 * of x in flight at the server plus its unused credits), and C_issued = Σ w_x, so that the pool
 * bounds the requests in the server plus the credits that may still become requests. In window
 * form, with pending_x already reduced by the request being answered, [5] and [6] read
 * {@code w ← min(pending + demand + C_oc, w + C_avail)} and {@code w ← min(pending + demand +
 * C_oc, w − 1)}; the window never drops below pending (in-flight requests cannot be revoked) and
 * never exceeds a per-session cap (the authors use 64). When C_issued = C_total the window only
 * shrinks toward demand + C_oc.
 *
 * <p>Without demand speculation (the "demand synchronisation" ablation, §5.2 Fig. 8–9) the server
 * knows each client's demand exactly and issues no overcommitted credits: C_oc = 0.
 */
final class CreditPolicy {

  private CreditPolicy() { }

  /**
   * The additive increase per control period, eq. 3: {@code max(⌊α·n_c⌋, 1)}.
   *
   * @param alpha the aggressiveness α (the paper uses 0.001)
   * @param sessions n_c, registered client sessions
   */
  static long additiveIncrease(double alpha, int sessions) {
    return Math.max((long) (alpha * sessions), 1L);
  }

  /**
   * The multiplicative-decrease factor of eq. 2: {@code max(1 − β·(d_m − d_t)/d_t, 0.5)}.
   */
  static double decreaseFactor(double beta, long measuredDelayNanos, long targetDelayNanos) {
    double overshoot = (double) (measuredDelayNanos - targetDelayNanos) / targetDelayNanos;
    return Math.max(1.0 - beta * overshoot, 0.5);
  }

  /**
   * One control-period update of C_total, eq. 1–3, before clamping.
   *
   * @param total the current C_total
   * @param measuredDelayNanos d_m, the server's queueing delay now
   * @param targetDelayNanos d_t
   */
  static long nextPoolSize(long total, long measuredDelayNanos, long targetDelayNanos,
      double alpha, double beta, int sessions) {
    if (measuredDelayNanos < targetDelayNanos) {
      return total + additiveIncrease(alpha, sessions);
    }
    return (long) (total * decreaseFactor(beta, measuredDelayNanos, targetDelayNanos));
  }

  /**
   * Eq. 1's increase held back while the pool is not in use (for {@link Spillway}; the paper's
   * Breakwater grows on delay alone): {@code next} if it does not grow the pool or if C_issued +
   * n_c ≥ C_total, else {@code total}.
   *
   * <p>d_m &lt; d_t says that the credits in use load the server below the target, not that a larger
   * pool would: credits the pool holds and no session holds are not measured by the delay. Where
   * every session has a window, eq. 4 already overcommits one credit each (C_oc ≥ 1), so the pool
   * may run ahead of C_issued by n_c credits and no more. Without this, a pool whose sessions'
   * demand comes and goes (a few sessions of Poisson arrivals, not the paper's thousands, whose
   * sum is smooth) grows by A every update through each lull, eq. 4 hands the surplus out as
   * (C_total − C_issued)/n_c unused credits per session, and the next burst spends them at once:
   * the queue overshoots past the AQM threshold (§3.2.3: overcommitment "may occasionally" do
   * so), its drops cost the serving core, and late responses cost goodput. The rule is TCP's
   * congestion-window validation (RFC 7661): a window that is not used is not validated by the
   * absence of congestion. docs/results/grpc.md measures it.
   *
   * @param total the current C_total
   * @param next eq. 1–3's C_total for this update
   * @param issued C_issued
   * @param sessions n_c
   */
  static long growOnlyIfUsed(long total, long next, long issued, int sessions) {
    if (next <= total || issued + sessions >= total) {
      return next;
    }
    return total;
  }

  /**
   * As {@link #nextPoolSize}, but a decrease (eq. 2) is measured from the larger of C_total and
   * C_issued and never raises the pool: {@code min(C_total, max(C_total, C_issued) · factor)}.
   * C_issued exceeds C_total only while credits taken back by earlier decreases are still out
   * (eq. 6 takes one back per response to its session, so a cut lands only as the sessions holding
   * the credits send again). A decrease measured from C_total would compound over every period
   * that passes before an earlier cut has landed; measured from C_issued it cuts once for the load
   * that is actually out. Where revocations land within a period (C_issued ≤ C_total) it is eq. 2.
   *
   * @param issued C_issued, the credits held by sessions now
   */
  static long nextPoolSizeFromIssued(long total, long issued, long measuredDelayNanos,
      long targetDelayNanos, double alpha, double beta, int sessions) {
    if (measuredDelayNanos < targetDelayNanos) {
      return nextPoolSize(total, measuredDelayNanos, targetDelayNanos, alpha, beta, sessions);
    }
    return Math.min(total, nextPoolSize(Math.max(total, issued), measuredDelayNanos, targetDelayNanos,
        alpha, beta, sessions));
  }

  /** What the start-up ({@link #startUp}) does at one update. */
  enum StartUp {
    /** C_total ← 2·C_total: every credit is out and the queue is short. */
    DOUBLE,
    /** Eq. 1–3 this time: credits are not all out yet, but no doubling has left any unused. */
    HOLD,
    /** Eq. 1–3 from now on. */
    OVER
  }

  /**
   * Spillway's start-up, one update: double the pool while every credit is out (C_issued ≥
   * C_total) and the queue is below half of d_t; it is over, for good, once the queue reaches d_t/2
   * or a doubling has left credits unused (C_issued &lt; C_total after one). A doubling shows in the
   * queue only a round trip later, so it stops at half the target to leave the other half for the
   * last one; and credits left unused mean the pool already covers the demand.
   *
   * @param doubled whether an earlier update has doubled the pool
   */
  static StartUp startUp(boolean doubled, long total, long issued, long measuredDelayNanos,
      long targetDelayNanos) {
    if (measuredDelayNanos >= targetDelayNanos / 2 || (doubled && issued < total)) {
      return StartUp.OVER;
    }
    return issued >= total ? StartUp.DOUBLE : StartUp.HOLD;
  }

  /**
   * Keeps C_total in a sane range: at least {@code minimum} (the server's parallelism, so an idle
   * server can always fill its cores) and at most {@code perSessionCap · n_c} (no session can use
   * more), but never below the minimum.
   */
  static long clampPoolSize(long total, long minimum, int perSessionCap, int sessions) {
    long maximum = Math.max(minimum, (long) perSessionCap * sessions);
    return Math.max(minimum, Math.min(total, maximum));
  }

  /**
   * The window a session needs so that its calls seldom wait for a credit where handlers hold
   * their calls longer than the queue may (Spillway's, not the paper's): {@code ⌈m + 2·√m⌉ + 1}
   * with {@code m = residence ÷ interval}, the calls the session starts during one residence (its
   * calls in flight, by Little's law). A credit comes back only with an answer, so a call that finds
   * the window full waits for the next one, about {@code residence ÷ (m + 1)}: a few microseconds
   * where handlers answer within microseconds, as in the paper, where Breakwater's one
   * overcommitted credit (eq. 4) is enough; tens of milliseconds for a session with few calls in
   * flight to a handler that blocks on a downstream call, past its client's queue timeout. So the
   * window applies only where that wait exceeds half of d_t. Calls arriving at random start in a
   * residence about m of them, with a standard deviation of √m (Poisson), so two deviations above
   * the mean and the one credit of eq. 4 leave a call waiting in about one residence of fifty.
   *
   * <p>Not where the wait is short: a session with many calls in flight gets a credit back every
   * {@code residence ÷ m}, and spare credits would only let its bursts through at once, costing
   * goodput at overload and taking p99 past the SLO. The gRPC demo's 8 sessions and 30 ms handlers
   * on sockets are such sessions: a credit comes back every few milliseconds, and the window does
   * not apply (docs/results/grpc.md, "Handlers that block").
   *
   * @param residenceNanos how long a handler typically holds a call, start to completion
   * @param intervalNanos the session's mean time between calls; 0 or less when not yet known
   * @param targetDelayNanos d_t
   * @return the window, at least 2; 0 when eq. 4 is enough or the interval is not known
   */
  static long windowForResidence(long residenceNanos, long intervalNanos, long targetDelayNanos) {
    if (intervalNanos <= 0 || residenceNanos <= 0) {
      return 0;
    }
    double m = (double) residenceNanos / intervalNanos;
    if (residenceNanos / (m + 1) <= targetDelayNanos / 2.0) {
      return 0;
    }
    return (long) Math.min(Integer.MAX_VALUE, Math.ceil(m + 2 * Math.sqrt(m)) + 1);
  }

  /**
   * Eq. 1's increase raised to the credits that sessions asked for by {@link #windowForResidence}
   * since the last update and did not get (eq. 5 gives no more than the pool holds open), by at
   * most {@code total · interval ÷ residence}: the pool may double once a residence, as TCP's
   * window once a round trip. Eq. 1 grows the pool by A = α·n_c an update, a pace the paper sets
   * for credits that come back within an RTT (§3.2.1); where handlers hold calls for tens of
   * milliseconds the pool that holds the same load is that many times larger, and A an update
   * took seconds to reach it while calls waited for credits in their clients' queues.
   *
   * <p>Only while the server has room: the queue below d_t/2 (the mark of {@link #startUp}) and
   * not at d_t for a residence. A cut (eq. 2) lands only as calls come back, a residence later,
   * so growth that outruns eq. 1 near the target would build the queue past the AQM threshold
   * before the cut could: in the simulator (scenarios/blocking-handlers.conf, aware sessions)
   * growing whenever the queue was under d_t took 2× capacity from 0.96 of capacity to 0.65.
   * Sessions that ask for no such window leave eq. 1 as it is.
   *
   * @param next the pool eq. 1–3 computed
   * @param shortfall the credits asked for and not granted since the last update
   * @param intervalNanos the time since the last update
   * @param residenceNanos how long handlers typically hold a call
   * @param sinceAtTargetNanos the time since the queue was last at or above d_t at an update
   */
  static long coverResidenceShortfall(long total, long next, long shortfall,
      long measuredDelayNanos, long targetDelayNanos, long intervalNanos, long residenceNanos,
      long sinceAtTargetNanos) {
    if (shortfall <= 0 || residenceNanos <= 0 || measuredDelayNanos >= targetDelayNanos / 2
        || sinceAtTargetNanos < residenceNanos) {
      return next;
    }
    long most = (long) Math.max(1, (double) total * Math.min(intervalNanos, residenceNanos)
        / residenceNanos);
    return Math.max(next, total + Math.min(shortfall, most));
  }

  /** Overcommitted credits per client, eq. 4: {@code max((C_total − C_issued)/n_c, 1)}. */
  static long overcommit(long total, long issued, int sessions) {
    if (sessions <= 0) {
      return 1;
    }
    return Math.max((total - issued) / sessions, 1L);
  }

  /**
   * The window a session should hold after a response to it, eq. 5 and 6 in window form.
   *
   * @param window the session's current window w_x
   * @param pending the session's requests still in flight at the server, not counting the one
   *     being answered
   * @param demand the session's latest reported demand (requests queued at the client)
   * @param total C_total
   * @param issued C_issued, the sum of all windows, including this session's current one
   * @param overcommit C_oc from {@link #overcommit}, or 0 without demand speculation
   * @param perSessionCap the largest window a session may hold
   * @return the new window, in [pending, perSessionCap] (pending wins if it exceeds the cap)
   */
  static int nextWindow(int window, int pending, int demand, long total, long issued,
      long overcommit, int perSessionCap) {
    long wanted = (long) pending + demand + overcommit;
    long next;
    if (issued < total) {
      next = Math.min(wanted, window + (total - issued));     // eq. 5
    } else if (issued > total) {
      next = Math.min(wanted, window - 1L);                     // eq. 6
    } else {
      next = Math.min(wanted, window);
    }
    next = Math.min(next, perSessionCap);
    next = Math.max(next, pending);
    return (int) next;
  }
}
