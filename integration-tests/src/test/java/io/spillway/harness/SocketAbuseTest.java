package io.spillway.harness;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.Status;
import io.spillway.transport.SpillwayClient;
import io.spillway.transport.SpillwayServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A client that ignores its credit window, on real sockets ({@link AbuseWorkload}): beside
 * {@value #HONEST_SESSIONS} honest sessions that each make {@value #CALLS_PER_SESSION} calls,
 * {@value AbuseWorkload#HONEST_OUTSTANDING} at a time, a raw connection keeps
 * {@value AbuseWorkload#GREEDY_OUTSTANDING} requests in flight on one credit and resends every
 * answer at once, until the honest sessions are done. Driven by counts, not by time: what each
 * side is served depends on how the two cores are shared and is measured by
 * {@link SocketAbuseMain}; what is asserted here holds however the threads are scheduled.
 *
 * <p>From the server's own ledger ({@link GrantLedger} around the gate, and a
 * {@link io.spillway.api.testing.LeakCheckingServerGate} around that): every admitted request
 * ends exactly once; the greedy session is never admitted with more in the server than the most
 * credits it was ever granted, and is refused for credit only while its whole grant is in the
 * server; it is refused at least once (its first burst is 16 requests on one credit), so the
 * window was enforced, not merely never reached; no honest session is refused for credit. From
 * the clients: every honest call ends exactly once, none fails with its connection.
 */
class SocketAbuseTest {

  private static final int HONEST_SESSIONS = AbuseWorkload.HONEST_SESSIONS;
  private static final long CALLS_PER_SESSION = 2_000;

  @Test
  @Timeout(120) // a bound for a hang, not a measurement: the run takes a few seconds
  void aClientIgnoringItsWindowIsHeldToItsGrantAndHonestSessionsLoseNothing() throws Exception {
    GrantLedger ledger = new GrantLedger(AbuseWorkload.scheme());
    LeakCheckingScheme scheme = new LeakCheckingScheme(ledger);
    AbuseWorkload.Honest honest;
    long[] honestIds;
    String greedyAccount;
    GrantLedger.Account greedyLedger;
    long greedyAnswered;
    try (SpillwayServer server = AbuseWorkload.server(scheme);
        SpillwayClient client = AbuseWorkload.client(server.port(), HONEST_SESSIONS, 1);
        AbuseWorkload.Greedy greedy = new AbuseWorkload.Greedy(server.port(), 0, false)) {
      honest = new AbuseWorkload.Honest(client, CALLS_PER_SESSION);
      honestIds = honest.sessionIds();
      honest.awaitEnded();
      // the honest sessions' ledgers, read while they are still registered
      for (long id : honestIds) {
        GrantLedger.Account a = ledger.account(id);
        assertNotNull(a, "session " + id + " reached the server");
        assertEquals(0, a.refusedForCredit(), "an honest session is never refused for credit: session "
            + id + " " + a);
      }
      greedy.stop();
      greedy.awaitDrained();
      assertNull(greedy.failure(), "the greedy session's connection stayed open");
      greedyLedger = ledger.account(AbuseWorkload.GREEDY_SESSION);
      greedyAccount = String.valueOf(greedyLedger);
      greedyAnswered = greedy.answered();
    }
    System.out.println("SocketAbuseTest: greedy session " + greedyAccount + "; honest calls "
        + honest.issued + ", served " + honest.served + ", refused " + honest.refused);

    // (a) every admitted request ends exactly once
    assertEquals(0, scheme.checker().outstanding(), "every admitted request ended");
    scheme.checker().assertNoLeaks();

    // (b) no honest call lost, failed or ended twice
    assertEquals(HONEST_SESSIONS * CALLS_PER_SESSION, honest.issued.get(), "every planned call was made");
    assertEquals(honest.issued.get(), honest.ended.get(), "every honest call ends");
    assertEquals(0, honest.endedTwice.get(), "no honest call ends twice");
    assertEquals(0, honest.failed.get(), "no honest call failed with its connection");
    assertNull(honest.refused.get(Status.REJECTED_NO_CREDIT), "no honest call refused for credit");

    // (c) the greedy session is held to its grant, and the grant was what held it
    assertNotNull(greedyLedger, "the greedy session reached the server");
    assertTrue(ledger.violations().isEmpty(), String.join("\n", ledger.violations()));
    assertEquals(0, greedyLedger.admittedBeyondGrant(), greedyAccount);
    assertEquals(0, greedyLedger.refusedWithRoom(), greedyAccount);
    assertTrue(greedyLedger.refusedForCredit() > 0,
        "16 requests on one credit must be refused some of the time: " + greedyAccount);
    assertTrue(greedyLedger.admitted() > 0, "the greedy session was served too: " + greedyAccount);
    assertEquals(greedyLedger.admitted() + greedyLedger.refusedForCredit(), greedyAnswered,
        "every request of the greedy session was answered once: " + greedyAccount);
  }
}
