package io.spillway.credit;

import io.spillway.api.Cancellable;
import io.spillway.api.Scheduler;
import io.spillway.api.Ticker;
import java.util.Objects;
import java.util.function.BooleanSupplier;

/**
 * A control loop that runs every period while it has work, and every quiet period once a run
 * finds none, until {@link #wake} brings it back. For the default scheme's credit gate, whose
 * timer only stands in for admissions: the pool follows the queue on admissions, and the timer's
 * runs matter while a drained session waits for an explicit credit, which no admission brings.
 * Each run of a timer is a wake-up of the thread it runs on, and on a lightly loaded server those
 * wake-ups, not the requests, were most of what overload control cost it: a run every millisecond
 * cost a native server about a tenth of a core at 100 requests a second
 * (docs/results/server-cpu.md).
 *
 * <p>A run reports whether it wants the next run within a period. When it does not, the loop
 * turns quiet, then asks {@code pending} once more: a caller that publishes work and then calls
 * {@link #wake} either finds the loop quiet and brings it back, or published before that second
 * look, which sees it (both sides write, then read, a volatile). So no work is left waiting for a
 * quiet period.
 *
 * <p>Runs fall on a grid a period apart from {@link #start}, as a loop's that never sleeps would
 * (a late run does not shift the ones after it), and a woken loop runs at the grid's next point:
 * work that wakes it waits for a run as long as it would have waited for a loop running every
 * period, half a period on average, so a server under load sees the same control as before.
 *
 * <p>Runs are sequential when the scheduler runs tasks one at a time (an event loop, a
 * single-threaded executor, virtual time), as {@link Scheduler#every}'s are. A run that throws a
 * {@link RuntimeException} is logged (the first at WARNING, later ones at DEBUG) and the loop
 * goes on at its period. Thread-safe; {@link #wake} costs one volatile read while the loop is
 * not quiet.
 */
final class QuietTimer implements Cancellable {

  /**
   * Periods a loop sleeps while it has no work, for the gates that use one: a hundred makes an
   * idle server's wake-ups a hundredth of a busy one's, as the threading adaptation's slow timer
   * does (docs/results/mutune.md, "What the adaptation costs").
   */
  static final int QUIET_PERIODS = 100;

  private final Scheduler scheduler;
  private final Ticker ticker;
  /** When the loop started: its runs fall on this grid, a period apart. */
  private long origin;
  private final long periodNanos;
  private final long quietPeriodNanos;
  private final BooleanSupplier run;
  private final BooleanSupplier pending;
  /** Guards the scheduling state below; never held while a run executes. */
  private final Object lock = new Object();
  private volatile boolean quiet;
  /** Which chain of scheduled runs is live: a wake-up starts a new one and retires the other. */
  private volatile long chain;
  private Cancellable next;
  private boolean cancelled;
  private final FailureLog failures;

  /**
   * @param periodNanos how often the loop runs while it has work
   * @param quietPeriodNanos how often it runs once a run has found none; a multiple of the period
   * @param run one run; true when it wants the next run within a period
   * @param pending whether work waits that only the loop's runs serve, asked when it turns quiet
   */
  QuietTimer(Scheduler scheduler, Ticker ticker, long periodNanos, long quietPeriodNanos,
      BooleanSupplier run, BooleanSupplier pending) {
    if (periodNanos <= 0 || quietPeriodNanos < periodNanos || quietPeriodNanos % periodNanos != 0) {
      throw new IllegalArgumentException("need a positive period and a quiet period a multiple of it: "
          + periodNanos + ", " + quietPeriodNanos);
    }
    this.scheduler = Objects.requireNonNull(scheduler, "scheduler");
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    this.periodNanos = periodNanos;
    this.quietPeriodNanos = quietPeriodNanos;
    this.run = Objects.requireNonNull(run, "run");
    this.pending = Objects.requireNonNull(pending, "pending");
    this.failures = new FailureLog(QuietTimer.class,
        "a control loop's run failed; it keeps running every " + periodNanos + " ns");
  }

  /** Schedules the first run, a period from now. */
  void start() {
    synchronized (lock) {
      if (!cancelled && next == null) {
        origin = ticker.read();
        long c = chain;
        next = scheduler.schedule(() -> fire(c), periodNanos);
      }
    }
  }

  /**
   * Brings a quiet loop back to its period: its next run comes when a loop that never slept would
   * have run, at the next point of its grid (within a period), so work waits for a run as long as
   * it did there. Call after publishing the work that needs it. A loop that is not quiet is left as
   * it is.
   */
  void wake() {
    if (!quiet) {
      return;
    }
    synchronized (lock) {
      if (!quiet || cancelled) {
        return;
      }
      quiet = false;
      long c = ++chain;
      if (next != null) {
        next.cancel();
      }
      next = scheduler.schedule(() -> fire(c), untilGrid(periodNanos));
    }
  }

  /**
   * From now to the grid point {@code after} (a period or the quiet period, a multiple of it)
   * beyond the last one: a run that came late does not shift the ones after it.
   */
  private long untilGrid(long afterNanos) {
    return afterNanos - Math.floorMod(ticker.read() - origin, periodNanos);
  }

  /** Whether the loop runs at its quiet period now. */
  boolean isQuiet() {
    return quiet;
  }

  @Override
  public void cancel() {
    synchronized (lock) {
      cancelled = true;
      if (next != null) {
        next.cancel();
      }
    }
  }

  private void fire(long c) {
    if (c != chain) {
      return; // a wake-up started another chain
    }
    boolean busy = true;
    try {
      busy = run.getAsBoolean();
    } catch (RuntimeException e) {
      failures.log(e);
    }
    synchronized (lock) {
      if (cancelled || c != chain) {
        return;
      }
      if (!busy) {
        quiet = true;
        if (pending.getAsBoolean()) { // published before it could see the loop quiet
          quiet = false;
          busy = true;
        }
      } else {
        quiet = false;
      }
      next = scheduler.schedule(() -> fire(c), untilGrid(busy ? periodNanos : quietPeriodNanos));
    }
  }
}
