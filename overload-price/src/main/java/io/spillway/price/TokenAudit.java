package io.spillway.price;

import java.util.Iterator;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;

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
 * <p><b>Idle accounts.</b> A client that crashes never deregisters, so accounts are also dropped
 * once idle for the time the mean refill takes to fill a wallet from its lowest balance
 * ({@code −slack}) to {@code maxTokens}: by then the virtual wallet is full whatever it held, so
 * all the account still says is "full". A session that comes back is given a new account, which
 * starts with {@code initialTokens}. That never judges anyone above what the dropped account
 * would have (initial ≤ max), so waiting to be dropped gains a forger nothing, and where {@code
 * initialTokens == maxTokens} it costs an honest client nothing. Where {@code initialTokens <
 * maxTokens}, the loss is bounded: the new account starts {@code maxTokens − initialTokens}
 * below the kept one, is debited no more than it and accrues no less (the kept one, full, loses
 * its accrual to the cap first), so over the rest of the session the client is judged with at
 * most {@code maxTokens − initialTokens} tokens less in total (plus one for rounding), and only
 * on requests presenting more than the new account holds plus the slack. With the defaults (10
 * initial, 100,000 max, 1 token per ms) that is a client idle for over 100 s whose first requests
 * back are capped until its account refills.
 *
 * <p><b>At most {@value #MAX_ACCOUNTS} accounts.</b> A client can invent a session id for every
 * request, and each id would keep an account for the idle period. Beyond the cap, a request of a
 * session without an account is judged as a new account judges its first request ({@code
 * initialTokens} plus the slack) and no account is made; every such request sweeps, so room comes
 * back as the oldest accounts come due. That gives an invented id nothing it would not get with
 * an account of its own (a new id per request is judged so on every request anyway), and costs an
 * honest session that arrives while the audit is full only the tokens it earned beyond a new
 * wallet's, until there is room. No thread runs for this: requests sweep a few accounts each, on every account's first
 * request and every {@value #SWEEP_EVERY}th after, {@value #SWEEP_BATCH} accounts at a time, so
 * the map is walked at least as fast as accounts are created (a request that finds another
 * sweeping leaves its share to the next sweep), and idleness is judged with the
 * clock readings the requests bring.
 *
 * <p>Thread-safe: accounts live in a concurrent map and each is locked while it is debited or
 * checked for idleness; one request at a time sweeps (the others skip it).
 */
final class TokenAudit {

  private final long tokensPerRefill;
  private final long refillIntervalNanos;
  private final long initialTokens;
  private final long maxTokens;
  private final long slackTokens;
  private final long idleNanos; // an account idle this long is full; Long.MAX_VALUE: never
  private final ConcurrentHashMap<Long, Account> accounts = new ConcurrentHashMap<>();

  /**
   * The most accounts kept (each about 100 bytes with its map entry, so 26 MB at most). A client
   * that invents a session id per request would otherwise keep an account per request for the
   * idle period: at 10,000 requests a second and the defaults' 100 s, a million.
   */
  static final int MAX_ACCOUNTS = 1 << 18;

  /** An account's requests between two sweeps it runs (a power of two). */
  static final int SWEEP_EVERY = 16;
  /** Accounts a sweep looks at. */
  static final int SWEEP_BATCH = 16;

  /** The most batches one sweep takes on, owed ones included. */
  private static final int MAX_SWEEP_BATCHES = 64;

  private final ReentrantLock sweepLock = new ReentrantLock();
  private final AtomicInteger sweepsOwed = new AtomicInteger(); // skipped while another swept
  private Iterator<Long> sweepCursor; // guarded by sweepLock

  TokenAudit(long tokensPerRefill, long refillIntervalNanos, long initialTokens, long maxTokens,
      long slackTokens) {
    this.tokensPerRefill = tokensPerRefill;
    this.refillIntervalNanos = refillIntervalNanos;
    this.initialTokens = initialTokens;
    this.maxTokens = maxTokens;
    this.slackTokens = slackTokens;
    // ⌈(max + slack) · interval / perRefill⌉: from −slack to max at the mean rate.
    long scaled = saturatingMultiply(saturatingAdd(maxTokens, slackTokens), refillIntervalNanos);
    this.idleNanos = scaled == Long.MAX_VALUE ? Long.MAX_VALUE
        : Math.ceilDiv(scaled, tokensPerRefill);
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
    long asked = Math.max(0, presented);
    while (true) {
      Account account = accounts.get(sessionId);
      if (account == null) {
        if (accounts.mappingCount() >= MAX_ACCOUNTS) {
          sweep(nowNanos); // makes room as the idle accounts come due
          return Math.min(asked, initialTokens + slackTokens); // a new account's first judgement
        }
        account = accounts.computeIfAbsent(sessionId, id -> new Account(nowNanos));
      }
      long allowed;
      boolean sweep;
      synchronized (account) {
        if (account.dropped) {
          continue; // swept after this request found it: debit the session's current account
        }
        allowed = account.spend(asked, nowNanos);
        sweep = (account.requests++ & (SWEEP_EVERY - 1)) == 0;
      }
      if (sweep) {
        sweep(nowNanos);
      }
      return allowed;
    }
  }

  /**
   * Looks at the next {@value #SWEEP_BATCH} accounts, continuing where the last sweep stopped, and
   * drops those idle for at least {@code idleNanos}. A request that finds another sweeping leaves
   * its batch to that one's successor instead of waiting, so concurrent requests walk the map as
   * fast as one would.
   */
  private void sweep(long nowNanos) {
    if (!sweepLock.tryLock()) {
      sweepsOwed.incrementAndGet();
      return;
    }
    try {
      int batches = Math.min(MAX_SWEEP_BATCHES, 1 + sweepsOwed.getAndSet(0));
      boolean restarted = false;
      for (int i = 0; i < batches * SWEEP_BATCH; i++) {
        if (sweepCursor == null || !sweepCursor.hasNext()) {
          if (restarted) {
            return; // the whole map was looked at in this sweep
          }
          sweepCursor = accounts.keySet().iterator();
          restarted = true;
          if (!sweepCursor.hasNext()) {
            return;
          }
        }
        Long sessionId = sweepCursor.next();
        Account account = accounts.get(sessionId);
        if (account == null) {
          continue;
        }
        synchronized (account) {
          // Negative where this request's reading is older than the account's last: kept.
          long idle = nowNanos - account.lastNanos;
          if (!account.dropped && idle >= idleNanos) {
            account.dropped = true; // a request holding it retries with a new account
            accounts.remove(sessionId, account);
          }
        }
      }
    } finally {
      sweepLock.unlock();
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
    int requests; // counts to the next sweep; wraps harmlessly
    boolean dropped; // set, under this account's lock, as the sweep removes it from the map

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
