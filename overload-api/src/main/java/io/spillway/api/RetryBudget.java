package io.spillway.api;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The client's retry-to-a-replica policy (docs/design.md, "A request's path on a client";
 * protego-nsdi23 §5.3): a request that one replica turns away with a fast reject may be sent once
 * more, to another replica, if the retry budget allows. Pure policy: no I/O, no clock; the caller
 * sends.
 *
 * <p>The rules:
 * <ul>
 *   <li><b>Only after a fast reject</b> ({@link #isRetryable}): a status that says the request was
 *       shed for overload ({@link Status#isShed()}: AQM, no credit, price, budget, limit, or expired
 *       in the client's own queue, which Protego's client treats as a locally generated failure
 *       message). A failure ({@link Status#FAILED}) or a server timeout is not retried: the request
 *       may have run, and a slow answer has already spent the time a retry would need.
 *   <li><b>At most one retry</b>: the second attempt's reject is final.
 *   <li><b>A budget</b>, a token bucket as gRPC's retry throttling keeps one (gRFC A6): each first
 *       attempt adds {@code share} of a token ({@link #onCall()}), each retry spends a whole one
 *       ({@link #tryRetry()}), and at most {@code maxTokens} are kept. Over any long stretch,
 *       retries stay below {@code share} of calls plus {@code maxTokens}, so when every replica is
 *       overloaded retries add at most that share to the load instead of doubling it. The bucket
 *       starts full.
 * </ul>
 *
 * <p>Tokens are counted in thousandths, so shares such as 0.1 add up exactly.
 *
 * <p>Thread-safe and lock-free.
 */
public final class RetryBudget {

  /** One token, in the thousandths the bucket counts. */
  public static final long TOKEN = 1000;
  /** Tokens kept by {@link #of(double)}, as gRPC's default retry throttling keeps 10. */
  public static final int DEFAULT_MAX_TOKENS = 10;

  private final long maxThousandths;
  private final long perCallThousandths;
  private final AtomicLong thousandths;

  private RetryBudget(double share, int maxTokens) {
    if (!(share > 0 && share <= 1)) {
      throw new IllegalArgumentException("retry share must be in (0, 1]: " + share);
    }
    if (maxTokens < 1) {
      throw new IllegalArgumentException("at least one token must be kept: " + maxTokens);
    }
    this.perCallThousandths = Math.max(1, Math.round(share * TOKEN));
    this.maxThousandths = maxTokens * TOKEN;
    this.thousandths = new AtomicLong(maxThousandths);
  }

  /**
   * A budget that lets at most {@code share} of calls be retried, keeping {@value
   * #DEFAULT_MAX_TOKENS} tokens.
   *
   * @throws IllegalArgumentException unless {@code 0 < share <= 1}
   */
  public static RetryBudget of(double share) {
    return new RetryBudget(share, DEFAULT_MAX_TOKENS);
  }

  /**
   * A budget that lets at most {@code share} of calls be retried, keeping at most {@code maxTokens}.
   *
   * @throws IllegalArgumentException unless {@code 0 < share <= 1} and {@code maxTokens >= 1}
   */
  public static RetryBudget of(double share, int maxTokens) {
    return new RetryBudget(share, maxTokens);
  }

  /**
   * Whether a request whose attempt number {@code attempt} (0 for the first) ended with {@code
   * status} may be retried at all: only the first attempt, and only after a fast reject. The
   * budget is a separate question ({@link #tryRetry()}).
   */
  public static boolean isRetryable(Status status, int attempt) {
    return attempt == 0 && status.isShed();
  }

  /** A first attempt is made: adds {@code share} of a token, up to the maximum. */
  public void onCall() {
    long current;
    long next;
    do {
      current = thousandths.get();
      if (current >= maxThousandths) {
        return;
      }
      next = Math.min(maxThousandths, current + perCallThousandths);
    } while (!thousandths.compareAndSet(current, next));
  }

  /** Spends a token for a retry; false, spending nothing, if less than a whole token is left. */
  public boolean tryRetry() {
    long current;
    do {
      current = thousandths.get();
      if (current < TOKEN) {
        return false;
      }
    } while (!thousandths.compareAndSet(current, current - TOKEN));
    return true;
  }

  /** Tokens left, in thousandths (diagnostics and tests). */
  public long thousandths() {
    return thousandths.get();
  }

  @Override
  public String toString() {
    return "RetryBudget[share=" + perCallThousandths / (double) TOKEN + ", tokens="
        + thousandths.get() / (double) TOKEN + "/" + maxThousandths / TOKEN + "]";
  }
}
