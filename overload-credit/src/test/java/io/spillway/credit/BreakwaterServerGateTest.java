package io.spillway.credit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.ControlChannel;
import io.spillway.api.Outcome;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerPermit;
import io.spillway.api.Status;
import io.spillway.api.testing.VirtualClock;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class BreakwaterServerGateTest {

  private static final long US = 1_000;
  private final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 50 * US);
  private long delayNanos;
  private final List<long[]> credits = new ArrayList<>();

  private BreakwaterServerGate gate(BreakwaterConfig config, int parallelism) {
    BreakwaterServerGate g = new BreakwaterServerGate(config, new ServerEnvironment(clock, clock,
        now -> delayNanos, (session, delta) -> credits.add(new long[] {session, delta}),
        OverloadMetrics.NONE, parallelism));
    g.start();
    return g;
  }

  private static BreakwaterConfig config() {
    return BreakwaterConfig.forSlo(200 * US, 10 * US); // d_t 80 µs, drop 160 µs, period 10 µs
  }

  private ServerPermit send(BreakwaterServerGate g, long session, int demand, boolean register) {
    return sendFrom(g, 0, session, demand, register);
  }

  /** As {@link #send}, from a connection the transport numbered {@code origin}. */
  private ServerPermit sendFrom(BreakwaterServerGate g, long origin, long session, int demand,
      boolean register) {
    return g.admit(new RequestMetadata().sessionId(session).demand(demand).origin(origin)
        .flags(register ? RequestMetadata.FLAG_REGISTER : 0), clock.read());
  }

  private static int complete(ServerPermit p, long now) {
    ResponseMetadata r = new ResponseMetadata();
    p.complete(p.isAdmitted() ? Outcome.SUCCESS : Outcome.DROPPED, now, r);
    return r.creditDelta();
  }

  @Test
  void defaultsAreThePapers() {
    BreakwaterConfig c = config();
    assertEquals(0.001, c.alpha());
    assertEquals(0.02, c.beta());
    assertEquals(80 * US, c.targetDelayNanos());
    assertEquals(160 * US, c.dropThresholdNanos());
    assertEquals(10 * US, c.controlPeriodNanos());
  }

  @Test
  void idleSessionsAreEvictedAndTheirCreditsReturnButLiveOnesStay() {
    // a 1 ms control period so that virtual seconds take thousands of ticks, not millions
    BreakwaterServerGate g = gate(config().toBuilder().controlPeriodNanos(1_000 * US).build(), 4);
    complete(send(g, 1, 2, true), clock.read());
    for (long forged = 100; forged < 200; forged++) { // ids made up, used once, never deregistered
      complete(send(g, forged, 0, true), clock.read());
    }
    ServerPermit inFlight = send(g, 7, 0, true); // a long request: its session must survive
    assertEquals(102, g.sessionCount());
    long second = 1_000_000 * US;
    for (int s = 0; s < 13; s++) { // session 1 stays active, once a second
      clock.advance(second);
      complete(send(g, 1, 2, false), clock.read());
    }
    assertEquals(2, g.sessionCount(), "the hundred idle sessions are gone, 1 and 7 stay");
    assertTrue(g.windowOf(1) > 0 && g.windowOf(7) >= 0 && g.windowOf(150) == -1);
    assertEquals(g.windowOf(1) + g.windowOf(7), g.issuedCredits(), "the evicted windows returned");
    complete(inFlight, clock.read());
    clock.advance(13 * second);
    assertEquals(0, g.sessionCount(), "once idle, the long request's session goes too");
    assertEquals(0, g.issuedCredits());
    // a session that comes back is registered again by its next request
    assertTrue(send(g, 1, 0, false).isAdmitted());
    assertEquals(1, g.sessionCount());
  }

  @Test
  void theFirstRequestRegistersWithItsOwnCredit() {
    BreakwaterServerGate g = gate(config(), 4);
    ServerPermit p = send(g, 7, 0, true);
    assertTrue(p.isAdmitted());
    assertEquals(1, g.sessionCount());
    assertEquals(1, g.windowOf(7));
    assertEquals(1, g.issuedCredits());
  }

  @Test
  void creditsArePiggybackedLazilyOnResponses() {
    BreakwaterServerGate g = gate(config(), 4);
    ServerPermit p = send(g, 1, 5, true);
    // pool 4 (parallelism), issued 1, one session: C_oc = 3, window ← min(0 + 5 + 3, 1 + 3) = 4
    assertEquals(3, complete(p, clock.read()));
    assertEquals(4, g.windowOf(1));
    assertEquals(4, g.issuedCredits());
    assertTrue(credits.isEmpty(), "nothing explicit while a response can carry credits");
  }

  @Test
  void thePoolGrowsBelowTargetAndShrinksAboveIt() {
    BreakwaterServerGate g = gate(config(), 4);
    send(g, 1, 0, true);
    clock.advance(100 * US); // 10 periods below target: +1 each (n_c = 1)
    assertEquals(14, g.poolSize());
    delayNanos = 160 * US;   // 100 % over: ×0.98 per period
    clock.advance(10 * US);
    assertEquals(13, g.poolSize()); // 14 × 0.98 = 13.72 → 13
    delayNanos = 10_000 * US;
    clock.advance(30 * US);
    assertEquals(4, g.poolSize()); // halves, floored at the parallelism
  }

  @Test
  void aqmDropsAtTheThresholdAndStillAnswersWithCredits() {
    BreakwaterServerGate g = gate(config(), 4);
    complete(send(g, 1, 0, true), clock.read());
    delayNanos = 160 * US - 1;
    ServerPermit kept = send(g, 1, 0, false);
    assertTrue(kept.isAdmitted());
    delayNanos = 160 * US;
    ServerPermit dropped = send(g, 1, 0, false);
    assertFalse(dropped.isAdmitted());
    assertEquals(Status.REJECTED_AQM, dropped.status());
    ResponseMetadata reject = new ResponseMetadata();
    dropped.complete(Outcome.DROPPED, clock.read(), reject);
    assertEquals(Status.REJECTED_AQM, reject.status());
    complete(kept, clock.read());
    assertEquals(g.windowOf(1), g.issuedCredits(), "C_issued is the sum of windows");
  }

  @Test
  void withoutAqmNothingIsDroppedForDelay() {
    BreakwaterServerGate g = gate(config().toBuilder().aqm(false).build(), 4);
    delayNanos = 10_000 * US;
    assertTrue(send(g, 1, 0, true).isAdmitted());
  }

  @Test
  void overTheTotalCreditsAreRevokedOneByOne() {
    BreakwaterServerGate g = gate(config(), 4);
    ServerPermit first = send(g, 1, 10, true);
    assertEquals(3, complete(first, clock.read())); // window 4 of a pool of 4
    List<ServerPermit> inFlight = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      inFlight.add(send(g, 1, 10, false));
    }
    delayNanos = 100_000 * US; // the pool halves to its floor of 4 and stays there
    clock.advance(10 * US);
    // A second session registers: C_issued = 5 > C_total = 4, so eq. 6 applies.
    ServerPermit other = send(g, 2, 0, true);
    assertEquals(5, g.issuedCredits());
    assertEquals(-1, complete(inFlight.get(0), clock.read()), "eq. 6: one credit back");
    assertEquals(3, g.windowOf(1));
    complete(other, clock.read());
    for (ServerPermit p : inFlight.subList(1, 4)) {
      complete(p, clock.read());
    }
    assertTrue(g.issuedCredits() <= g.poolSize() + 1);
  }

  @Test
  void drainedSessionsGetExplicitCreditsWhenThePoolHasRoom() {
    BreakwaterServerGate g = gate(config().toBuilder().demandSpeculation(false).build(), 4);
    // Demand synchronisation: a session with no demand is left with no window once answered.
    ServerPermit p = send(g, 1, 0, true);
    assertEquals(-1, complete(p, clock.read()));
    assertEquals(0, g.windowOf(1));
    clock.advance(10 * US);
    assertTrue(credits.isEmpty(), "no demand, no credit");
    // It reports demand: with nothing in flight, the server answers with an explicit credit.
    g.onDemand(1, 3, clock.read());
    assertEquals(1, credits.size());
    assertEquals(1, credits.get(0)[0]);
    assertEquals(3, credits.get(0)[1]);
  }

  @Test
  void everyCreditMessageCarriesTheWindowAfterItUnderARisingStamp() {
    BreakwaterServerGate g = gate(config(), 4);
    long last = 0;
    for (int i = 0; i < 5; i++) {
      ServerPermit p = send(g, 1, 8, i == 0);
      ResponseMetadata r = new ResponseMetadata();
      p.complete(Outcome.SUCCESS, clock.read(), r);
      assertEquals(g.windowOf(1), r.creditWindow());
      assertTrue(ResponseMetadata.isNewerCredit(r.creditSeq(), last), "stamp " + i);
      last = r.creditSeq();
    }
  }

  @Test
  void aDemandReportUnderSpeculationRestatesTheWindowAsItStands() {
    List<long[]> stamped = new ArrayList<>();
    ControlChannel control = new ControlChannel() {
      @Override
      public void sendCredit(long sessionId, int creditDelta) {
        throw new AssertionError("unstamped");
      }

      @Override
      public void sendCredit(long sessionId, int creditDelta, int window, long seq) {
        stamped.add(new long[] {sessionId, creditDelta, window, seq});
      }
    };
    BreakwaterServerGate g = new BreakwaterServerGate(config(), new ServerEnvironment(clock, clock,
        now -> delayNanos, control, OverloadMetrics.NONE, 4));
    ResponseMetadata r = new ResponseMetadata();
    send(g, 1, 8, true).complete(Outcome.SUCCESS, clock.read(), r);
    ServerPermit inFlight = send(g, 1, 8, false);
    g.onDemand(1, 8, clock.read());
    assertTrue(stamped.isEmpty(), "a request in flight: its answer will carry the window");
    inFlight.complete(Outcome.SUCCESS, clock.read(), r);
    int window = g.windowOf(1);
    g.onDemand(1, 0, clock.read());
    assertEquals(1, stamped.size());
    assertArrayEquals(new long[] {1, 0, window, stamped.get(0)[3]}, stamped.get(0));
    assertTrue(ResponseMetadata.isNewerCredit(stamped.get(0)[3], r.creditSeq()));
    assertEquals(window, g.windowOf(1), "the report changes nothing under speculation");
  }

  @Test
  void aDemandForASessionNeverRegisteredGrantsNothing() {
    BreakwaterServerGate g = gate(config().toBuilder().demandSpeculation(false).build(), 4);
    for (long id = 1; id <= 100; id++) {
      g.onDemand(id, 8, clock.read()); // demand reports for ids no request has registered
    }
    clock.advance(10 * US);
    assertEquals(0, g.sessionCount());
    assertEquals(0, g.issuedCredits());
    assertEquals(-1, g.windowOf(1));
    assertTrue(credits.isEmpty(), "no credit for a session that never sent a request");
  }

  @Test
  void withSpeculationDrainedSessionsAreWokenByTheControlLoop() {
    BreakwaterServerGate g = gate(config().toBuilder().perSessionCap(1).build(), 2);
    // Two sessions hold the whole pool (2), so a third one drains to zero when answered.
    send(g, 1, 0, true);
    send(g, 2, 0, true);
    ServerPermit third = send(g, 3, 0, true);
    delayNanos = 100 * US; // above target: no growth, the pool stays at its floor of 2
    clock.advance(10 * US);
    assertEquals(-1, complete(third, clock.read()));
    assertEquals(0, g.windowOf(3));
    credits.clear();
    delayNanos = 0;
    g.deregister(1, clock.read()); // frees one credit
    clock.advance(10 * US);
    assertEquals(1, credits.size(), "the drained session gets one explicit credit");
    assertEquals(3, credits.get(0)[0]);
    assertEquals(1, g.windowOf(3));
  }

  @Test
  void deregistrationReturnsCreditsAndLaterCompletionsCarryNone() {
    BreakwaterServerGate g = gate(config(), 4);
    ServerPermit p = send(g, 1, 10, true);
    ServerPermit q = send(g, 1, 10, false);
    assertEquals(1, g.sessionCount());
    g.deregister(1, clock.read());
    assertEquals(0, g.sessionCount());
    assertEquals(0, g.issuedCredits());
    assertEquals(0, complete(p, clock.read()));
    assertEquals(0, complete(q, clock.read()));
    assertEquals(0, g.issuedCredits());
    g.deregister(1, clock.read()); // harmless twice
  }

  @Test
  void anEvictedSessionIsToldToKeepOnlyTheCreditItsNextRequestRegistersWith() {
    BreakwaterServerGate g = gate(config().toBuilder().controlPeriodNanos(1_000 * US).build(), 16);
    assertEquals(15, complete(send(g, 5, 30, true), clock.read()));
    assertEquals(16, g.windowOf(5));
    credits.clear();
    clock.advance(13 * 1_000_000 * US);
    assertEquals(-1, g.windowOf(5));
    assertEquals(1, credits.size());
    assertArrayEquals(new long[] {5, -15}, credits.get(0), "the client keeps one credit");
    // the client, holding one credit, comes back: its request registers it again
    ServerPermit back = send(g, 5, 0, false);
    assertTrue(back.isAdmitted());
    assertEquals(1, g.windowOf(5));
    complete(back, clock.read());
  }


  @Test
  void aSessionFromANamedOriginHoldsOneProvisionalCreditUntilItComesBack() {
    BreakwaterServerGate g = gate(config(), 4);
    ServerPermit first = sendFrom(g, 7, 1, 0, true);
    assertTrue(first.isAdmitted(), "registered on its own credit, as the paper does");
    assertEquals(0, g.issuedCredits(), "the credit is provisional: not in C_issued");
    assertEquals(0, complete(first, clock.read()), "on probation its answers change nothing");
    assertEquals(1, g.windowOf(1));
    ServerPermit back = sendFrom(g, 7, 1, 0, false);
    assertTrue(back.isAdmitted(), "it comes back on the credit it registered with");
    assertEquals(1, g.issuedCredits(), "its credit joins C_issued");
    // pool 4, issued 1, one session: C_oc = 3, window ← min(0 + 0 + 3, 1 + 3) = 3 (eq. 5)
    assertEquals(2, complete(back, clock.read()), "eq. 5 from its next answer");
    assertEquals(3, g.issuedCredits());
    ServerPermit plain = sendFrom(g, 0, 2, 0, true);
    assertTrue(plain.isAdmitted());
    assertEquals(4, g.issuedCredits(), "no origin named: registered into C_issued as the paper does");
  }

  @Test
  void anOriginHasAtMostItsLimitOfSessionsOnProbation() {
    BreakwaterServerGate g = gate(config(), 4);
    for (long id = 1; id <= BreakwaterServerGate.NEWCOMERS_PER_ORIGIN; id++) {
      assertTrue(sendFrom(g, 7, id, 0, true).isAdmitted(), "newcomer " + id);
    }
    ServerPermit over = sendFrom(g, 7, 100_000, 0, true);
    assertEquals(Status.REJECTED_NO_CREDIT, over.status());
    assertEquals(0, complete(over, clock.read()), "nothing registered: the client keeps its credit");
    assertEquals(-1, g.windowOf(100_000));
    assertEquals(0, g.issuedCredits(), "sessions that never come back take no credit");
    assertTrue(sendFrom(g, 8, 200_000, 0, true).isAdmitted(), "another origin has places of its own");
    assertEquals(Status.REJECTED_NO_CREDIT, sendFrom(g, 7, 100_000, 0, true).status());
    ServerPermit one = sendFrom(g, 7, 1, 0, false); // refused for credit: its request is still in
    assertEquals(Status.REJECTED_NO_CREDIT, one.status());
    complete(one, clock.read());
    g.deregister(1, clock.read()); // a session leaving frees its place
    assertTrue(sendFrom(g, 7, 100_000, 0, true).isAdmitted());
    assertEquals(0, g.issuedCredits());
  }

  /**
   * Under sustained overload no credit opens, so the drained queue is never polled; sessions that
   * drain, go idle and are evicted, round after round, must not leave their entries in it for
   * good: it stays within a bound however many sessions come and go.
   */
  @Test
  void sessionsThatComeAndGoUnderSustainedOverloadLeaveTheDrainedQueueBounded() {
    BreakwaterServerGate g = gate(config().toBuilder().perSessionCap(1)
        .controlPeriodNanos(1_000 * US).build(), 2);
    send(g, 1, 0, true); // sessions 1 and 2 hold the pool's two credits, in flight for good
    send(g, 2, 0, true);
    delayNanos = 100 * US; // above target: the pool stays at its floor of 2, no credit opens
    long id = 3;
    for (int round = 0; round < 10; round++) {
      for (int i = 0; i < 100; i++, id++) {
        assertEquals(-1, complete(send(g, id, 0, true), clock.read())); // drained at once
      }
      clock.advance(13 * 1_000_000 * US); // idle: evicted
    }
    assertEquals(2, g.sessionCount(), "every session that came and went was evicted");
    assertTrue(g.drainedQueueLength() <= 200,
        "drained entries left behind by 1,000 evicted sessions: " + g.drainedQueueLength());
  }

  @Test
  void aDrainedSessionEvictedIdleIsGivenTheCreditItsNextRequestRegistersWith() {
    BreakwaterServerGate g = gate(config().toBuilder().perSessionCap(1)
        .controlPeriodNanos(1_000 * US).build(), 2);
    send(g, 1, 0, true); // sessions 1 and 2 hold the pool's two credits, in flight for good
    send(g, 2, 0, true);
    ServerPermit third = send(g, 3, 0, true);
    delayNanos = 100 * US; // above target: the pool stays at its floor of 2, no credit opens
    assertEquals(-1, complete(third, clock.read()));
    assertEquals(0, g.windowOf(3)); // drained, waiting for an explicit credit that never comes
    credits.clear();
    clock.advance(13 * 1_000_000 * US);
    assertEquals(-1, g.windowOf(3), "evicted once idle");
    assertEquals(1, credits.size());
    assertArrayEquals(new long[] {3, 1}, credits.get(0),
        "given the one credit a registering request carries, or it would wait for ever");
  }

  /** Sends {@code count} requests of session 1 at once, completing the refused ones; the admitted. */
  private List<ServerPermit> flood(BreakwaterServerGate g, int count, boolean register) {
    List<ServerPermit> admitted = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      ServerPermit p = send(g, 1, 0, register && i == 0);
      if (p.isAdmitted()) {
        admitted.add(p);
      } else {
        assertEquals(Status.REJECTED_NO_CREDIT, p.status());
        assertEquals(admitted.size(), g.windowOf(1), "refused only with its whole window in flight");
        complete(p, clock.read());
      }
    }
    return admitted;
  }

  @Test
  void aFloodIsHeldToTheSessionsWindow() {
    BreakwaterServerGate g = gate(config(), 4); // C_total starts at 4, one session
    // the registering request says 10 are queued: its answer grants the whole pool (eq. 5)
    assertEquals(3, complete(send(g, 1, 10, true), clock.read()));
    List<ServerPermit> admitted = flood(g, 20, false);
    assertEquals(4, admitted.size());
    assertEquals(4, g.windowOf(1), "the refusals' answers grant nothing");
    assertEquals(4, g.issuedCredits());
  }

  @Test
  void aFloodOnOneCreditGetsOne() {
    BreakwaterServerGate g = gate(config(), 64); // a pool with room for 63 more
    List<ServerPermit> admitted = flood(g, 20, true);
    assertEquals(1, admitted.size());
    assertEquals(1, g.windowOf(1), "requests sent beyond the window earn no credit by their refusals");
  }

  @Test
  void aFloodPastTheSessionCapIsRefused() {
    BreakwaterServerGate g = gate(config().toBuilder().perSessionCap(8).build(), 64);
    complete(send(g, 1, 20, true), clock.read());
    List<ServerPermit> admitted = flood(g, 20, false);
    assertEquals(8, admitted.size(), "a pool of 64 for one session, a window capped at 8");
    assertEquals(8, g.windowOf(1));
  }

  /**
   * While credits are scarce (C_issued at C_total), a refusal for credit costs its session one
   * credit, once: the next answer to an admitted request takes one back (with the grace of any
   * revocation, so the client, which has not read it yet, is not refused again for it), and the
   * answer after that applies eq. 5 again.
   */
  @Test
  void aRefusalWhileCreditsAreScarceCostsOneCreditOnce() {
    // Demand synchronisation: no overcommit, so the window is pending + demand; a pool of 3
    BreakwaterServerGate g = gate(config().toBuilder().demandSpeculation(false).build(), 3);
    assertEquals(2, complete(send(g, 1, 3, true), clock.read()), "window 3: the whole pool");
    List<ServerPermit> inFlight = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      ServerPermit p = send(g, 1, 3, false);
      assertTrue(p.isAdmitted());
      inFlight.add(p);
    }
    ServerPermit raced = send(g, 1, 3, false); // one beyond: the client's credit was still counted
    assertEquals(Status.REJECTED_NO_CREDIT, raced.status());
    assertEquals(0, complete(raced, clock.read()));
    // with C_issued = C_total the window would stay at 3; it gives one back instead
    assertEquals(-1, complete(inFlight.remove(0), clock.read()));
    assertEquals(2, g.windowOf(1));
    // the client, which has not read that answer, still spends the window of 3 it knew
    ServerPermit sentBeforeReading = send(g, 1, 3, false);
    assertTrue(sentBeforeReading.isAdmitted(), "the cut keeps a revocation's grace");
    inFlight.add(sentBeforeReading);
    // paid: the next answer applies eq. 5 again, the credit that was given back is open
    assertEquals(1, complete(inFlight.remove(0), clock.read()));
    assertEquals(3, g.windowOf(1));
    inFlight.forEach(p -> complete(p, clock.read()));
    assertEquals(g.windowOf(1), g.issuedCredits());
  }

  /** With credits open, a refusal takes nothing from another session and costs nothing. */
  @Test
  void aRefusalWhileCreditsAreOpenCostsNothing() {
    BreakwaterServerGate g = gate(config().toBuilder().demandSpeculation(false).build(), 64);
    assertEquals(2, complete(send(g, 1, 3, true), clock.read()), "window 3: demand 3");
    List<ServerPermit> inFlight = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      inFlight.add(send(g, 1, 3, false));
    }
    ServerPermit beyond = send(g, 1, 3, false);
    assertEquals(Status.REJECTED_NO_CREDIT, beyond.status());
    complete(beyond, clock.read());
    assertEquals(2, complete(inFlight.remove(0), clock.read()), "eq. 5: pending 2 + demand 3");
    inFlight.forEach(p -> complete(p, clock.read()));
  }

  /**
   * A session that keeps sending beyond its window while credits are scarce owes at most the
   * per-session cap: its window is taken back one credit per answer until it has none, it then
   * gets an explicit credit like any drained session, and once it has paid (sending only on
   * credit), eq. 5 grows its window again.
   */
  @Test
  void aSessionThatKeepsSendingBeyondItsWindowDrainsAndRecoversOnceItBehaves() {
    BreakwaterServerGate g = gate(config().toBuilder().perSessionCap(8).build(), 8); // a pool of 8
    complete(send(g, 1, 20, true), clock.read());
    assertEquals(8, g.windowOf(1), "the whole pool, the per-session cap");
    List<ServerPermit> admitted = flood(g, 100, false); // 8 admitted, 92 refused
    assertEquals(8, admitted.size());
    credits.clear();
    for (int i = 0; i < 8; i++) {
      assertEquals(-1, complete(admitted.get(i), clock.read()), "answer " + i + " pays one credit");
    }
    assertEquals(0, g.windowOf(1), "92 refusals, a debt of at most 8: drained");
    // it behaves now: it sends only on credit, and the control loop has open credits
    clock.advance(10 * US);
    assertEquals(1, credits.size(), "one explicit credit to the drained session");
    ServerPermit p = send(g, 1, 20, false);
    assertTrue(p.isAdmitted());
    assertEquals(7, complete(p, clock.read()), "paid: eq. 5 grows the window again");
    assertEquals(8, g.windowOf(1));
  }

  /**
   * The race between a revocation and the client's next requests, in virtual time: a response
   * shrinks a window of 64 to 10 while the client, which has not read it yet, spends the rest of
   * its old window. Every one of those requests is admitted; one more is not; and once the client
   * has certainly read the revocation, the new window is the limit.
   */
  @Test
  void requestsSentBeforeARevocationArrivesAreAdmittedButNoMore() {
    BreakwaterServerGate g = gate(config(), 64); // C_total 64, one session
    // the registering request says 20 more are queued: its response grants the whole pool
    ServerPermit first = send(g, 1, 20, true);
    assertEquals(63, complete(first, clock.read()));
    assertEquals(64, g.windowOf(1));
    // the client, window 64, sends ten, then its queue is empty
    List<ServerPermit> inFlight = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      ServerPermit p = send(g, 1, 0, false);
      assertTrue(p.isAdmitted());
      inFlight.add(p);
    }
    clock.advance(US);
    // one is answered: with demand 0 the window falls to pending + C_oc = 9 + 1 (eq. 5)
    int delta = complete(inFlight.remove(0), clock.read());
    assertEquals(-54, delta);
    assertEquals(10, g.windowOf(1));
    // before that response reaches it, the client still holds 64 with 10 in flight: 54 more
    for (int i = 0; i < 54; i++) {
      ServerPermit p = send(g, 1, 0, false);
      assertTrue(p.isAdmitted(), "request " + i + " was sent within the window the client knew");
      inFlight.add(p);
    }
    // a client that kept going: one more is let through (the allowance for responses that reach
    // the connection out of order), the next is refused; never more than the old window
    ServerPermit slack = send(g, 1, 0, false);
    assertTrue(slack.isAdmitted());
    inFlight.add(slack);
    ServerPermit beyond = send(g, 1, 0, false);
    assertEquals(Status.REJECTED_NO_CREDIT, beyond.status());
    complete(beyond, clock.read());
    // the client reads the revocation: window 10, 64 in flight; it waits until fewer than 10 are
    while (inFlight.size() > 9) {
      complete(inFlight.remove(0), clock.read());
    }
    // each answer shrank the window toward pending + C_oc (eq. 5), whose fixed point with one
    // session is w = 9 + (64 − w): 36; the client never held more than its window at any time
    assertEquals(36, g.windowOf(1));
    inFlight.forEach(p -> complete(p, clock.read()));
    assertEquals(g.windowOf(1), g.issuedCredits());
  }
}
