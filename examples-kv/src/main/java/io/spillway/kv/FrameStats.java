package io.spillway.kv;

import io.spillway.api.OverloadMetrics;
import io.spillway.api.Status;
import java.util.concurrent.atomic.LongAdder;

/**
 * What the frame port's gate did, as one line per reading ({@code ./spillway kv --frame-stats}):
 * requests admitted and refused by reason since the last reading, the credit pool over that time
 * (lowest, highest and last target size, credits issued and sessions at the last report), and the
 * plain clients' concurrency limit at its last report, so that a run's refusals can be told apart:
 * a pool too small for the demand, or credits slow to come back while the pool is large.
 *
 * <p>Thread-safe: the gate reports from its event loops and control loop, a reader reads from any
 * thread. Counting a decision is one {@link LongAdder} increment.
 */
final class FrameStats implements OverloadMetrics {

  private static final Status[] STATUSES = Status.values();

  private final LongAdder[] decisions = new LongAdder[STATUSES.length];
  private final long[] lastRead = new long[STATUSES.length];
  private final Object pool = new Object();
  private long poolLow = Long.MAX_VALUE;
  private long poolHigh = Long.MIN_VALUE;
  private long poolLast;
  private long issued;
  private int sessions;
  private long poolReports;
  private volatile long limit = -1;
  private volatile long limitWaiting;

  FrameStats() {
    for (int i = 0; i < decisions.length; i++) {
      decisions[i] = new LongAdder();
    }
  }

  @Override
  public void onAdmission(Status decision) {
    decisions[decision.ordinal()].increment();
  }

  @Override
  public void onCreditPool(long total, long issued, int sessions) {
    synchronized (pool) {
      poolLow = Math.min(poolLow, total);
      poolHigh = Math.max(poolHigh, total);
      poolLast = total;
      this.issued = issued;
      this.sessions = sessions;
      poolReports++;
    }
  }

  @Override
  public void onConcurrencyLimit(long limit, long counted) {
    this.limitWaiting = counted;
    this.limit = limit;
  }

  /** Decisions since the last reading and the pool over that time; starts the next interval. */
  synchronized String read() {
    StringBuilder line = new StringBuilder("frame-stats admitted ");
    StringBuilder refused = new StringBuilder();
    for (Status s : STATUSES) {
      long now = decisions[s.ordinal()].sum();
      long delta = now - lastRead[s.ordinal()];
      lastRead[s.ordinal()] = now;
      if (s == Status.OK) {
        line.append(delta);
      } else if (delta > 0) {
        refused.append(' ').append(s.name().toLowerCase(java.util.Locale.ROOT)).append('=').append(delta);
      }
    }
    line.append(" refused").append(refused.isEmpty() ? " 0" : refused);
    synchronized (pool) {
      if (poolReports == 0) {
        line.append("; pool not reported");
      } else {
        line.append("; pool ").append(poolLow).append('-').append(poolHigh).append(" last ")
            .append(poolLast).append(" issued ").append(issued).append(" sessions ").append(sessions)
            .append(" (").append(poolReports).append(" reports)");
      }
      poolLow = Long.MAX_VALUE;
      poolHigh = Long.MIN_VALUE;
      poolReports = 0;
    }
    if (limit >= 0) {
      line.append("; plain clients' limit ").append(limit).append(" waiting ").append(limitWaiting);
    }
    return line.toString();
  }
}
