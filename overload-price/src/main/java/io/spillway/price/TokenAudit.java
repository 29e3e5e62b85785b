package io.spillway.price;

import java.util.concurrent.ConcurrentHashMap;

/**
 * A server-side check that a session's tokens were earned (beyond the paper: rajomon-nsdi25 §6
 * "Malicious Clients" notes that a client could forge its token count). For every session the
 * audit keeps a virtual wallet that follows the token policy the clients follow: it starts with
 * the initial tokens at the session's first request, accrues the mean refill rate ({@code
 * tokensPerRefill} per {@code refillIntervalNanos}, exact for Poisson and fixed refill, half a token
 * per interval generous for uniform), holds at most {@code maxTokens}, and is debited with what each
 * request presents.
 *
 * <p>A request presenting more than the virtual balance plus a slack is <b>capped</b> to that
 * amount: the server judges it as if it carried only what the session could have earned. We cap
 * rather than reject because an honest client's random refills can run ahead of the mean (a Poisson
 * count after n expected events deviates by about √n), and capping only costs such a client a
 * little priority, while rejecting would drop its request outright. A forger gains nothing either
 * way: once its virtual wallet is drained it is judged at (close to) zero tokens, and is shed as
 * soon as the price is above that.
 *
 * <p>Use it only on servers whose sessions are end clients with their own wallets (the front end).
 * A service that calls another forwards its callers' tokens (§3.4), which no per-session wallet
 * explains. Session ids must be authenticated by the transport for the audit to mean anything: a
 * new session id starts with a fresh wallet. Accounts are dropped when their session deregisters.
 *
 * <p>Thread-safe: accounts live in a concurrent map and each is locked while it is debited.
 */
final class TokenAudit {

  private final long tokensPerRefill;
  private final long refillIntervalNanos;
  private final long initialTokens;
  private final long maxTokens;
  private final long slackTokens;
  private final ConcurrentHashMap<Long, Account> accounts = new ConcurrentHashMap<>();

  TokenAudit(long tokensPerRefill, long refillIntervalNanos, long initialTokens, long maxTokens,
      long slackTokens) {
    this.tokensPerRefill = tokensPerRefill;
    this.refillIntervalNanos = refillIntervalNanos;
    this.initialTokens = initialTokens;
    this.maxTokens = maxTokens;
    this.slackTokens = slackTokens;
  }

  static TokenAudit of(RajomonConfig config) {
    return new TokenAudit(config.tokensPerRefill(), config.refillIntervalNanos(),
        config.initialTokens(), config.maxTokens(), config.auditSlackTokens());
  }

  /**
   * Debits {@code presented} tokens from the session's virtual wallet, capped at what it holds
   * plus the slack, and returns the tokens the request is judged with.
   */
  long admissibleTokens(long sessionId, long presented, long nowNanos) {
    Account account = accounts.computeIfAbsent(sessionId, id -> new Account(nowNanos));
    synchronized (account) {
      return account.spend(Math.max(0, presented), nowNanos);
    }
  }

  /** The session's virtual balance at {@code nowNanos}, or {@code initialTokens} if unknown. */
  long balance(long sessionId, long nowNanos) {
    Account account = accounts.get(sessionId);
    if (account == null) {
      return initialTokens;
    }
    synchronized (account) {
      account.accrue(nowNanos);
      return account.balance;
    }
  }

  /** Drops the session's account. */
  void forget(long sessionId) {
    accounts.remove(sessionId);
  }

  /** Sessions with an account. */
  int sessions() {
    return accounts.size();
  }

  private final class Account {
    long balance; // may dip to −slack: the slack is a credit line repaid by later accrual
    long remainder; // accrued token·ns not yet a whole token, in units of 1/refillIntervalNanos
    long lastNanos;

    Account(long nowNanos) {
      balance = initialTokens;
      lastNanos = nowNanos;
    }

    long spend(long presented, long nowNanos) {
      accrue(nowNanos);
      long allowed = Math.min(presented, balance + slackTokens);
      balance -= allowed;
      return allowed;
    }

    void accrue(long nowNanos) {
      long elapsed = nowNanos - lastNanos;
      if (elapsed <= 0) {
        return; // an older reading (or the same one): nothing new is due
      }
      lastNanos = nowNanos;
      if (balance >= maxTokens) {
        remainder = 0;
        return;
      }
      long scaled = saturatingAdd(saturatingMultiply(elapsed, tokensPerRefill), remainder);
      long tokens = scaled / refillIntervalNanos;
      if (tokens >= maxTokens - balance) {
        balance = maxTokens;
        remainder = 0;
      } else {
        balance += tokens;
        remainder = scaled % refillIntervalNanos;
      }
    }
  }

  private static long saturatingMultiply(long a, long b) {
    long high = Math.multiplyHigh(a, b);
    long low = a * b;
    return high != 0 || low < 0 ? Long.MAX_VALUE : low;
  }

  private static long saturatingAdd(long a, long b) {
    long sum = a + b;
    return sum < 0 ? Long.MAX_VALUE : sum;
  }
}
