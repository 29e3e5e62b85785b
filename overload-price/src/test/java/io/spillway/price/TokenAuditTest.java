package io.spillway.price;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The per-session virtual wallet that caps forged tokens, with literal numbers. */
class TokenAuditTest {

  private static final long MS = 1_000_000;
  private static final long T0 = Long.MAX_VALUE - MS; // accrual straddles the wrap

  /** 10 tokens per ms, 10 to start, at most 1,000. */
  private static TokenAudit audit(long slack) {
    return new TokenAudit(10, MS, 10, 1_000, slack);
  }

  @Test
  void aSessionIsJudgedWithAtMostWhatItCouldHaveEarned() {
    TokenAudit audit = audit(0);
    assertEquals(10, audit.admissibleTokens(1, 1_000_000_000, T0), "a new session holds 10");
    assertEquals(0, audit.admissibleTokens(1, 5, T0), "and has spent them");
    assertEquals(5, audit.admissibleTokens(1, 5, T0 + MS), "10 earned in a ms; 5 presented");
    assertEquals(10, audit.admissibleTokens(1, 100, T0 + MS + MS / 2), "5 left + 5 in half a ms");
    assertEquals(0, audit.balance(1, T0 + MS + MS / 2));
  }

  @Test
  void honestSpendingPassesUntouched() {
    TokenAudit audit = audit(0);
    long t = T0;
    assertEquals(7, audit.admissibleTokens(2, 7, t));
    for (int i = 0; i < 100; i++) {
      t += MS;
      assertEquals(10, audit.admissibleTokens(2, 10, t));
    }
    assertEquals(3, audit.balance(2, t));
  }

  @Test
  void theVirtualWalletIsCapped() {
    TokenAudit audit = audit(0);
    audit.admissibleTokens(3, 0, T0);
    assertEquals(1_000, audit.balance(3, T0 + 3_600_000 * MS));
    assertEquals(1_000, audit.admissibleTokens(3, Long.MAX_VALUE, T0 + 3_600_000 * MS));
  }

  @Test
  void theSlackIsACreditLineRepaidByLaterAccrual() {
    TokenAudit audit = audit(4);
    assertEquals(14, audit.admissibleTokens(4, 100, T0), "10 held + 4 slack");
    assertEquals(-4, audit.balance(4, T0));
    assertEquals(0, audit.balance(4, T0 + 2 * MS / 5), "0.4 ms repays the 4");
    assertEquals(3, audit.admissibleTokens(4, 3, T0 + 2 * MS / 5));
    assertEquals(1, audit.admissibleTokens(4, 9, T0 + 2 * MS / 5), "−3 + 4");
  }

  @Test
  void forgottenSessionsStartAgain() {
    TokenAudit audit = audit(0);
    audit.admissibleTokens(5, 10, T0);
    assertEquals(1, audit.sessions());
    audit.forget(5);
    assertEquals(0, audit.sessions());
    assertEquals(10, audit.admissibleTokens(5, 50, T0));
  }

  /** Requests from sessions 1,000,001..1,000,020 at {@code t}, 1 ns apart: the live traffic. */
  private static long liveTraffic(TokenAudit audit, int requestsEach, long t) {
    for (int i = 0; i < requestsEach; i++) {
      for (long id = 1_000_001; id <= 1_000_020; id++) {
        audit.admissibleTokens(id, 1, t++);
      }
    }
    return t;
  }

  /**
   * 10,000 clients send one request each and crash without deregistering. At 10 tokens per ms
   * a wallet of 1,000 fills from empty in 100 ms: before that idle time an account is kept, after
   * it the requests of the 20 live sessions sweep the dead ones away.
   */
  @Test
  void accountsOfSessionsThatVanishAreDroppedOnceTheirWalletsWouldBeFull() {
    TokenAudit audit = audit(0);
    for (long id = 1; id <= 10_000; id++) {
      audit.admissibleTokens(id, 5, T0 + id);
    }
    assertEquals(10_000, audit.sessions());

    long t = liveTraffic(audit, 1_000, T0 + 99 * MS); // the last crash was 99 ms ago: kept
    assertEquals(10_020, audit.sessions());

    liveTraffic(audit, 1_000, t + MS); // 100 ms since every crash
    assertEquals(20, audit.sessions(), "only the live sessions keep an account");
  }

  /**
   * Where a new wallet starts full (initial = max), a dropped account costs its client nothing:
   * the session that comes back after its account was swept is judged with its full wallet.
   */
  @Test
  void anHonestClientBackFromIdlingIsJudgedWithItsFullWallet() {
    TokenAudit audit = new TokenAudit(10, MS, 1_000, 1_000, 0);
    assertEquals(1_000, audit.admissibleTokens(7, 1_000, T0));
    assertEquals(0, audit.balance(7, T0));
    liveTraffic(audit, 1_000, T0 + 100 * MS);
    assertEquals(20, audit.sessions(), "session 7's idle account was dropped");
    assertEquals(1_000, audit.admissibleTokens(7, 1_000, T0 + 200 * MS), "its full wallet");
  }

  /**
   * Where a new wallet starts below the cap, a dropped account is re-created with the initial
   * tokens: its client, back after at least the time to fill its wallet, is judged with 10 + slack
   * rather than 1,000 + slack, a loss of at most max − initial = 990 tokens over the rest of the
   * session. Waiting to be dropped gains a forger nothing: its kept wallet would be full.
   */
  @Test
  void aDroppedAccountStartsAgainWithTheInitialTokensNoMore() {
    TokenAudit audit = audit(4);
    assertEquals(14, audit.admissibleTokens(8, 1_000_000, T0), "10 held + 4 slack");
    liveTraffic(audit, 1_000, T0 + 100 * MS + 4 * MS / 10); // repays the slack, then fills
    assertEquals(20, audit.sessions());
    assertEquals(14, audit.admissibleTokens(8, 1_000_000, T0 + 200 * MS), "10 + 4, not 1,000 + 4");
    assertEquals(1_000, audit.balance(8, T0 + 302 * MS), "and it earns its way back to the cap");
  }

  /**
   * A client that invents a session id for every request must not grow the audit without bound:
   * each id would otherwise keep an account for the idle period (100 s with the defaults). Beyond
   * the cap, a session without an account is judged as a new account would judge its first
   * request, and no account is made for it.
   */
  @Test
  void sessionsInventedFasterThanTheyIdleOutHoldAtMostTheCapOfAccounts() {
    TokenAudit audit = audit(4);
    int cap = 1 << 18;
    for (long id = 1; id <= cap + 1_000; id++) {
      audit.admissibleTokens(id, 1_000_000, T0);
    }
    assertEquals(cap, audit.sessions(), "the accounts stop at the cap");
    assertEquals(14, audit.admissibleTokens(cap + 5_000, 1_000_000, T0),
        "an unaccounted session is judged as a new account: 10 held + 4 slack");
    assertEquals(14, audit.admissibleTokens(cap + 5_000, 1_000_000, T0),
        "and again: it never had an account to drain (an invented id per request gets as much)");
    assertEquals(cap, audit.sessions());
    assertEquals(-4, audit.balance(1, T0), "a session with an account keeps it");

    // Every invented session's wallet would be full: the live sessions' requests sweep them away,
    // at least one account a request (the cap's first ones while it is full, then as before).
    liveTraffic(audit, 1_000, T0 + 101 * MS);
    assertTrue(audit.sessions() <= cap - 20_000 + 20, "idle accounts make room: " + audit.sessions());
    assertEquals(14, audit.admissibleTokens(cap + 6_000, 1_000_000, T0 + 102 * MS));
    assertEquals(-4, audit.balance(cap + 6_000, T0 + 102 * MS), "below the cap, new accounts again");
  }

  @Test
  void negativeTokensAreNone() {
    assertEquals(0, audit(0).admissibleTokens(6, -20, T0));
  }
}
