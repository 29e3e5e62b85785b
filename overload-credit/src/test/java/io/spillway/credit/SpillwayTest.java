package io.spillway.credit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.ClientEnvironment;
import io.spillway.api.ControlChannel;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.OverloadScheme;
import io.spillway.api.Outcome;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.Scheduler;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerPermit;
import io.spillway.api.Status;
import io.spillway.api.testing.AdmissionContract;
import io.spillway.api.testing.VirtualClock;
import java.time.Duration;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/** The default scheme: routing by session, values from the SLO, and the admission contract. */
class SpillwayTest {

  @Test
  void derivesEverythingFromTheSlo() {
    BreakwaterConfig c = Spillway.forSlo(Duration.ofMillis(5)).config();
    assertEquals(2_000_000, c.targetDelayNanos());
    assertEquals(4_000_000, c.dropThresholdNanos());
    assertEquals(1_000_000, c.controlPeriodNanos(), "a 20th of the SLO, but not below 1 ms");
    assertEquals(2_000_000, Spillway.defaultPeriodNanos(40_000_000));
    assertEquals(2_500_000, c.clientQueueTimeoutNanos());
    assertEquals(1_000_000, Spillway.defaultPeriodNanos(200_000), "never below 1 ms");
    assertEquals(10_000_000, Spillway.defaultPeriodNanos(10_000_000_000L), "never above 10 ms");
    assertThrows(IllegalArgumentException.class, () -> Spillway.forSloNanos(0));
  }

  @Test
  void requestsWithoutASessionGoToTheServerOnlyLimitAndOthersToCredits() {
    VirtualClock clock = new VirtualClock();
    Spillway.MixedGate gate = (Spillway.MixedGate) Spillway.forSlo(Duration.ofMillis(5))
        .newServerGate(new ServerEnvironment(clock, clock, now -> 0, ControlChannel.DISCARD,
            OverloadMetrics.NONE, 1));
    ServerPermit plain = gate.admit(new RequestMetadata(), clock.read());
    assertTrue(plain.isAdmitted());
    assertEquals(1, gate.plain().waiting());
    assertEquals(Status.REJECTED_LIMIT, gate.admit(new RequestMetadata(), clock.read()).status());
    ServerPermit aware = gate.admit(new RequestMetadata().sessionId(7)
        .flags(RequestMetadata.FLAG_REGISTER), clock.read());
    assertTrue(aware.isAdmitted(), "a session keeps its own credit while plain clients are limited");
    assertEquals(1, gate.credits().sessionCount());
    ResponseMetadata response = new ResponseMetadata();
    aware.complete(Outcome.SUCCESS, clock.read(), response);
    assertEquals(7, response.sessionId());
    plain.complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata());
    assertEquals(0, gate.plain().waiting());
    gate.deregister(7, clock.read());
    assertEquals(0, gate.credits().sessionCount());
  }

  @Test
  void bothHalvesLeaveTheQueueWhatTheHandlersLeaveOfTheSlo() {
    VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 100_000_000L);
    long[] delay = {0};
    Spillway.MixedGate gate = (Spillway.MixedGate) Spillway.forSlo(Duration.ofMillis(5))
        .newServerGate(new ServerEnvironment(clock, clock, now -> delay[0], ControlChannel.DISCARD,
            OverloadMetrics.NONE, 4));
    gate.start();
    // An aware call whose handler holds it 3 ms of the 5 ms SLO, reported by the host
    ServerPermit aware = gate.admit(new RequestMetadata().sessionId(7)
        .flags(RequestMetadata.FLAG_REGISTER), clock.read());
    aware.started(clock.read());
    clock.advance(3_000_000);
    aware.complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata());
    // The timer runs: the plain half's AQM threshold is 5 − 3 = 2 ms, not 4; the credit half's
    // also leaves its clients' queues a tenth of the SLO, 1.5 ms.
    clock.advance(1_000_000);
    delay[0] = 2_000_000;
    ServerPermit plain = gate.admit(new RequestMetadata(), clock.read());
    assertEquals(Status.REJECTED_AQM, plain.status(), "the plain half, fed by the aware call");
    plain.complete(Outcome.DROPPED, clock.read(), new ResponseMetadata());
    delay[0] = 1_999_999;
    ServerPermit plainUnder = gate.admit(new RequestMetadata(), clock.read());
    assertTrue(plainUnder.isAdmitted(), "under the plain half's 2 ms");
    plainUnder.complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata());
    delay[0] = 1_500_000;
    ServerPermit again = gate.admit(new RequestMetadata().sessionId(7), clock.read());
    assertEquals(Status.REJECTED_AQM, again.status(), "the credit half");
    again.complete(Outcome.DROPPED, clock.read(), new ResponseMetadata());
    delay[0] = 1_499_999;
    ServerPermit under = gate.admit(new RequestMetadata().sessionId(7), clock.read());
    assertTrue(under.isAdmitted());
    under.complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata());
    gate.close();

    // The paper's values (Spillway.of) keep the configured threshold
    Spillway.MixedGate paper = (Spillway.MixedGate) Spillway.of(BreakwaterConfig.forSlo(5_000_000,
        1_000_000)).newServerGate(new ServerEnvironment(clock, clock, now -> delay[0],
            ControlChannel.DISCARD, OverloadMetrics.NONE, 4));
    ServerPermit p = paper.admit(new RequestMetadata().sessionId(7).flags(RequestMetadata.FLAG_REGISTER),
        clock.read());
    p.started(clock.read());
    clock.advance(3_000_000);
    p.complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata());
    clock.advance(1_000_000);
    delay[0] = 2_000_000;
    assertTrue(paper.admit(new RequestMetadata().sessionId(7), clock.read()).isAdmitted());
  }

  @Test
  void aSessionHoldsCreditsForTheCallsItStartsWhileHandlersHoldCallsLongerThanTheQueueMay() {
    // Calls 30 ms apart, each held 30 ms by its handler, under a 50 ms SLO (d_t 20 ms): one call
    // a residence, so CreditPolicy.windowForResidence asks for ⌈1 + 2⌉ + 1 = 4 credits
    assertEquals(4, windowAfterTwoCalls(Spillway.forSlo(Duration.ofMillis(50)), 30_000_000));
    // Held 1 ms, well within d_t: eq. 4's one credit beyond the calls in flight (none)
    assertEquals(1, windowAfterTwoCalls(Spillway.forSlo(Duration.ofMillis(50)), 1_000_000));
    // The paper's values (Spillway.of) measure no residence, so they keep eq. 4 too
    assertEquals(1, windowAfterTwoCalls(Spillway.of(BreakwaterConfig.forSlo(50_000_000,
        2_500_000)), 30_000_000));
  }

  /**
   * Session 1's window after two calls 30 ms apart, each held {@code residenceNanos} by its
   * handler, beside 63 sessions holding one call each (every credit of the starting pool out, so
   * eq. 4 overcommits one credit a session).
   */
  private static int windowAfterTwoCalls(Spillway scheme, long residenceNanos) {
    VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 1_000_000_000L);
    Spillway.MixedGate gate = (Spillway.MixedGate) scheme.newServerGate(new ServerEnvironment(
        clock, clock, now -> 0, ControlChannel.DISCARD, OverloadMetrics.NONE, 64));
    gate.start();
    for (long id = 2; id <= 64; id++) {
      gate.admit(new RequestMetadata().sessionId(id).flags(RequestMetadata.FLAG_REGISTER),
          clock.read()).started(clock.read());
    }
    for (int call = 0; call < 2; call++) {
      RequestMetadata request = new RequestMetadata().sessionId(1);
      ServerPermit permit = gate.admit(call == 0 ? request.flags(RequestMetadata.FLAG_REGISTER)
          : request, clock.read());
      assertTrue(permit.isAdmitted());
      permit.started(clock.read());
      clock.advance(residenceNanos);
      permit.complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata());
      clock.advance(30_000_000 - residenceNanos);
    }
    int window = gate.credits().windowOf(1);
    gate.close();
    return window;
  }

  @Test
  void theDefaultsDeriveARequestBudgetAndAFixedOneReplacesIt() {
    Spillway scheme = Spillway.forSlo(Duration.ofMillis(1));
    assertTrue(scheme.config().adaptiveRequestBudget(), "the default derives its budget");
    assertEquals(false, scheme.config().hasRequestBudget());
    Spillway fixed = scheme.withRequestBudgetNanos(400_000);
    assertEquals(400_000, fixed.config().requestBudgetNanos());
    assertEquals(scheme.admissionUpdateNanos(), fixed.admissionUpdateNanos(), "the other defaults kept");
    assertTrue(fixed.followsCreditsOut());
    var client = fixed.<String>newClientGate(new ClientEnvironment(3, 1_000_000,
        OverloadMetrics.NONE));
    client.offer("a", 0, 0);
    RequestMetadata header = new RequestMetadata();
    client.poll(50_000, header);
    assertEquals(350_000, header.budgetNanos(), "the fixed budget less 50 µs in the client queue");
    assertThrows(IllegalArgumentException.class, () -> scheme.withRequestBudgetNanos(0));
  }

  @Test
  void admissionsUpdateThePoolBetweenTheTimersRuns() {
    VirtualClock clock = new VirtualClock();
    Spillway scheme = Spillway.forSlo(Duration.ofMillis(5));
    assertEquals(250_000, scheme.admissionUpdateNanos(), "a twentieth of the SLO");
    assertTrue(scheme.config().adaptiveClientTimeout());
    assertTrue(scheme.config().adaptiveRequestBudget());
    // A queue of 1 ms, between d_t/2 and d_t = 2 ms: eq. 1, the start-up's doubling over at once.
    Spillway.MixedGate gate = (Spillway.MixedGate) scheme.newServerGate(new ServerEnvironment(clock,
        clock, now -> 1_000_000, ControlChannel.DISCARD, OverloadMetrics.NONE, 1));
    gate.start();
    long pool = gate.credits().poolSize();
    gate.admit(new RequestMetadata().sessionId(1).flags(RequestMetadata.FLAG_REGISTER), clock.read());
    assertEquals(pool, gate.credits().poolSize(), "within the interval: no update");
    clock.advance(300_000); // the timer (1 ms) has not run
    gate.admit(new RequestMetadata().sessionId(1), clock.read());
    assertEquals(pool + 1, gate.credits().poolSize(), "eq. 1 on an admission, queue below d_t");
    gate.admit(new RequestMetadata().sessionId(1), clock.read());
    assertEquals(pool + 1, gate.credits().poolSize(), "once per interval");
    gate.close();

    // The paper's values: the timer alone.
    Spillway paper = Spillway.of(BreakwaterConfig.forSlo(5_000_000, 1_000_000));
    assertEquals(0, paper.admissionUpdateNanos());
    Spillway.MixedGate timerOnly = (Spillway.MixedGate) paper.newServerGate(new ServerEnvironment(clock,
        clock, now -> 0, ControlChannel.DISCARD, OverloadMetrics.NONE, 1));
    timerOnly.start();
    long start = timerOnly.credits().poolSize();
    timerOnly.admit(new RequestMetadata().sessionId(1).flags(RequestMetadata.FLAG_REGISTER), clock.read());
    clock.advance(300_000);
    timerOnly.admit(new RequestMetadata().sessionId(1), clock.read());
    assertEquals(start, timerOnly.credits().poolSize());
    clock.advance(700_000);
    assertEquals(start + 1, timerOnly.credits().poolSize(), "the timer's run");
    timerOnly.close();
  }

  /**
   * Eight sessions with no demand on an idle server (queueing delay 0, below d_t all along): for
   * Spillway the pool grows only while C_total ≤ C_issued + n_c, so after 200 ms it holds two
   * credits a session (each session's one window credit, one more each for eq. 4's overcommit, and
   * at most one step of A: its timer, quiet while no session is drained, runs every 100 periods);
   * the paper's growth on delay alone, the same parameters through {@link
   * Spillway#of}, goes on storing A a period that no session holds (up to the 64 · n_c cap), which
   * eq. 4 would hand out as overcommit for the next burst to spend at once.
   */
  @Test
  void thePoolGrowsOnlyWhileItsCreditsAreInUse() {
    VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 100_000_000L); // crosses the wrap
    Spillway scheme = Spillway.forSlo(Duration.ofMillis(5));
    Spillway paper = Spillway.of(scheme.config());
    long[] pools = new long[2];
    long[] issued = new long[2];
    for (int s = 0; s < 2; s++) {
      Spillway.MixedGate gate = (Spillway.MixedGate) (s == 0 ? scheme : paper).newServerGate(
          new ServerEnvironment(clock, clock, now -> 0, ControlChannel.DISCARD,
              OverloadMetrics.NONE, 1));
      gate.start();
      for (long id = 1; id <= 8; id++) {
        ServerPermit p = gate.admit(new RequestMetadata().sessionId(id)
            .flags(RequestMetadata.FLAG_REGISTER), clock.read());
        assertTrue(p.isAdmitted());
        p.complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata());
      }
      for (int ms = 0; ms < 200; ms++) {
        clock.advance(1_000_000); // the paper's timer runs every 1 ms
      }
      pools[s] = gate.credits().poolSize();
      issued[s] = gate.credits().issuedCredits();
      gate.close();
    }
    assertEquals(8, issued[0], "every session holds one credit: " + pools[0]);
    assertTrue(pools[0] >= 16 && pools[0] <= 17,
        "C_issued + n_c, and at most one step of A past it: " + pools[0]);
    assertEquals(1 + 200, pools[1], "the paper's pool: A = 1 a period on delay alone, "
        + issued[1] + " of it issued");
  }

  @Test
  void aCutIsNotCompoundedWhileItsCreditsAreStillOut() {
    long[] delay = {0};
    Spillway scheme = Spillway.forSloNanos(200_000); // d_t = 80 µs
    Spillway paper = Spillway.of(BreakwaterConfig.forSlo(200_000, 10_000));
    assertTrue(scheme.followsCreditsOut());
    assertTrue(!paper.followsCreditsOut());
    long[][] pools = new long[2][];
    int k = 0;
    for (Spillway s : new Spillway[] {scheme, paper}) {
      VirtualClock clock = new VirtualClock();
      BreakwaterServerGate gate = ((Spillway.MixedGate) s.newServerGate(new ServerEnvironment(clock, clock,
          now -> delay[0], ControlChannel.DISCARD, OverloadMetrics.NONE, 1))).credits();
      gate.start(); // the clock never moves: no timer run, no update on admissions
      delay[0] = 40_000; // d_t/2: eq. 1 for both (Spillway's start-up doubling is over at once)
      // 100 sessions, each holding its registration credit: C_issued = 100, so Spillway's pool may
      // grow (it grows only while C_total ≤ C_issued + n_c) as the paper's does
      ServerPermit[] permits = new ServerPermit[100];
      for (int i = 0; i < permits.length; i++) {
        permits[i] = gate.admit(new RequestMetadata().sessionId(i + 1).demand(4)
            .flags(RequestMetadata.FLAG_REGISTER), clock.read());
      }
      for (int i = 0; i < 99; i++) {
        gate.updatePool(clock.read()); // eq. 1: 1 + 99 · max(α·100, 1)
      }
      assertEquals(100, gate.poolSize());
      for (ServerPermit p : permits) {
        p.complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata()); // eq. 5 hands the pool out
      }
      assertEquals(100, gate.issuedCredits());
      delay[0] = 160_000; // 100 % over d_t: eq. 2's factor 0.98, and no session sends meanwhile
      long[] pool = new long[3];
      for (int i = 0; i < 3; i++) {
        gate.updatePool(clock.read());
        pool[i] = gate.poolSize();
      }
      assertEquals(100, gate.issuedCredits(), "nothing taken back: no response was sent");
      pools[k++] = pool;
      gate.close();
    }
    assertArrayEquals(new long[] {98, 98, 98}, pools[0], "one cut for the 100 credits out");
    assertArrayEquals(new long[] {98, 96, 94}, pools[1], "eq. 2 compounds on C_total every period");
  }

  @Test
  void thePoolStartsByDoublingWhileEveryCreditIsOut() {
    long[] delay = {0};
    long[][] pools = new long[2][];
    int k = 0;
    for (Spillway s : new Spillway[] {Spillway.forSloNanos(200_000),
        Spillway.of(BreakwaterConfig.forSlo(200_000, 10_000))}) {
      VirtualClock clock = new VirtualClock();
      BreakwaterServerGate gate = ((Spillway.MixedGate) s.newServerGate(new ServerEnvironment(clock, clock,
          now -> delay[0], ControlChannel.DISCARD, OverloadMetrics.NONE, 1))).credits();
      gate.start();
      delay[0] = 0;
      for (int i = 0; i < 20; i++) { // 20 sessions, each registered with its own credit: 20 out
        gate.admit(new RequestMetadata().sessionId(i + 1).flags(RequestMetadata.FLAG_REGISTER), clock.read());
      }
      long[] pool = new long[8];
      for (int i = 0; i < 8; i++) {
        if (i == 7) {
          delay[0] = 80_000; // d_t: eq. 2's factor 1, the pool holds
        }
        gate.updatePool(clock.read());
        pool[i] = gate.poolSize();
      }
      pools[k++] = pool;
      gate.close();
    }
    // 1 → 32 while all 20 are out; 32 leaves 12 unused: over, eq. 1 (+1) from then on.
    assertArrayEquals(new long[] {2, 4, 8, 16, 32, 33, 34, 34}, pools[0]);
    assertArrayEquals(new long[] {2, 3, 4, 5, 6, 7, 8, 8}, pools[1], "the paper's: eq. 1 from the start");
  }

  /**
   * One session asking for 500 credits of a pool of 1,000 that no one else wants: the paper's cap
   * (64) stops it there, Spillway's elastic cap lets eq. 5 grant it every open credit.
   */
  @Test
  void aSessionMayHoldMoreThanTheCapWhileNoOneWithinItIsShort() {
    int[] windows = new int[2];
    int k = 0;
    for (Spillway s : new Spillway[] {Spillway.forSlo(Duration.ofMillis(50)),
        Spillway.of(Spillway.forSlo(Duration.ofMillis(50)).config())}) {
      VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 1_000_000L);
      BreakwaterServerGate gate = ((Spillway.MixedGate) s.newServerGate(new ServerEnvironment(
          clock, clock, now -> 0, ControlChannel.DISCARD, OverloadMetrics.NONE, 1000))).credits();
      ServerPermit p = gate.admit(new RequestMetadata().sessionId(1).demand(500)
          .flags(RequestMetadata.FLAG_REGISTER), clock.read());
      clock.advance(2_000_000); // past the wrap
      p.complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata());
      windows[k++] = gate.windowOf(1);
    }
    assertEquals(1000, windows[0], "its credit and the 999 open ones (demand 500 + C_oc 999 asks more)");
    assertEquals(64, windows[1], "the paper's per-session cap");
  }

  /**
   * Session 1 holds the whole pool of 100 when session 2, within the cap, registers and asks for
   * 5. Once session 2 has found no credit open, each of session 1's answers gives one back (eq. 6's
   * step, where eq. 6 itself, with C_issued = C_total, would keep its window), and session 2's next
   * answer takes what came back; once nobody within the cap has been short for d_t, session 1 may
   * grow again.
   */
  @Test
  void aWindowAboveTheCapGivesBackWhileASessionWithinItIsShort() {
    VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 1_000_000L);
    BreakwaterServerGate gate = ((Spillway.MixedGate) Spillway.forSlo(Duration.ofMillis(50))
        .newServerGate(new ServerEnvironment(clock, clock, now -> 0, ControlChannel.DISCARD,
            OverloadMetrics.NONE, 100))).credits();
    gate.admit(new RequestMetadata().sessionId(1).demand(94).flags(RequestMetadata.FLAG_REGISTER),
        clock.read()).complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata());
    assertEquals(100, gate.windowOf(1), "eq. 5: its credit and the 99 open ones");
    ServerPermit[] held = new ServerPermit[20];
    for (int i = 0; i < held.length; i++) {
      held[i] = gate.admit(new RequestMetadata().sessionId(1).demand(200), clock.read());
      assertTrue(held[i].isAdmitted());
    }
    ServerPermit newcomer = gate.admit(new RequestMetadata().sessionId(2).demand(5)
        .flags(RequestMetadata.FLAG_REGISTER), clock.read());
    held[0].complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata());
    assertEquals(99, gate.windowOf(1), "eq. 6 for the newcomer's registration credit");
    newcomer.complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata());
    assertEquals(1, gate.windowOf(2), "no credit open: it keeps the one it registered with");
    assertEquals(100, gate.issuedCredits());
    for (int i = 1; i <= 10; i++) {
      held[i].complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata());
    }
    assertEquals(89, gate.windowOf(1), "one credit back an answer");
    gate.admit(new RequestMetadata().sessionId(2).demand(5), clock.read())
        .complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata());
    assertEquals(10, gate.windowOf(2), "demand 5 + C_oc (100 - 90) / 2, from what session 1 gave back");
    clock.advance(20_000_000 + 1); // d_t (40 % of the SLO) with no one short
    held[11].complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata());
    assertEquals(90, gate.windowOf(1), "eq. 5 takes the one open credit: the cap no longer cuts");
    assertEquals(100, gate.issuedCredits());
  }

  /**
   * A session drained to no window waits for an explicit credit, which the control loop sends only
   * while credits are open; it sends no answers that could say it is short. While the pool is full
   * the control loop says so for it, and a window above the cap keeps giving credits back after
   * the drained session's own last answer is more than d_t old.
   */
  @Test
  void aDrainedSessionWaitingOnAFullPoolKeepsWindowsAboveTheCapGivingBack() {
    VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 1_000_000L);
    long[] delay = {0};
    BreakwaterServerGate gate = ((Spillway.MixedGate) Spillway.forSlo(Duration.ofMillis(50))
        .newServerGate(new ServerEnvironment(clock, clock, now -> delay[0], ControlChannel.DISCARD,
            OverloadMetrics.NONE, 100))).credits();
    gate.admit(new RequestMetadata().sessionId(1).demand(94).flags(RequestMetadata.FLAG_REGISTER),
        clock.read()).complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata());
    ServerPermit[] held = new ServerPermit[3];
    for (int i = 0; i < held.length; i++) {
      held[i] = gate.admit(new RequestMetadata().sessionId(1).demand(200), clock.read());
    }
    gate.admit(new RequestMetadata().sessionId(2).demand(5).flags(RequestMetadata.FLAG_REGISTER),
        clock.read()).complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata());
    assertEquals(0, gate.windowOf(2), "eq. 6 took its registration credit back: drained");
    assertEquals(100, gate.issuedCredits());
    clock.advance(25_000_000); // past d_t (20 ms): its answer's mark has lapsed
    delay[0] = 20_000_000;     // the queue at d_t: eq. 2 holds the pool at 100, no credit opens
    gate.updatePool(clock.read());
    assertEquals(100, gate.poolSize());
    assertEquals(0, gate.windowOf(2), "no credit open for it");
    held[0].complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata());
    assertEquals(99, gate.windowOf(1), "one credit back: the drained session is short");
    held[1].complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata());
    assertEquals(98, gate.windowOf(1));
    gate.updatePool(clock.read());
    assertEquals(1, gate.windowOf(2), "the two credits open: the drained session gets one");
  }

  /**
   * Two sessions, each asking for 1,000 credits, with handlers holding every call 10 ms and an
   * idle queue: the paper's pool stops at 64 · n_c = 128; Spillway's grows by what the sessions ask
   * beyond the cap and cannot get, at most a doubling a residence ({@link
   * CreditPolicy#coverResidenceShortfall}).
   */
  @Test
  void thePoolGrowsPastTheCapTimesTheSessionsForCreditsAskedBeyondIt() {
    long[] pools = new long[2];
    int k = 0;
    for (Spillway s : new Spillway[] {Spillway.forSlo(Duration.ofMillis(50)),
        Spillway.of(Spillway.forSlo(Duration.ofMillis(50)).config())}) {
      VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 100_000_000L);
      BreakwaterServerGate gate = ((Spillway.MixedGate) s.newServerGate(new ServerEnvironment(
          clock, clock, now -> 0, ControlChannel.DISCARD, OverloadMetrics.NONE, 2))).credits();
      for (long id = 1; id <= 2; id++) {
        gate.admit(new RequestMetadata().sessionId(id).demand(1000)
            .flags(RequestMetadata.FLAG_REGISTER), clock.read())
            .complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata());
      }
      java.util.List<ServerPermit> inFlight = new java.util.ArrayList<>();
      for (int round = 0; round < 200; round++) { // 2 s: each round fills both windows, holds 10 ms
        for (long id = 1; id <= 2; id++) {
          while (true) {
            ServerPermit p = gate.admit(new RequestMetadata().sessionId(id).demand(1000), clock.read());
            if (!p.isAdmitted()) {
              p.complete(Outcome.DROPPED, clock.read(), new ResponseMetadata());
              break;
            }
            p.started(clock.read());
            inFlight.add(p);
          }
        }
        clock.advance(10_000_000);
        for (ServerPermit p : inFlight) {
          p.complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata());
        }
        inFlight.clear();
        gate.updatePool(clock.read());
      }
      pools[k++] = gate.poolSize();
    }
    assertTrue(pools[0] > 1000, "Spillway's pool: " + pools[0]);
    assertEquals(128, pools[1], "the paper's: 64 credits a session");
  }

  /**
   * A hundred aware and a hundred plain requests a second, each answered at once: the two control
   * loops, one run a period each (2,000 in the second), sleep while no one waits for them. The
   * credit half's runs every 100 periods while no session is drained; the plain half's every 100
   * periods, its limit updated by the requests themselves.
   */
  @Test
  void theControlLoopsSleepOnALightlyLoadedServer() {
    VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 500_000_000L); // crosses the wrap
    int[] runs = {0};
    Scheduler counting = (task, delay) -> clock.schedule(() -> {
      runs[0]++;
      task.run();
    }, delay);
    Spillway.MixedGate gate = (Spillway.MixedGate) Spillway.forSlo(Duration.ofMillis(10))
        .newServerGate(new ServerEnvironment(clock, counting, now -> 0, ControlChannel.DISCARD,
            OverloadMetrics.NONE, 1));
    gate.start();
    for (int i = 0; i < 100; i++) {
      ServerPermit aware = gate.admit(new RequestMetadata().sessionId(1)
          .flags(i == 0 ? RequestMetadata.FLAG_REGISTER : 0), clock.read());
      assertTrue(aware.isAdmitted(), "aware " + i);
      aware.started(clock.read());
      aware.complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata());
      clock.advance(5_000_000);
      ServerPermit plain = gate.admit(new RequestMetadata(), clock.read());
      assertTrue(plain.isAdmitted(), "plain " + i);
      plain.started(clock.read());
      plain.complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata());
      clock.advance(5_000_000);
    }
    assertTrue(gate.credits().controlLoopQuiet());
    assertTrue(runs[0] >= 20 && runs[0] <= 22, "about ten runs each: " + runs[0]);
    gate.close();
  }

  /**
   * A session drained to no window waits for an explicit credit, which only the control loop
   * sends: draining wakes a sleeping loop, and the credit comes within a period, as it did from a
   * loop that ran every period.
   */
  @Test
  void aDrainedSessionWakesTheSleepingControlLoop() {
    VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 1_000_000L);
    java.util.List<long[]> credits = new java.util.ArrayList<>();
    ControlChannel control = new ControlChannel() {
      @Override
      public void sendCredit(long sessionId, int creditDelta) {
        credits.add(new long[] {sessionId, creditDelta});
      }

      @Override
      public void sendCredit(long sessionId, int creditDelta, int window, long seq) {
        credits.add(new long[] {sessionId, creditDelta});
      }
    };
    Spillway scheme = Spillway.forSlo(Duration.ofMillis(50));
    long period = scheme.config().controlPeriodNanos();
    assertEquals(2_500_000, period);
    BreakwaterServerGate gate = ((Spillway.MixedGate) scheme.newServerGate(new ServerEnvironment(
        clock, clock, now -> 0, control, OverloadMetrics.NONE, 100))).credits();
    gate.start();
    clock.advance(period);
    assertTrue(gate.controlLoopQuiet(), "its first run found no one waiting");
    gate.admit(new RequestMetadata().sessionId(1).demand(94).flags(RequestMetadata.FLAG_REGISTER),
        clock.read()).complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata());
    for (int i = 0; i < 3; i++) {
      gate.admit(new RequestMetadata().sessionId(1).demand(200), clock.read()); // held
    }
    gate.admit(new RequestMetadata().sessionId(2).demand(5).flags(RequestMetadata.FLAG_REGISTER),
        clock.read()).complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata());
    assertEquals(0, gate.windowOf(2), "eq. 6 took its registration credit back: drained");
    assertTrue(!gate.controlLoopQuiet(), "woken by the drain");
    clock.advance(period - 1);
    assertTrue(credits.isEmpty());
    clock.advance(1); // the idle queue grows the pool (eq. 1): a credit opens for session 2
    assertEquals(1, credits.size());
    assertArrayEquals(new long[] {2, 1}, credits.get(0));
    assertEquals(1, gate.windowOf(2));
    clock.advance(period);
    assertTrue(gate.controlLoopQuiet(), "no one waits any more");
    gate.close();
  }

  /**
   * A metrics callback that throws on every report: the admissions that run the two halves'
   * updates are still decided, and their requests end once; the updates still happen.
   */
  @Test
  void aThrowingMetricsCallbackFailsNoAdmissionThatRunsAnUpdate() {
    VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 100_000_000L);
    int[] reports = {0};
    OverloadMetrics broken = new OverloadMetrics() {
      @Override
      public void onCreditPool(long total, long issued, int sessions) {
        reports[0]++;
        throw new IllegalStateException("a broken meter");
      }

      @Override
      public void onConcurrencyLimit(long limit, long counted) {
        reports[0]++;
        throw new IllegalStateException("a broken meter");
      }
    };
    Spillway.MixedGate gate = (Spillway.MixedGate) Spillway.forSlo(Duration.ofMillis(5))
        .newServerGate(new ServerEnvironment(clock, clock, now -> 0, ControlChannel.DISCARD,
            broken, 1));
    for (int i = 0; i < 10; i++) {
      ServerPermit aware = gate.admit(new RequestMetadata().sessionId(1)
          .flags(i == 0 ? RequestMetadata.FLAG_REGISTER : 0), clock.read());
      ServerPermit plain = gate.admit(new RequestMetadata(), clock.read());
      assertTrue(aware.isAdmitted() && plain.isAdmitted(), "round " + i);
      aware.complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata());
      plain.complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata());
      clock.advance(1_000_000); // past both halves' update intervals: the next admissions update
    }
    // the credit half on all ten admissions (the first finds no earlier update), the plain half on
    // the nine a period after its construction; every report threw
    assertEquals(19, reports[0]);
    assertEquals(0, gate.plain().waiting());
    assertEquals(gate.credits().windowOf(1), gate.credits().issuedCredits(),
        "the credits out are the session's window: nothing leaked");
  }

  /** Spillway-aware clients: the contract every scheme passes. */
  @Nested
  class Contract extends AdmissionContract {
    @Override
    protected OverloadScheme scheme(long sloNanos, long rttNanos) {
      return Spillway.forSloNanos(sloNanos);
    }
  }

  /**
   * The paper's values reachable through {@link Spillway#of}: the pool updated by the timer alone,
   * at the default period (1 ms for this SLO, a hundred RTTs of the contract's world). With the pool
   * this slow, C_issued sits at C_total and the windows freeze at about one credit per session,
   * where a session that resends its refusals at once gains most from keeping its credit busy.
   */
  @Nested
  class TimerOnlyContract extends AdmissionContract {
    @Override
    protected OverloadScheme scheme(long sloNanos, long rttNanos) {
      return Spillway.of(BreakwaterConfig.forSlo(sloNanos, Spillway.defaultPeriodNanos(sloNanos)));
    }
  }
}
