package io.spillway.api.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.spillway.api.ClientEnvironment;
import io.spillway.api.ClientGate;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.OverloadScheme;
import io.spillway.api.Outcome;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerPermit;
import io.spillway.api.Status;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The contract every admission scheme must pass (one suite run against every implementation).
 * Subclass it and return the scheme under test; the suite drives it in a {@link ContractWorld} in virtual time.
 *
 * <ul>
 *   <li>every request ends exactly once, and every permit is completed exactly once;
 *   <li>a credit scheme's clients never have more in flight than they were granted; its server
 *       never refuses them for credit, even while it shrinks their windows, and holds a client
 *       that floods past its grant to exactly the window it granted, and one that ignores its
 *       window and resends every refusal to no more than it serves the same client honouring it,
 *       and one that invents a session id for every request to no more than that either;
 *   <li>after an overload step ends, the scheme serves the reduced load in full again;
 *   <li>the results are the same with a clock started just before {@link Long#MAX_VALUE}.
 * </ul>
 *
 * <p>Seeds are fixed; set {@code -Dspillway.seed=N} to explore another.
 */
public abstract class AdmissionContract {

  /** The world's shape: 50 clients, 4 workers, 10 µs service, 10 µs RTT, 200 µs SLO. */
  protected static final int CLIENTS = 50;
  protected static final int WORKERS = 4;
  protected static final long SERVICE_NANOS = 10_000;
  protected static final long RTT_NANOS = 10_000;
  protected static final long SLO_NANOS = 200_000;
  private static final long MS = 1_000_000;

  /** The scheme under test, configured for the world's SLO and RTT. */
  protected abstract OverloadScheme scheme(long sloNanos, long rttNanos);

  protected long seed() {
    String s = System.getProperty("spillway.seed");
    return s == null || s.isBlank() ? 42 : Long.parseLong(s);
  }

  private ContractWorld world(long origin) {
    return new ContractWorld(scheme(SLO_NANOS, RTT_NANOS), origin, CLIENTS, WORKERS,
        SERVICE_NANOS, RTT_NANOS, SLO_NANOS, seed());
  }

  private static double capacity() {
    return WORKERS * 1e9 / SERVICE_NANOS;
  }

  @Test
  void everyRequestAndEveryPermitEndsExactlyOnce() {
    ContractWorld w = world(0);
    w.setRate(2 * capacity());
    w.runFor(50 * MS);
    w.setRate(0);
    w.runFor(500 * MS); // long enough to drain even an uncontrolled backlog
    assertTrue(w.issued() > 1000, "the world should have been busy: " + w.fingerprint());
    assertEquals(0, w.unfinished(), "every request must end: " + w.fingerprint());
    assertEquals(0, w.endedTwice(), "no request may end twice: " + w.fingerprint());
    assertEquals(0, w.gate().outstanding(), "every permit must be completed");
    w.gate().assertNoLeaks();
  }

  @Test
  void aPermitCannotBeCompletedTwice() {
    ContractWorld w = world(0);
    ServerPermit permit = w.gate().admit(
        new RequestMetadata().sessionId(1).flags(RequestMetadata.FLAG_REGISTER), w.clock().read());
    assertNotNull(permit);
    Outcome outcome = permit.isAdmitted() ? Outcome.SUCCESS : Outcome.DROPPED;
    permit.complete(outcome, w.clock().read(), new ResponseMetadata());
    assertThrows(IllegalStateException.class,
        () -> permit.complete(outcome, w.clock().read(), new ResponseMetadata()));
  }

  /**
   * A request withdrawn from a client gate (its caller gave up) leaves the queue at once: it is
   * no longer queued, never released or expired, and the demand a later request reports does not
   * count it; the others keep their order.
   */
  @Test
  void aWithdrawnRequestLeavesTheClientQueueAtOnce() {
    ClientGate<String> g = scheme(SLO_NANOS, RTT_NANOS).newClientGate(
        new ClientEnvironment(7, SLO_NANOS, OverloadMetrics.NONE));
    long now = 1_000;
    String a = "a";
    String b = "b";
    String c = "c";
    assumeTrue(g.offer(a, now) && g.offer(b, now) && g.offer(c, now),
        "the gate queued all three (a client-side drop refuses some)");
    assertEquals(3, g.queued());
    assertTrue(g.remove(b, now));
    assertEquals(2, g.queued());
    assertFalse(g.remove(b, now), "withdrawn once");
    assertFalse(g.remove("not offered", now));
    List<String> left = new ArrayList<>();
    RequestMetadata header = new RequestMetadata();
    String first = g.poll(now, header);
    if (first != null) {
      assertEquals(a, first);
      assertEquals(1, header.demand(), "the demand behind a counts c only");
      left.add(first);
    }
    g.expire(now + (1L << 62), left::add);
    assertEquals(List.of(a, c), left);
    assertEquals(0, g.queued());
  }

  @Test
  void clientsNeverSendBeyondTheirGrant() {
    assumeTrue(scheme(SLO_NANOS, RTT_NANOS).issuesCredits(), "scheme issues no credits");
    ContractWorld w = world(0);
    w.setRate(3 * capacity());
    w.runFor(30 * MS);
    w.setRate(0.5 * capacity());
    w.runFor(30 * MS);
    assertTrue(w.grantViolations().isEmpty(), String.join("\n", w.grantViolations()));
    assertEquals(0, w.rejected(Status.REJECTED_NO_CREDIT),
        "clients within their grant, while the server shrinks their windows, are never refused "
            + "for credit: " + w.fingerprint() + "\n" + String.join("\n", w.serverViolations()));
    assertTrue(w.serverViolations().isEmpty(), String.join("\n", w.serverViolations()));
  }

  @Test
  void serverRefusesAFloodBeyondTheGrant() {
    assumeTrue(scheme(SLO_NANOS, RTT_NANOS).issuesCredits(), "scheme issues no credits");
    ContractWorld w = world(0);
    w.flood(1, 500);
    w.runFor(RTT_NANOS); // the flood has arrived all at once; nothing of it is answered yet
    // Every arrival was admitted while the session had less than its window in the server and
    // refused once it had all of it (serverViolations says where not): exactly the window.
    assertTrue(w.serverViolations().isEmpty(), String.join("\n", w.serverViolations()));
    assertTrue(w.inServer(1) >= 1 && w.inServer(1) <= w.grantedByServer(1),
        w.inServer(1) + " in the server with " + w.grantedByServer(1) + " granted");
    w.runFor(20 * MS);
    assertTrue(w.rejected(Status.REJECTED_NO_CREDIT) > 0,
        "a session that sends 500 requests on one credit must be refused: " + w.fingerprint());
    assertTrue(w.serverViolations().isEmpty(), String.join("\n", w.serverViolations()));
    w.gate().assertNoLeaks();
  }

  /**
   * A session that ignores its window (keeps 32 requests in flight, resends each refused one at
   * once, reports no demand) beside 49 honest ones at 1.5× capacity is served no more than the same
   * session behaving well with the same appetite (32 requests outstanding through its gate), and
   * the other sessions' goodput is within 5 % of the world where session 1 sends nothing. Prints
   * both runs of session 1 as the server's ledger saw them ({@link ContractWorld#accounting}).
   */
  @Test
  void aClientIgnoringItsWindowGetsNoMoreThanAnHonestShare() {
    assumeTrue(scheme(SLO_NANOS, RTT_NANOS).issuesCredits(), "scheme issues no credits");
    ContractWorld without = world(0);
    ContractWorld heavy = world(0);
    ContractWorld greedy = world(0);
    without.greedy(1, 0); // silent
    heavy.closedLoop(1, 32);
    greedy.greedy(1, 32);
    for (ContractWorld w : new ContractWorld[] {without, heavy, greedy}) {
      driveBesideSessionOne(w, 0);
    }
    String summary = "session 1 served " + greedy.servedTo(1) + " ignoring its window, "
        + heavy.servedTo(1) + " honouring it; the others' goodput " + greedy.goodExcept(1)
        + " beside the greedy one, " + heavy.goodExcept(1) + " beside the heavy honest one, "
        + without.goodExcept(1) + " alone";
    System.out.println(getClass().getName() + ": " + summary + "\n  ignoring its window: "
        + greedy.accounting(1) + "\n  honouring it: " + heavy.accounting(1));
    assertTrue(greedy.goodExcept(1) >= 0.95 * without.goodExcept(1), summary);
    greedy.gate().assertNoLeaks();
    assertTrue(greedy.servedTo(1) <= heavy.servedTo(1), summary);
  }

  /**
   * A client that floods the server with sessions (keeps 32 requests in flight, each registering a
   * session id never used before, and sends the next at once whenever one is answered) beside 49
   * honest sessions at 1.5× capacity is served no more than one honest session with the same
   * appetite, and from 20 ms on, the other sessions' goodput is within 5 % of the world where it
   * sends nothing. Breakwater's registering request carries its own credit (§3), so without a
   * bound on what new sessions may take, each invented id is a credit the server never gave. The
   * first 20 ms are left out of the goodput bar, not of the flood's count: a server cannot tell
   * the first requests of invented sessions from those of honest ones starting together on one
   * connection, so a bound admits one batch of them (BreakwaterServerGate, "Newcomers"), whose
   * disturbance in an 80 ms world stands for one per idle timeout (10 s) on a server.
   */
  @Test
  void aClientFloodingSessionsGetsNoMoreThanAnHonestShare() {
    assumeTrue(scheme(SLO_NANOS, RTT_NANOS).issuesCredits(), "scheme issues no credits");
    ContractWorld without = world(0);
    ContractWorld heavy = world(0);
    ContractWorld flood = world(0);
    without.greedy(1, 0); // silent
    heavy.closedLoop(1, 32);
    flood.floodSessions(1, 32);
    long withoutAtSettle = driveBesideSessionOne(without, 20 * MS);
    driveBesideSessionOne(heavy, 20 * MS);
    long floodAtSettle = driveBesideSessionOne(flood, 20 * MS);
    long goodWithout = without.goodExcept(1) - withoutAtSettle;
    long goodBesideFlood = flood.goodExcept(1) - floodAtSettle;
    String summary = "the flood of sessions served " + flood.servedTo(1) + ", one honest session "
        + "of the same appetite " + heavy.servedTo(1) + "; from 20 ms, the others' goodput "
        + goodBesideFlood + " beside the flood, " + goodWithout + " alone (from 0 ms: "
        + flood.goodExcept(1) + ", " + without.goodExcept(1) + ")";
    System.out.println(getClass().getName() + ": " + summary);
    assertTrue(goodBesideFlood >= 0.95 * goodWithout, summary);
    assertTrue(flood.servedTo(1) <= heavy.servedTo(1), summary);
    assertEquals(0, flood.unfinished(), "every request ends: " + flood.fingerprint());
    flood.gate().assertNoLeaks();
  }

  /**
   * The other 49 sessions' arrivals at 1.5× capacity for {@code settleNanos} and 60 ms more, then
   * session 1's client stops and the world drains for 20 ms. Returns the others' goodput at the
   * end of {@code settleNanos}.
   */
  private static long driveBesideSessionOne(ContractWorld w, long settleNanos) {
    w.setRate(1.5 * capacity() * (CLIENTS - 1) / CLIENTS);
    if (settleNanos > 0) {
      w.runFor(settleNanos);
    }
    long goodAtSettle = w.goodExcept(1);
    w.runFor(60 * MS);
    w.quiesce();
    w.setRate(0);
    w.runFor(20 * MS);
    return goodAtSettle;
  }

  @Test
  void recoversAfterALoadStep() {
    ContractWorld w = world(0);
    w.setRate(3 * capacity());
    w.runFor(100 * MS);
    w.setRate(0.5 * capacity());
    w.runFor(100 * MS); // settle
    long issued = w.issued();
    long served = w.served();
    long shed = w.rejectedTotal() + w.expired();
    w.runFor(50 * MS);
    long issuedAfter = w.issued() - issued;
    long servedAfter = w.served() - served;
    long shedAfter = w.rejectedTotal() + w.expired() - shed;
    assertTrue(issuedAfter > 1000, w.fingerprint());
    assertEquals(0, shedAfter, "at half capacity nothing should be shed once recovered: " + w.fingerprint());
    assertTrue(servedAfter >= 0.99 * issuedAfter,
        "served " + servedAfter + " of " + issuedAfter + " after the step: " + w.fingerprint());
  }

  @Test
  void sameResultsWithAClockAboutToWrap() {
    ContractWorld plain = world(0);
    ContractWorld wrapping = world(Long.MAX_VALUE - 25 * MS);
    for (ContractWorld w : new ContractWorld[] {plain, wrapping}) {
      w.setRate(2 * capacity());
      w.runFor(50 * MS);
      w.setRate(0);
      w.runFor(500 * MS);
    }
    assertEquals(plain.fingerprint(), wrapping.fingerprint());
    wrapping.gate().assertNoLeaks();
  }
}
