package io.spillway.harness;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.Status;
import io.spillway.transport.SpillwayClient;
import io.spillway.transport.SpillwayServer;
import java.util.concurrent.TimeUnit;
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
 *
 * <p>Beside the same honest sessions, a client that deregisters them ({@link
 * AbuseWorkload.Forger}): an honest session of the same appetite on a connection of its own that
 * sends a deregister frame for every honest session's id each millisecond, until it has sent
 * {@value #FORGED_FRAMES}. Asserted from the server's ledger: the gate is told to deregister no
 * session while the frames arrive, every honest session keeps the account it registered with (one
 * ended would register again with a fresh account of one credit), and the forger's own session,
 * deregistered on its own connection, is ended once, so the ledger sees a deregistration that
 * happens. From the clients: every call of both ends exactly once, none fails with its connection,
 * no honest call is refused for credit, and every honest session is served again between the
 * forger's arrival and the moment its frames have all been read.
 */
class SocketAbuseTest {

  private static final int HONEST_SESSIONS = AbuseWorkload.HONEST_SESSIONS;
  private static final long CALLS_PER_SESSION = 2_000;
  /** Forged deregister frames sent, one round (a frame per honest session) a millisecond. */
  private static final long FORGED_FRAMES = 1_000L * HONEST_SESSIONS;

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

  @Test
  @Timeout(120) // a bound for a hang, not a measurement: the forging takes about a second
  void aForgedDeregistrationEndsNoHonestSessionAndCostsItNoCredit() throws Exception {
    GrantLedger ledger = new GrantLedger(AbuseWorkload.scheme());
    LeakCheckingScheme scheme = new LeakCheckingScheme(ledger);
    AbuseWorkload.Honest honest;
    AbuseWorkload.Honest forgerCalls;
    long forged;
    try (SpillwayServer server = AbuseWorkload.server(scheme);
        SpillwayClient client = AbuseWorkload.client(server.port(), HONEST_SESSIONS, 1)) {
      honest = new AbuseWorkload.Honest(client, AbuseWorkload.UNTIL_STOPPED);
      long[] honestIds = honest.sessionIds();
      assertTrue(honest.awaitEveryServed(60, TimeUnit.SECONDS), "every honest session was served once");
      // each is registered now, bound to its connection: the accounts a forged frame would end
      GrantLedger.Account[] accounts = new GrantLedger.Account[HONEST_SESSIONS];
      for (int i = 0; i < HONEST_SESSIONS; i++) {
        accounts[i] = ledger.account(honestIds[i]);
        assertNotNull(accounts[i], "session " + honestIds[i] + " reached the server");
      }
      long[] servedBefore = honest.servedNow();
      try (AbuseWorkload.Forger forger = new AbuseWorkload.Forger(server.port(), honestIds[0], HONEST_SESSIONS)) {
        forgerCalls = forger.own;
        forger.forgeEvery(TimeUnit.MILLISECONDS.toNanos(1));
        assertTrue(forger.awaitForged(FORGED_FRAMES, 60, TimeUnit.SECONDS), "the forger sent its frames");
        forged = forger.stopForging();
        forger.confirmDecoded(); // answered after the last forged frame: the server has read them all
        long[] servedDuring = honest.servedNow();

        // (a) no session ended, the honest ones with the accounts they registered with
        assertEquals(0, ledger.deregistrations(), "the gate was told to deregister no session");
        for (int i = 0; i < HONEST_SESSIONS; i++) {
          long id = honestIds[i];
          assertEquals(0, ledger.deregistrations(id), "session " + id + " was not ended");
          assertSame(accounts[i], ledger.account(id), "session " + id + " kept its account and its credits: "
              + ledger.account(id));
          assertTrue(servedDuring[i] > servedBefore[i], "session " + id + " was served again by the time the frames were read");
        }

        // (b) the ledger sees a deregistration that does happen: the forger's own, on its connection
        forger.deregisterOwn();
        forger.confirmDecoded();
        assertEquals(1, ledger.deregistrations(forger.ownId()), "the forger's own session was ended once");
        assertEquals(1, ledger.deregistrations(), "and no other");
      }
      honest.stop();
      honest.awaitEnded();
    }
    System.out.println("SocketAbuseTest: " + forged + " forged deregistrations read by the server, 0 sessions"
        + " ended by them; honest calls " + honest.issued + ", served " + honest.served + ", refused "
        + honest.refused + "; the forger's calls " + forgerCalls.issued + ", served " + forgerCalls.served);
    assertTrue(forged >= FORGED_FRAMES, "forged " + forged);

    // (c) every admitted request ends exactly once
    assertEquals(0, scheme.checker().outstanding(), "every admitted request ended");
    scheme.checker().assertNoLeaks();
    assertTrue(ledger.violations().isEmpty(), String.join("\n", ledger.violations()));

    // (d) no call of either lost, failed or ended twice; no honest call refused for credit
    for (AbuseWorkload.Honest calls : new AbuseWorkload.Honest[] {honest, forgerCalls}) {
      assertEquals(calls.issued.get(), calls.ended.get(), "every call ends");
      assertEquals(0, calls.endedTwice.get(), "no call ends twice");
      assertEquals(0, calls.failed.get(), "no call failed with its connection");
    }
    assertNull(honest.refused.get(Status.REJECTED_NO_CREDIT), "no honest call refused for credit");
  }
}
