package io.spillway.price;

import java.util.Objects;
import java.util.random.RandomGenerator;

/**
 * A client's token pool (rajomon-nsdi25 §3.3): replenished by refill events ({@link TokenRefill}),
 * spent on outgoing requests, capped at a maximum.
 *
 * <p>Accrual is lazy: the wallet keeps the time of its next refill event and, whenever it is
 * touched with a reading of the clock, applies every event that fell due since. No timer runs per
 * client, so ten thousand simulated clients cost nothing while idle; {@link #nextRefillNanos()}
 * tells a waiting client when to look again. The authors' code instead runs a goroutine per
 * client ({@code initOptions.go}, {@code tokenRefill}) that adds tokens on a ticker.
 *
 * <p>Clock readings are compared by difference, so the wallet survives a clock that wraps past
 * {@link Long#MAX_VALUE}. A reading older than one already seen accrues nothing. The wallet starts,
 * holding its initial tokens, at the first reading it is given.
 *
 * <p>Randomness (Poisson gaps, uniform refill amounts, uniform spending) comes from the generator
 * passed in; a seeded generator makes the wallet deterministic.
 *
 * <p>Beyond the paper: the cap. The paper and the authors' code let tokens accumulate without bound
 * (the authors' {@code maxToken} is never read). A cap bounds the burst of a client that was idle,
 * and gives the server's token audit ({@link RajomonConfig#tokenAudit()}) something to check
 * against.
 *
 * <p>Not thread-safe: a wallet belongs to one client session, confined to its thread.
 */
final class TokenWallet {

  /**
   * Past this many refill events in one accrual, the rest are added at their mean instead of one
   * by one (only reachable with a very large cap: a capped wallet stops counting once full).
   */
  private static final long EXACT_EVENTS = 4_096;

  private final TokenRefill refill;
  private final long tokensPerRefill;
  private final long refillIntervalNanos;
  private final long initialTokens;
  private final long maxTokens;
  private final RandomGenerator random;

  private boolean started;
  private long lastNanos;
  private long nextRefillNanos;
  private long balance;

  /**
   * @param refill how refill events are spaced and sized
   * @param tokensPerRefill tokens per refill event (the mean per event for {@link
   *     TokenRefill#UNIFORM} is {@code tokensPerRefill − ½})
   * @param refillIntervalNanos the (mean) time between refill events
   * @param initialTokens the balance at the first reading
   * @param maxTokens the most the wallet holds; refills beyond it are lost
   * @param random the source of every random draw
   * @throws IllegalArgumentException if a value is out of range
   */
  public TokenWallet(TokenRefill refill, long tokensPerRefill, long refillIntervalNanos,
      long initialTokens, long maxTokens, RandomGenerator random) {
    this.refill = Objects.requireNonNull(refill, "refill");
    this.random = Objects.requireNonNull(random, "random");
    if (tokensPerRefill < 1 || refillIntervalNanos < 1) {
      throw new IllegalArgumentException("token refill needs a positive step and interval: "
          + tokensPerRefill + " tokens every " + refillIntervalNanos + "ns");
    }
    if (maxTokens < 1 || maxTokens > RajomonConfig.MAX_TOKENS) {
      throw new IllegalArgumentException("maxTokens must be in [1, " + RajomonConfig.MAX_TOKENS
          + "], got " + maxTokens);
    }
    if (initialTokens < 0 || initialTokens > maxTokens) {
      throw new IllegalArgumentException("initialTokens must be in [0, maxTokens=" + maxTokens
          + "], got " + initialTokens);
    }
    if (tokensPerRefill > maxTokens) {
      throw new IllegalArgumentException("tokensPerRefill (" + tokensPerRefill
          + ") must not exceed maxTokens (" + maxTokens + ")");
    }
    this.tokensPerRefill = tokensPerRefill;
    this.refillIntervalNanos = refillIntervalNanos;
    this.initialTokens = initialTokens;
    this.maxTokens = maxTokens;
  }

  /** A wallet following {@code config}'s token policy. */
  public static TokenWallet of(RajomonConfig config, RandomGenerator random) {
    return new TokenWallet(config.tokenRefill(), config.tokensPerRefill(),
        config.refillIntervalNanos(), config.initialTokens(), config.maxTokens(), random);
  }

  /** The balance at {@code nowNanos}, after every refill due by then. */
  public long balance(long nowNanos) {
    accrue(nowNanos);
    return balance;
  }

  /** The most the wallet holds. */
  public long maxTokens() {
    return maxTokens;
  }

  /**
   * Withdraws exactly {@code amount} tokens if the balance at {@code nowNanos} covers it.
   *
   * @return whether it did
   * @throws IllegalArgumentException if {@code amount} is negative
   */
  public boolean tryWithdraw(long amount, long nowNanos) {
    if (amount < 0) {
      throw new IllegalArgumentException("negative withdrawal: " + amount);
    }
    accrue(nowNanos);
    if (balance < amount) {
      return false;
    }
    balance -= amount;
    return true;
  }

  /**
   * Withdraws a uniform random amount in {@code [0, balance]} and returns it: the randomized part
   * of a request's tokens (rajomon-nsdi25 §3.3 "Randomized Token Spending").
   */
  public long withdrawUniform(long nowNanos) {
    accrue(nowNanos);
    long amount = balance == 0 ? 0 : random.nextLong(balance + 1);
    balance -= amount;
    return amount;
  }

  /** Puts back tokens withdrawn for a request that was never sent; the cap still applies. */
  public void deposit(long amount, long nowNanos) {
    if (amount < 0) {
      throw new IllegalArgumentException("negative deposit: " + amount);
    }
    accrue(nowNanos);
    add(amount);
  }

  /**
   * When the next refill event lands (it may add nothing if the wallet is full or a uniform draw
   * is zero). Meaningful once the wallet has been read.
   */
  public long nextRefillNanos() {
    return nextRefillNanos;
  }

  private void accrue(long nowNanos) {
    if (!started) {
      started = true;
      lastNanos = nowNanos;
      balance = initialTokens;
      nextRefillNanos = nowNanos + firstGap();
      return;
    }
    if (nowNanos - lastNanos < 0) {
      return; // an older reading: nothing new is due
    }
    lastNanos = nowNanos;
    if (nowNanos - nextRefillNanos < 0) {
      return;
    }
    switch (refill) {
      case FIXED -> {
        long events = (nowNanos - nextRefillNanos) / refillIntervalNanos + 1;
        add(saturatingMultiply(events, tokensPerRefill));
        nextRefillNanos += events * refillIntervalNanos;
      }
      case UNIFORM -> {
        long events = (nowNanos - nextRefillNanos) / refillIntervalNanos + 1;
        long drawn = 0;
        while (drawn < events && drawn < EXACT_EVENTS && balance < maxTokens) {
          add(random.nextLong(2 * tokensPerRefill));
          drawn++;
        }
        if (drawn == EXACT_EVENTS && balance < maxTokens) {
          add(saturatingMultiply(events - drawn, tokensPerRefill)); // mean of the rest, rounded up
        }
        nextRefillNanos += events * refillIntervalNanos;
      }
      case POISSON -> {
        long counted = 0;
        while (nowNanos - nextRefillNanos >= 0) {
          if (balance >= maxTokens || counted == EXACT_EVENTS) {
            if (balance < maxTokens) {
              add(saturatingMultiply((nowNanos - nextRefillNanos) / refillIntervalNanos + 1,
                  tokensPerRefill));
            }
            // Full: the events until now would be lost. The process is memoryless, so the next
            // event after now is an exponential gap away.
            nextRefillNanos = nowNanos + exponentialGap();
            break;
          }
          add(tokensPerRefill);
          counted++;
          nextRefillNanos += exponentialGap();
        }
      }
    }
  }

  private long firstGap() {
    return refill == TokenRefill.POISSON ? exponentialGap() : refillIntervalNanos;
  }

  private long exponentialGap() {
    return Math.max(1, Math.round(random.nextExponential() * refillIntervalNanos));
  }

  private void add(long tokens) {
    balance = tokens >= maxTokens - balance ? maxTokens : balance + tokens;
  }

  private static long saturatingMultiply(long a, long b) {
    long high = Math.multiplyHigh(a, b);
    long low = a * b;
    return high != 0 || low < 0 ? Long.MAX_VALUE : low;
  }

  @Override
  public String toString() {
    return "TokenWallet[" + refill + " " + tokensPerRefill + " per " + refillIntervalNanos
        + "ns, balance=" + balance + "/" + maxTokens + "]";
  }
}
