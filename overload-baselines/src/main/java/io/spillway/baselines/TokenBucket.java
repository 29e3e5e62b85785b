package io.spillway.baselines;

/**
 * A token bucket that releases requests at a rate, with a small burst: how SEDA enforces the rate
 * its controller sets (Welsh and Culler, USITS 2003, §4.2: "the admission controller uses a token
 * bucket"). Tokens accrue continuously at {@code rate} per second up to {@code depth}; a request
 * takes one.
 *
 * <p>Times are ticker readings, compared only by difference. Not thread-safe.
 */
final class TokenBucket {

  private final double depth;
  private double tokens;
  private double ratePerNano;
  private long last;

  /** A bucket holding {@code initialTokens} at {@code nowNanos}, filling at {@code ratePerSecond}. */
  TokenBucket(double ratePerSecond, double depth, double initialTokens, long nowNanos) {
    if (!(ratePerSecond > 0) || !(depth >= 1)) {
      throw new IllegalArgumentException("rate must be positive and depth at least 1: "
          + ratePerSecond + ", " + depth);
    }
    this.depth = depth;
    this.tokens = Math.min(initialTokens, depth);
    this.ratePerNano = ratePerSecond / 1e9;
    this.last = nowNanos;
  }

  private void refill(long nowNanos) {
    long elapsed = nowNanos - last;
    if (elapsed > 0) {
      tokens = Math.min(depth, tokens + elapsed * ratePerNano);
      last = nowNanos;
    }
  }

  /** Takes a token if one is available at {@code nowNanos}. */
  boolean tryTake(long nowNanos) {
    refill(nowNanos);
    if (tokens >= 1.0) {
      tokens -= 1.0;
      return true;
    }
    return false;
  }

  /**
   * When the next whole token will be available, judged from the last reading this bucket saw; a
   * time not after that reading if one is available already. Rounded up, plus a nanosecond, so
   * that a request polled at that time finds its token despite floating-point rounding.
   */
  long nextTokenNanos() {
    if (tokens >= 1.0) {
      return last;
    }
    return last + (long) Math.ceil((1.0 - tokens) / ratePerNano) + 1;
  }

  /** Changes the rate from {@code nowNanos} on; tokens accrued so far are kept. */
  void setRate(double ratePerSecond, long nowNanos) {
    if (!(ratePerSecond > 0)) {
      throw new IllegalArgumentException("rate must be positive: " + ratePerSecond);
    }
    refill(nowNanos);
    ratePerNano = ratePerSecond / 1e9;
  }

  /** Tokens available as of the last refill. */
  double tokens() {
    return tokens;
  }
}
