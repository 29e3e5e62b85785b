package io.spillway.price;

import static org.junit.jupiter.api.Assertions.assertEquals;

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

  @Test
  void negativeTokensAreNone() {
    assertEquals(0, audit(0).admissibleTokens(6, -20, T0));
  }
}
