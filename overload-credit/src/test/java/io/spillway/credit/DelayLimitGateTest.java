package io.spillway.credit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.ControlChannel;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.Outcome;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerPermit;
import io.spillway.api.Status;
import io.spillway.api.testing.VirtualClock;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The server-only limit for plain clients, in virtual time, with literal numbers. */
class DelayLimitGateTest {

  private static final long US = 1_000;
  private static final long TARGET = 2_000 * US;
  private static final long DROP = 4_000 * US;
  private static final long PERIOD = 250 * US;

  private final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 10_000_000_000L);
  private long delay;
  private final DelayLimitGate gate = new DelayLimitGate(TARGET, DROP, PERIOD, 0.02,
      new ServerEnvironment(clock, clock, now -> delay, ControlChannel.DISCARD, OverloadMetrics.NONE, 2));

  private ServerPermit admit() {
    return admit(gate);
  }

  private ServerPermit admit(DelayLimitGate g) {
    return g.admit(new RequestMetadata(), clock.read());
  }

  private static void finish(ServerPermit p, long now) {
    p.complete(p.isAdmitted() ? Outcome.SUCCESS : Outcome.DROPPED, now, new ResponseMetadata());
  }

  /** A gate whose host reports when handlers start ({@link ServerEnvironment#reportsStarts}). */
  private final DelayLimitGate reporting = new DelayLimitGate(TARGET, DROP, PERIOD, 0.02,
      new ServerEnvironment(clock, clock, now -> delay, ControlChannel.DISCARD, OverloadMetrics.NONE, 2,
          true));

  @Test
  void dropsAtTheAqmThresholdBeforeCounting() {
    delay = DROP;
    ServerPermit p = admit();
    assertEquals(Status.REJECTED_AQM, p.status());
    assertEquals(0, gate.waiting());
    finish(p, clock.read());
    delay = DROP - 1;
    assertTrue(admit().isAdmitted());
  }

  @Test
  void holdsRequestsInFlightToTheLimit() {
    assertEquals(2, gate.limit()); // starts at the parallelism
    ServerPermit a = admit();
    ServerPermit b = admit();
    ServerPermit c = admit();
    assertTrue(a.isAdmitted() && b.isAdmitted());
    assertEquals(Status.REJECTED_LIMIT, c.status());
    finish(c, clock.read());
    assertEquals(2, gate.waiting());
    finish(a, clock.read());
    assertTrue(admit().isAdmitted(), "a completion frees its slot");
  }

  @Test
  void aRequestWhoseHandlerHasItNoLongerWaits() {
    ServerPermit a = admit();
    ServerPermit b = admit();
    assertEquals(Status.REJECTED_LIMIT, probe(), "two waiting fill a limit of 2");
    a.started(clock.read());
    a.started(clock.read()); // idempotent
    assertEquals(1, gate.waiting());
    ServerPermit c = admit();
    assertTrue(c.isAdmitted(), "a started request makes room, though it is still in flight");
    assertEquals(Status.REJECTED_LIMIT, probe());
    finish(a, clock.read()); // it left the queue when it started: not counted again
    assertEquals(2, gate.waiting());
    finish(b, clock.read()); // never started: leaves the queue as it completes
    assertEquals(1, gate.waiting());
    b.started(clock.read()); // after completion: ignored
    assertEquals(1, gate.waiting());
    finish(c, clock.read());
    assertEquals(0, gate.waiting());
  }

  @Test
  void aBlockingServiceHoldsFarMoreInFlightThanItsLimitWithoutARefusal() {
    gate.start();
    List<ServerPermit> blocked = new ArrayList<>();
    for (int i = 0; i < 400; i++) { // each handler takes its request at once, then blocks
      ServerPermit p = admit();
      assertTrue(p.isAdmitted(), "request " + i);
      p.started(clock.read());
      blocked.add(p);
      if (i % 20 == 19) {
        clock.advance(PERIOD);
      }
    }
    // One waiting at a time is half a limit of 2, so it grew once, and then no more: 400 in
    // flight were let in by a limit of 3, never by growing it to them.
    assertEquals(3, gate.limit());
    blocked.forEach(p -> finish(p, clock.read()));
    assertEquals(0, gate.waiting());
  }

  @Test
  void whereHandlersStartTheFloorIsTheQueueTheDrainRateEmptiesInTheTarget() {
    gate.start();
    ServerPermit a = admit(); // position 1: alone, it waits only for a hand-off, not a sample
    ServerPermit b = admit(); // position 2
    clock.advance(5 * US);
    a.started(clock.read()); // waited 5 us
    clock.advance(15 * US);
    b.started(clock.read()); // waited 20 us
    clock.advance(PERIOD - 20 * US);
    List<ServerPermit> burst = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      burst.add(admit()); // the first, a period after the last update, updates the limit
    }
    // drain rate 2 / 20 us = 100,000/s (a's sample would have made it 3 / 25 us); a 2 ms target's
    // queue at that rate is 200 (the completion rate, 0 here, is the smaller); no parallelism
    // term: started requests no longer count
    assertEquals(200, gate.limit());
    assertTrue(burst.stream().allMatch(ServerPermit::isAdmitted), "a burst of 200 waits at once");
    assertEquals(Status.REJECTED_LIMIT, probe());
    finish(a, clock.read());
    finish(b, clock.read());
    burst.forEach(p -> finish(p, clock.read()));
  }

  @Test
  void aHandlerThatGetsItsRequestAtOnceSaysNothingOfTheDrainRate() {
    gate.start();
    ServerPermit a = admit();
    a.started(clock.read()); // no wait: no sample
    periodsWithProbes(1);
    // one waiting of a limit of 2 was half of it in use: eq. 1 added one; the floor did not move
    assertEquals(3, gate.limit());
    finish(a, clock.read());
  }

  /**
   * The first admission a period after the last update updates the limit, once; a gate with no
   * admissions is updated by a timer every hundred periods, not every period.
   */
  @Test
  void admissionsUpdateTheLimitOnceAPeriodAndAnIdleGatesTimerRunsEveryHundred() {
    int[] runs = {0};
    int[] updates = {0};
    io.spillway.api.Scheduler counting = (task, d) -> clock.schedule(() -> {
      runs[0]++;
      task.run();
    }, d);
    OverloadMetrics metrics = new OverloadMetrics() {
      @Override
      public void onConcurrencyLimit(long limit, long counted) {
        updates[0]++;
      }
    };
    DelayLimitGate g = new DelayLimitGate(TARGET, DROP, PERIOD, 0.02, new ServerEnvironment(clock,
        counting, now -> delay, ControlChannel.DISCARD, metrics, 2));
    g.start();
    clock.advance(PERIOD - 1);
    finish(g.admit(new RequestMetadata(), clock.read()), clock.read());
    assertEquals(0, updates[0], "within the first period");
    clock.advance(1);
    for (int i = 0; i < 10; i++) {
      finish(g.admit(new RequestMetadata(), clock.read()), clock.read());
    }
    assertEquals(1, updates[0], "ten admissions a period after the start: one update");
    clock.advance(PERIOD);
    finish(g.admit(new RequestMetadata(), clock.read()), clock.read());
    assertEquals(2, updates[0]);
    assertEquals(0, runs[0], "no timer run yet");
    clock.advance(1_000_000_000L - 2 * PERIOD); // one second from the start, no admissions
    assertEquals(40, runs[0], "one second of 250 us periods, a run every hundred");
    assertEquals(42, updates[0], "each run updates an idle gate");
    g.close();
  }

  @Test
  void aFreshGateRefusesNoBurstByCountUntilARequestHasWaitedBehindAnother() {
    reporting.start();
    List<ServerPermit> burst = new ArrayList<>();
    for (int i = 0; i < 40; i++) { // one read's worth of calls at a server that just started
      burst.add(admit(reporting));
    }
    assertTrue(burst.stream().allMatch(ServerPermit::isAdmitted), "no measure of the queue yet");
    assertEquals(40, reporting.waiting());
    assertFalse(reporting.measured());
    delay = DROP;
    assertEquals(Status.REJECTED_AQM, probe(reporting), "the AQM threshold bounds the queue meanwhile");
    delay = 0;
    clock.advance(10 * US);
    burst.get(0).started(clock.read()); // position 1: a hand-off, no sample
    assertFalse(reporting.measured());
    for (int i = 1; i < 40; i++) { // each waited 10 us more than the one before it
      clock.advance(10 * US);
      burst.get(i).started(clock.read());
    }
    assertTrue(reporting.measured(), "a request that waited behind another is the first sample");
    clock.advance(PERIOD);
    probe(reporting); // opens a period: the floor is the drain rate's queue
    // Σ position / Σ wait = (2 + … + 40) / (20 + … + 400 us) = 819 / 8,190 us = 100,000/s: a
    // 2 ms target's queue is 200
    assertEquals(200, reporting.limit());
    burst.forEach(p -> finish(p, clock.read()));
  }

  @Test
  void aHostThatReportsNoStartsIsLimitedFromItsFirstRequest() {
    assertTrue(gate.measured());
    assertTrue(admit().isAdmitted());
    assertTrue(admit().isAdmitted());
    assertEquals(Status.REJECTED_LIMIT, probe(), "the parallelism, 2, with no completion yet");
  }

  @Test
  void aQuietSpellDoesNotAgeOutTheDrainRate() {
    reporting.start();
    ServerPermit a = admit(reporting);
    ServerPermit b = admit(reporting); // position 2
    clock.advance(20 * US);
    a.started(clock.read());
    b.started(clock.read()); // waited 20 us at position 2: 100,000/s
    finish(a, clock.read());
    finish(b, clock.read());
    clock.advance(PERIOD);
    probe(reporting);
    assertEquals(200, reporting.limit());
    // Ten windows of quiet: the idle timer updates the limit every hundred periods, and the
    // completion rate falls to nothing, but no request waited, so nothing says the drain slowed.
    clock.advance(10L * DelayLimitGate.FLOOR_PERIODS * PERIOD);
    probe(reporting);
    assertEquals(200, reporting.limit());
    List<ServerPermit> burst = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      burst.add(admit(reporting));
    }
    assertTrue(burst.stream().allMatch(ServerPermit::isAdmitted), "the queue 2 ms drains");
    assertEquals(Status.REJECTED_LIMIT, probe(reporting));
    burst.forEach(p -> finish(p, clock.read()));
  }

  @Test
  void aRejectedPermitIgnoresStarted() {
    delay = DROP;
    ServerPermit p = admit();
    p.started(clock.read());
    assertEquals(0, gate.waiting());
    finish(p, clock.read());
  }

  private Status probe() {
    return probe(gate);
  }

  /** One request admitted or refused, and completed at once: the decision it got. */
  private Status probe(DelayLimitGate g) {
    ServerPermit p = admit(g);
    finish(p, clock.read());
    return p.status();
  }

  /** {@code n} control periods, each opened by a request: the admission that updates the limit. */
  private void periodsWithProbes(int n) {
    for (int i = 0; i < n; i++) {
      clock.advance(PERIOD);
      probe();
    }
  }

  @Test
  void growsByOnePerPeriodWhileUsedAndUnderTarget() {
    gate.start();
    List<ServerPermit> held = new ArrayList<>();
    for (int period = 0; period < 10; period++) {
      while (true) {
        ServerPermit p = admit();
        if (!p.isAdmitted()) {
          finish(p, clock.read());
          break;
        }
        held.add(p);
      }
      clock.advance(PERIOD);
    }
    probe(); // the request that opens the next period updates the limit for the last one
    assertEquals(12, gate.limit(), "2 + one per period for 10 periods");
    held.forEach(p -> finish(p, clock.read()));
  }

  @Test
  void theFloorKeepsRoomForATargetsQueueAtTheRateTheServerCompletes() {
    gate.start();
    for (int period = 0; period < 2 * DelayLimitGate.FLOOR_PERIODS; period++) {
      for (int i = 0; i < 5; i++) { // 5 completions per 250 us period: 20,000 per second
        finish(admit(), clock.read());
      }
      clock.advance(PERIOD);
    }
    delay = 1_000 * TARGET; // a spike: the limit halves every period...
    periodsWithProbes(20); // each probe dropped by AQM, after it updated the limit
    // ...but not below 2 + 20,000/s × 2 ms = 42 (the window now holds 20 empty periods of 100)
    assertEquals(2 + 40 * 80 / 100, gate.limit());
  }

  @Test
  void theFloorsRateSpansItsPeriodsWhenAControlPeriodFallsOnTheClocksWrap() {
    // The ticker wraps at the 150th control period: that period starts at Long.MIN_VALUE.
    VirtualClock wrapping = new VirtualClock(Long.MIN_VALUE - 150 * PERIOD);
    DelayLimitGate g = new DelayLimitGate(TARGET, DROP, PERIOD, 0.02, new ServerEnvironment(
        wrapping, wrapping, now -> delay, ControlChannel.DISCARD, OverloadMetrics.NONE, 2));
    g.start();
    for (int period = 0; period < 2 * DelayLimitGate.FLOOR_PERIODS; period++) {
      for (int i = 0; i < 5; i++) { // 5 completions per 250 us period: 20,000 per second
        finish(g.admit(new RequestMetadata(), wrapping.read()), wrapping.read());
      }
      wrapping.advance(PERIOD);
    }
    delay = 1_000 * TARGET;
    for (int period = 0; period < 20; period++) { // each request dropped by AQM, after the update
      wrapping.advance(PERIOD);
      finish(g.admit(new RequestMetadata(), wrapping.read()), wrapping.read());
    }
    // as without the wrap: 80 periods of 5 completions over the window's 100 periods, × 2 ms
    assertEquals(2 + 40 * 80 / 100, g.limit());
  }

  @Test
  void anApplicationLimitedServerDoesNotGrowItsLimit() {
    gate.start();
    for (int period = 0; period < 300; period++) {
      ServerPermit p = admit(); // one request at a time, 100 us each, one per period
      clock.advance(100 * US);
      finish(p, clock.read());
      clock.advance(PERIOD - 100 * US);
    }
    // one completion per 250 us period: 4,000/s × 2 ms = 8 above the parallelism
    assertEquals(2 + 8, gate.limit(), "the floor, never more: 1 in flight of 10 is not half");
  }

  @Test
  void shrinksMultiplicativelyAboveTheTargetButNotBelowTheParallelism() {
    gate.start();
    List<ServerPermit> held = new ArrayList<>();
    for (int period = 0; period < 100; period++) {
      ServerPermit p;
      while ((p = admit()).isAdmitted()) {
        held.add(p);
      }
      finish(p, clock.read());
      clock.advance(PERIOD);
    }
    probe(); // opens the next period: the limit is updated for the last one
    assertEquals(102, gate.limit());
    delay = 3 * TARGET; // eq. 2: 1 − 0.02·(3 − 1) = 0.96 per period
    periodsWithProbes(1);
    assertEquals((long) (102 * 0.96), gate.limit());
    delay = 1_000 * TARGET; // at most halved per period
    periodsWithProbes(1);
    assertEquals((long) (97 * 0.5), gate.limit());
    periodsWithProbes(20);
    assertEquals(2, gate.limit(), "never below the parallelism");
    assertFalse(admit().isAdmitted(), "and the 100 in flight still hold it");
    held.forEach(p -> finish(p, clock.read()));
    assertEquals(0, gate.waiting());
  }

  /** A gate that knows its SLO: 5 ms, with the configured d_t = 2 ms and AQM threshold 4 ms. */
  private DelayLimitGate gateWithSlo(long sloNanos) {
    return new DelayLimitGate(new QueueShare(sloNanos, TARGET, DROP), PERIOD, 0.02,
        new ServerEnvironment(clock, clock, now -> delay, ControlChannel.DISCARD, OverloadMetrics.NONE, 2));
  }

  /** One request admitted, started, and completed {@code residenceNanos} after its start. */
  private void serve(DelayLimitGate g, long residenceNanos) {
    ServerPermit p = g.admit(new RequestMetadata(), clock.read());
    assertTrue(p.isAdmitted());
    p.started(clock.read());
    clock.advance(residenceNanos);
    finish(p, clock.read());
  }

  @Test
  void handlersThatTakeMostOfTheSloLeaveTheQueueOnlyTheRest() {
    DelayLimitGate g = gateWithSlo(5_000 * US);
    serve(g, 3_000 * US); // the first sample is the p99 estimate: 3 ms of the 5 ms SLO
    g.updateLimit(clock.read());
    assertEquals(2_000 * US, g.dropThresholdNanos(), "SLO − p99 residence");
    assertEquals(1_000 * US, g.targetDelayNanos(), "d_t scaled with it");
    delay = 2_000 * US; // admitted before: under the configured 4 ms
    ServerPermit refused = g.admit(new RequestMetadata(), clock.read());
    assertEquals(Status.REJECTED_AQM, refused.status());
    finish(refused, clock.read());
    delay = 2_000 * US - 1;
    assertTrue(g.admit(new RequestMetadata(), clock.read()).isAdmitted());
  }

  @Test
  void handlersWellWithinTheSloKeepTheConfiguredTargets() {
    DelayLimitGate g = gateWithSlo(5_000 * US);
    serve(g, 200 * US); // 5 ms − 0.2 ms leaves more than the configured 4 ms
    g.updateLimit(clock.read());
    assertEquals(DROP, g.dropThresholdNanos());
    assertEquals(TARGET, g.targetDelayNanos());
  }

  @Test
  void handlersLongerThanTheSloLeaveAnEighthOfTheThreshold() {
    DelayLimitGate g = gateWithSlo(5_000 * US);
    serve(g, 7_000 * US);
    g.updateLimit(clock.read());
    assertEquals(DROP / 8, g.dropThresholdNanos());
    assertEquals(TARGET / 8, g.targetDelayNanos());
  }

  @Test
  void withoutAnSloOrWithoutStartsTheTargetsStayFixed() {
    serve(gate, 3_000 * US); // the gate built without an SLO
    gate.updateLimit(clock.read());
    assertEquals(DROP, gate.dropThresholdNanos());
    DelayLimitGate g = gateWithSlo(5_000 * US);
    ServerPermit p = g.admit(new RequestMetadata(), clock.read());
    clock.advance(3_000 * US);
    finish(p, clock.read()); // never started: its time includes its wait, not a residence
    g.updateLimit(clock.read());
    assertEquals(DROP, g.dropThresholdNanos());
    assertEquals(TARGET, g.targetDelayNanos());
  }
}
