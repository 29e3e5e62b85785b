package io.spillway.credit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.ClientEnvironment;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class BreakwaterClientGateTest {

  private static final long US = 1_000;
  private static final long T0 = Long.MAX_VALUE - 100 * US; // wraps during the test

  private static BreakwaterClientGate<String> client(boolean speculation) {
    BreakwaterConfig c = BreakwaterConfig.forSlo(200 * US, 10 * US).toBuilder()
        .demandSpeculation(speculation).build();
    return new BreakwaterClientGate<>(c, new ClientEnvironment(9, 200 * US, OverloadMetrics.NONE));
  }

  private static ResponseMetadata credit(int delta) {
    return new ResponseMetadata().creditDelta(delta);
  }

  @Test
  void theFirstRequestRegistersAndCarriesTheDemandBehindIt() {
    BreakwaterClientGate<String> g = client(true);
    g.offer("a", T0);
    g.offer("b", T0);
    g.offer("c", T0);
    RequestMetadata h = new RequestMetadata();
    assertEquals("a", g.poll(T0, h));
    assertTrue(h.isRegister());
    assertEquals(9, h.sessionId());
    assertEquals(2, h.demand());
    assertNull(g.poll(T0, new RequestMetadata()), "one credit, already spent");
  }

  @Test
  void creditsAreConsumedAsTheyArrive() {
    BreakwaterClientGate<String> g = client(true);
    for (String s : new String[] {"a", "b", "c", "d"}) {
      g.offer(s, T0);
    }
    g.poll(T0, new RequestMetadata());
    g.onResponse(credit(2), T0, T0 + 10 * US); // window 1 → 3, nothing in flight
    RequestMetadata h = new RequestMetadata();
    assertEquals("b", g.poll(T0, h));
    assertEquals(2, h.demand());
    assertEquals("c", g.poll(T0, h));
    assertEquals("d", g.poll(T0, h));
    assertNull(g.poll(T0, h));
    assertEquals(3, g.inFlight());
    g.onControl(credit(1), T0);
    assertEquals(4, g.window());
  }

  @Test
  void negativeCreditsRevokeUnusedOnes() {
    BreakwaterClientGate<String> g = client(true);
    g.offer("a", T0);
    g.poll(T0, new RequestMetadata());
    g.onResponse(credit(4), T0, T0);       // window 5, unused 5
    g.onControl(credit(-3), T0);           // window 2
    assertEquals(2, g.window());
    g.offer("b", T0);
    g.offer("c", T0);
    g.offer("d", T0);
    assertEquals("b", g.poll(T0, new RequestMetadata()));
    assertEquals("c", g.poll(T0, new RequestMetadata()));
    assertNull(g.poll(T0, new RequestMetadata()));
    g.onControl(credit(-5), T0);           // more than unused: a grant of 3 is still on its way
    assertEquals(-3, g.window(), "the window is the sum of the deltas, below zero until the grant");
    assertNull(g.poll(T0, new RequestMetadata()));
    g.onControl(credit(3), T0);            // the grant the server made before the revocation
    assertEquals(0, g.window());
    assertNull(g.poll(T0, new RequestMetadata()));
  }

  /**
   * The order the simulator found on ten cores (kv-var, Breakwater at 1×): the server granted two
   * credits on one response (window 1 → 3) and took them back on the next (3 → 1), and the two
   * responses, sent from different cores, arrived the other way round. Clamped at zero, the
   * revocation was lost in part and the client held 2 credits where the server granted 1, so its
   * second request in flight was refused for credit, again and again.
   */
  @Test
  void responsesThatArriveOutOfOrderLeaveTheServersWindow() {
    BreakwaterClientGate<String> g = client(true);
    for (String s : new String[] {"a", "b", "c", "d"}) {
      g.offer(s, T0);
    }
    g.poll(T0, new RequestMetadata());             // window 1: "a" in flight
    g.onResponse(credit(2), T0, T0 + 10 * US);     // window 3
    g.poll(T0, new RequestMetadata());
    g.poll(T0, new RequestMetadata());
    g.poll(T0, new RequestMetadata());             // "b", "c", "d" in flight
    // The server answers "b" with -2 (3 -> 1), then "c" with +2 (1 -> 3) and "d" with -2 (3 -> 1);
    // "d"'s answer, sent from another core, arrives before "c"'s:
    g.onResponse(credit(-2), T0, T0 + 20 * US);
    assertEquals(1, g.window());
    g.onResponse(credit(-2), T0, T0 + 21 * US);
    assertEquals(-1, g.window(), "not clamped: the grant below is on its way");
    g.onResponse(credit(2), T0, T0 + 22 * US);
    assertEquals(1, g.window(), "the server's window: 3 - 2 - 2 + 2");
    assertEquals(0, g.inFlight());
    g.offer("e", T0);
    g.offer("f", T0);
    assertEquals("e", g.poll(T0, new RequestMetadata()));
    assertNull(g.poll(T0, new RequestMetadata()), "one credit, as the server granted");
  }

  private static ResponseMetadata stamped(int delta, int window, long seq) {
    return new ResponseMetadata().credit(delta, window, seq);
  }

  /** As above, with stamped windows: the newest stamp's window holds, an older one changes nothing. */
  @Test
  void aStampedWindowReplacesTheCountAndAnOlderStampChangesNothing() {
    BreakwaterClientGate<String> g = client(true);
    for (String s : new String[] {"a", "b", "c", "d"}) {
      g.offer(s, T0);
    }
    long record = 7L << 32;
    g.poll(T0, new RequestMetadata());
    g.onResponse(stamped(2, 3, record | 1), T0, T0 + 10 * US);
    g.poll(T0, new RequestMetadata());
    g.poll(T0, new RequestMetadata());
    g.poll(T0, new RequestMetadata());
    g.onResponse(stamped(-2, 1, record | 4), T0, T0 + 20 * US); // "d"'s answer first
    assertEquals(1, g.window());
    g.onResponse(stamped(-2, 1, record | 2), T0, T0 + 21 * US);
    assertEquals(1, g.window(), "older than the window held: its change is already in it");
    g.onResponse(stamped(2, 3, record | 3), T0, T0 + 22 * US);
    assertEquals(1, g.window(), "never below the server's window, as the deltas went for a moment");
    g.onControl(stamped(1, 2, (8L << 32) | 1), T0);
    assertEquals(2, g.window(), "a new record of the session counts as newer");
    g.onControl(credit(1), T0);
    assertEquals(3, g.window(), "an unstamped message is a delta");
  }

  /**
   * A caller gave up on a request after it was sent, and the answer, which carried the grant the
   * server made, is lost: the client counts no credit where the server holds one open for it, and
   * no request in flight can bring the window back. It asks once, as a demand report, and the
   * server's restatement lets its requests go.
   */
  @Test
  void aWindowInDoubtWithNothingInFlightIsAskedForOnceAndItsRestatementReleasesRequests() {
    BreakwaterClientGate<String> g = client(true);
    g.offer("a", T0);
    g.offer("b", T0);
    g.poll(T0, new RequestMetadata());
    g.onResponse(stamped(0, 1, 1), T0, T0 + 10 * US);
    assertEquals("b", g.poll(T0, new RequestMetadata()));
    // The server revoked one credit on an earlier answer, read, and granted it back on "b"'s, lost:
    g.onControl(stamped(-1, 0, 2), T0 + 11 * US);
    assertEquals(-1, g.takeDemandReport(), "in flight, its answer will carry the window");
    g.onUnanswered(new ResponseMetadata().status(io.spillway.api.Status.FAILED), T0, T0 + 12 * US);
    g.offer("c", T0 + 12 * US);
    assertNull(g.poll(T0 + 12 * US, new RequestMetadata()));
    assertEquals(1, g.takeDemandReport(), "asks the server to restate the window");
    g.offer("d", T0 + 13 * US);
    assertEquals(-1, g.takeDemandReport(), "once, until a message comes");
    g.onControl(stamped(0, 1, 3), T0 + 20 * US); // the window the server held all along
    assertEquals("c", g.poll(T0 + 20 * US, new RequestMetadata()));
    assertEquals(-1, g.takeDemandReport());
  }

  /**
   * An answer stamped before the lost one, arriving after the loss (answers on different server
   * threads arrive out of order), leaves the window as wrong as before: the doubt stays, and the
   * session asks once it is left with nothing to send.
   */
  @Test
  void anAnswerStampedBeforeTheLostOneLeavesTheWindowInDoubt() {
    BreakwaterClientGate<String> g = client(true);
    g.offer("a", T0);
    g.poll(T0, new RequestMetadata());
    g.onResponse(stamped(1, 2, 1), T0, T0 + 10 * US); // window 2
    g.offer("b", T0);
    g.offer("c", T0);
    g.poll(T0, new RequestMetadata());
    g.poll(T0, new RequestMetadata());                 // "b" and "c" in flight
    // The server answers "b" revoking one (stamp 2, window 1), then "c" granting it back (stamp
    // 3, window 2); "c"'s answer is lost to its caller and read as such first:
    g.onUnanswered(new ResponseMetadata().status(io.spillway.api.Status.FAILED), T0, T0 + 11 * US);
    g.onResponse(stamped(-1, 1, 2), T0, T0 + 12 * US);
    assertEquals(1, g.window(), "stamp 2's window: stamp 3's grant is lost");
    g.onControl(stamped(-1, 0, 4), T0 + 13 * US);      // a revocation: the client now sends nothing
    g.offer("d", T0 + 14 * US);
    assertNull(g.poll(T0 + 14 * US, new RequestMetadata()));
    assertEquals(1, g.takeDemandReport(), "still in doubt: asks");
    g.onControl(stamped(0, 1, 5), T0 + 20 * US);      // the server's window, stamp 3's grant in it
    assertEquals("d", g.poll(T0 + 20 * US, new RequestMetadata()));
  }

  /** An ask that brings nothing (it, or its answer, was lost) is made again once a request expires. */
  @Test
  void anAskThatBringsNothingIsMadeAgainWhenARequestExpires() {
    BreakwaterClientGate<String> g = client(true);
    g.offer("a", T0);
    g.poll(T0, new RequestMetadata());
    g.onControl(stamped(-1, 0, 1), T0 + 5 * US);
    g.onUnanswered(new ResponseMetadata().status(io.spillway.api.Status.FAILED), T0, T0 + 10 * US);
    g.offer("b", T0 + 10 * US);
    assertEquals(1, g.takeDemandReport());
    g.offer("c", T0 + 20 * US);
    assertEquals(-1, g.takeDemandReport(), "asked already");
    List<String> expired = new ArrayList<>();
    g.expire(T0 + 10 * US + g.queueTimeoutNanos(), expired::add);
    assertEquals(List.of("b"), expired);
    assertEquals(1, g.takeDemandReport(), "asks again for what is still queued");
    g.expire(T0 + 11 * US + g.queueTimeoutNanos(), expired::add);
    assertEquals(-1, g.takeDemandReport(), "no expiry since: no new ask");
  }

  @Test
  void aWindowInDoubtThatStillLetsRequestsGoAsksForNothing() {
    BreakwaterClientGate<String> g = client(true);
    g.offer("a", T0);
    g.poll(T0, new RequestMetadata());
    g.onResponse(stamped(2, 3, 1), T0, T0 + 10 * US);
    g.offer("b", T0);
    g.poll(T0, new RequestMetadata());
    g.onUnanswered(new ResponseMetadata().status(io.spillway.api.Status.FAILED), T0, T0 + 12 * US);
    g.offer("c", T0 + 12 * US);
    assertEquals(-1, g.takeDemandReport());
    assertEquals("c", g.poll(T0 + 12 * US, new RequestMetadata()));
  }

  @Test
  void stampsCompareAcrossTheirCountsWrapping() {
    long record = 3L << 32;
    assertTrue(ResponseMetadata.isNewerCredit(record | 1, record | 0xFFFF_FFFFL));
    assertTrue(!ResponseMetadata.isNewerCredit(record | 0xFFFF_FFFFL, record | 1));
    assertTrue(!ResponseMetadata.isNewerCredit(0, record | 1), "0 is no stamp");
    assertTrue(ResponseMetadata.isNewerCredit(record | 1, 0));
  }

  @Test
  void requestsExpireAfterTheQueueTimeout() {
    BreakwaterClientGate<String> g = client(true);
    g.offer("a", T0);
    g.poll(T0, new RequestMetadata()); // in flight on the registration credit
    g.offer("b", T0 + 10 * US);
    g.offer("c", T0 + 60 * US);
    assertEquals(T0 + 110 * US, g.nextWakeupNanos()); // timeout = SLO/2 = 100 µs
    List<String> expired = new ArrayList<>();
    assertEquals(0, g.expire(T0 + 109 * US, expired::add));
    assertEquals(1, g.expire(T0 + 110 * US, expired::add)); // past Long.MAX_VALUE by now
    assertEquals(List.of("b"), expired);
    assertEquals(1, g.queued());
  }

  /** Expiry counts from the arrival: a request that reaches the gate late has already waited. */
  @Test
  void aRequestThatArrivedEarlierExpiresByItsArrival() {
    BreakwaterClientGate<String> g = client(true);
    g.offer("a", T0);
    g.poll(T0, new RequestMetadata()); // in flight on the registration credit
    g.offer("late", T0 + 10 * US, T0 + 130 * US); // arrived 120 µs ago: past the 100 µs timeout
    g.offer("fresh", T0 + 140 * US, T0 + 130 * US); // an arrival after now counts as now
    assertEquals(T0 + 110 * US, g.nextWakeupNanos());
    List<String> expired = new ArrayList<>();
    assertEquals(1, g.expire(T0 + 130 * US, expired::add));
    assertEquals(List.of("late"), expired);
    assertEquals(T0 + 230 * US, g.nextWakeupNanos());
    assertEquals(0, g.expire(T0 + 229 * US, expired::add));
    assertEquals(1, g.expire(T0 + 230 * US, expired::add));
  }

  @Test
  void demandSynchronisationReportsOnceWhenBlocked() {
    BreakwaterClientGate<String> g = client(false);
    g.offer("a", T0);
    g.poll(T0, new RequestMetadata());
    assertEquals(-1, g.takeDemandReport(), "nothing blocked yet");
    g.offer("b", T0);
    assertEquals(1, g.takeDemandReport());
    g.offer("c", T0);
    assertEquals(-1, g.takeDemandReport(), "already waiting for the server's answer");
    g.onResponse(credit(-1), T0, T0); // answered with no credit: still blocked, report again
    assertEquals(2, g.takeDemandReport());
  }

  @Test
  void withoutARequestBudgetNoneIsSent() {
    BreakwaterClientGate<String> g = client(true);
    g.offer("a", T0);
    RequestMetadata h = new RequestMetadata();
    g.poll(T0 + 30 * US, h);
    assertEquals(Long.MAX_VALUE, h.budgetNanos());
  }

  @Test
  void aRequestCarriesItsBudgetLessItsWaitInTheQueue() {
    BreakwaterClientGate<String> g = budgeted(80 * US);
    g.offer("a", T0);
    g.offer("b", T0 + 10 * US);
    RequestMetadata h = new RequestMetadata();
    assertEquals("a", g.poll(T0 + 30 * US, h));
    assertEquals(50 * US, h.budgetNanos()); // 80 − 30 waited
    g.onResponse(credit(1), T0 + 30 * US, T0 + 70 * US);
    assertEquals("b", g.poll(T0 + 70 * US, h.reset()));
    assertEquals(20 * US, h.budgetNanos()); // 80 − 60 waited, across the clock's wrap-around
  }

  @Test
  void theQueueTimeoutIsAtMostTheBudgetSoNoRequestLeavesWithNoneLeft() {
    BreakwaterClientGate<String> g = budgeted(40 * US); // below the 100 µs timeout (SLO / 2)
    g.offer("a", T0);
    g.offer("b", T0);
    g.poll(T0, new RequestMetadata()); // "a" takes the only credit
    assertEquals(T0 + 40 * US, g.nextWakeupNanos());
    List<String> expired = new ArrayList<>();
    assertEquals(0, g.expire(T0 + 39 * US, expired::add));
    assertEquals(1, g.expire(T0 + 40 * US, expired::add));
    assertEquals(List.of("b"), expired);
  }

  @Test
  void aBudgetMustBePositive() {
    BreakwaterConfig.Builder b = BreakwaterConfig.forSlo(200 * US, 10 * US).toBuilder();
    org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
        () -> b.requestBudgetNanos(0).build());
    assertTrue(b.requestBudgetNanos(1).build().hasRequestBudget());
    assertTrue(!BreakwaterConfig.forSlo(200 * US, 10 * US).hasRequestBudget());
  }

  private static BreakwaterClientGate<String> budgeted(long budgetNanos) {
    BreakwaterConfig c = BreakwaterConfig.forSlo(200 * US, 10 * US).toBuilder()
        .requestBudgetNanos(budgetNanos).build();
    return new BreakwaterClientGate<>(c, new ClientEnvironment(9, 200 * US, OverloadMetrics.NONE));
  }

  @Test
  void anAdaptiveTimeoutIsTheSloLessTheP99AfterSendingAndItsStepWithinItsBounds() {
    BreakwaterConfig fixed = BreakwaterConfig.forSlo(200 * US, 10 * US);
    assertEquals(false, fixed.adaptiveClientTimeout(), "the paper's fixed timeout by default");
    BreakwaterConfig adaptive = fixed.toBuilder().adaptiveClientTimeout(true).build();
    BreakwaterClientGate<String> g = new BreakwaterClientGate<>(adaptive,
        new ClientEnvironment(9, 200 * US, OverloadMetrics.NONE));
    assertEquals(100 * US, g.queueTimeoutNanos(), "no response yet: the configured timeout, SLO/2");
    g.offer("a", T0);
    g.poll(T0, new RequestMetadata());
    g.onResponse(credit(0), T0, T0 + 150 * US); // 150 us from send to response
    // SLO − p99 − the estimate's step (a sixteenth of it): 200 − 150 − 9.375 µs
    assertEquals(40_625, g.queueTimeoutNanos(), "200 - 150 - 150/16");
    assertEquals(T0 + 40_625 + 20 * US, withQueued(g, T0 + 20 * US).nextWakeupNanos());
    g.onResponse(credit(0), T0, T0 + 400 * US);
    assertTrue(g.queueTimeoutNanos() >= 20 * US, "never below a tenth of the SLO");
    g.onResponse(new ResponseMetadata().status(io.spillway.api.Status.REJECTED_AQM), T0, T0 + 5 * US);
    long before = g.queueTimeoutNanos();
    g.onResponse(new ResponseMetadata().status(io.spillway.api.Status.REJECTED_AQM), T0, T0 + 5 * US);
    assertEquals(before, g.queueTimeoutNanos(), "rejects are not the path a served request takes");
    BreakwaterConfig set = adaptive.toBuilder().clientQueueTimeoutNanos(70 * US).build();
    assertEquals(false, set.adaptiveClientTimeout(), "a timeout given is fixed, as the paper's");
  }

  @Test
  void anAdaptiveBudgetIsTheSloLessTheP99BeyondTheServersTargetQueueAndItsStep() {
    // SLO 200 µs: d_t = 80 µs (40 %), the adaptive timeout's ceiling SLO/2 = 100 µs
    BreakwaterConfig c = BreakwaterConfig.forSlo(200 * US, 10 * US).toBuilder()
        .adaptiveClientTimeout(true).adaptiveRequestBudget(true).build();
    BreakwaterClientGate<String> g = new BreakwaterClientGate<>(c,
        new ClientEnvironment(9, 200 * US, OverloadMetrics.NONE));
    RequestMetadata first = new RequestMetadata();
    g.offer("a", T0);
    g.poll(T0, first);
    assertEquals(Long.MAX_VALUE, first.budgetNanos(), "no response seen yet: no estimate, no budget");
    g.onResponse(credit(1), T0, T0 + 150 * US); // 150 µs from send to response
    // 200 − (150 − 80) − 150/16 = 120.625 µs, less the 30 µs the next request queued here
    assertEquals(120_625, g.adaptiveBudgetNanos());
    g.offer("b", T0 + 200 * US);
    RequestMetadata second = new RequestMetadata();
    assertEquals("b", g.poll(T0 + 230 * US, second));
    assertEquals(90_625, second.budgetNanos());
    BreakwaterClientGate<String> light = new BreakwaterClientGate<>(c,
        new ClientEnvironment(10, 200 * US, OverloadMetrics.NONE));
    light.onResponse(credit(0), T0, T0 + 60 * US); // below d_t: nothing beyond the queues counted
    assertEquals(196_250, light.adaptiveBudgetNanos(), "200 - 0 - 60/16");
    for (int i = 0; i < 200; i++) {
      g.onResponse(credit(0), T0, T0 + 900 * US); // far past the SLO
    }
    assertEquals(20 * US, g.adaptiveBudgetNanos(), "never below a tenth of the SLO");
    BreakwaterClientGate<String> fixed = new BreakwaterClientGate<>(
        c.toBuilder().requestBudgetNanos(50 * US).build(),
        new ClientEnvironment(9, 200 * US, OverloadMetrics.NONE));
    fixed.onResponse(credit(1), T0, T0 + 150 * US);
    fixed.offer("c", T0);
    RequestMetadata third = new RequestMetadata();
    fixed.poll(T0, third);
    assertEquals(50 * US, third.budgetNanos(), "a fixed budget given takes precedence");
    assertThrows(IllegalArgumentException.class,
        () -> c.toBuilder().adaptiveClientTimeout(false).build(), "the budget needs the timeout's estimate");
    assertEquals(false, BreakwaterConfig.forSlo(200 * US, 10 * US).adaptiveRequestBudget(),
        "the paper's Breakwater carries no budget");
  }

  @Test
  void anAdaptiveTimeoutNeverOutlastsAFixedBudgetBelowItsFloor() {
    // SLO 200 µs: the adaptive timeout's floor is a tenth, 20 µs; every request carries 10 µs
    BreakwaterConfig c = BreakwaterConfig.forSlo(200 * US, 10 * US).toBuilder()
        .adaptiveClientTimeout(true).requestBudgetNanos(10 * US).build();
    BreakwaterClientGate<String> g = new BreakwaterClientGate<>(c,
        new ClientEnvironment(9, 200 * US, OverloadMetrics.NONE));
    g.offer("a", T0);
    g.poll(T0, new RequestMetadata());
    g.onResponse(credit(1), T0, T0 + 50 * US); // a p99 to adapt to: 200 − 50 − 50/16 µs
    assertEquals(10 * US, g.queueTimeoutNanos(), "the budget caps the timeout, floor or not");
    g.offer("b", T0 + 100 * US);
    List<String> expired = new ArrayList<>();
    g.expire(T0 + 115 * US, expired::add);
    assertEquals(List.of("b"), expired, "queued 15 µs: its 10 µs budget is spent, not sent");
  }

  private static BreakwaterClientGate<String> withQueued(BreakwaterClientGate<String> g, long at) {
    g.offer("q", at);
    return g;
  }
}
