package io.spillway.credit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.ClientEnvironment;
import io.spillway.api.Outcome;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerPermit;
import io.spillway.api.Status;
import io.spillway.api.testing.VirtualClock;
import io.spillway.credit.ProtegoPolicy.Decision;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Protego's gate in virtual time, the clock started just before {@link Long#MAX_VALUE}. With the
 * defaults for a 100 µs SLO and a 10 µs RTT an iteration is: pool set at t, measures reset at
 * t + 10 µs, decision at t + 40 µs. Every iteration below measures exactly 30 µs, so the rates the
 * gate compares are in the ratios of the literal counts.
 */
class ProtegoServerGateTest {

  private static final long US = 1_000;
  private final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 50 * US);

  private ProtegoServerGate gate(ProtegoConfig config, int parallelism) {
    ProtegoServerGate g = new ProtegoServerGate(config, new ServerEnvironment(clock, clock,
        now -> 0, (session, delta) -> { }, OverloadMetrics.NONE, parallelism));
    g.start();
    return g;
  }

  private static ProtegoConfig config() {
    return ProtegoConfig.forSlo(100 * US, 10 * US); // initial RTT max(10 µs, SLO/10) = 10 µs
  }

  /** Algorithm 1 as printed, starting from one credit per core (C_min). */
  private static ProtegoConfig paper() {
    return config().withRule(ProtegoConfig.Rule.PAPER).withInitialPoolPerCore(1);
  }

  /** Admits and completes requests of one session one after another, {@code aborted} of them ABORTED. */
  private void serve(ProtegoServerGate g, int count, int aborted) {
    for (int i = 0; i < count; i++) {
      ServerPermit p = g.admit(new RequestMetadata().sessionId(1).flags(
          g.sessionCount() == 0 ? RequestMetadata.FLAG_REGISTER : 0), clock.read());
      assertTrue(p.isAdmitted());
      p.complete(i < aborted ? Outcome.ABORTED : Outcome.SUCCESS, clock.read(),
          new ResponseMetadata());
    }
  }

  @Test
  void thePoolStartsAtTenCreditsPerCore() {
    assertEquals(40, gate(config(), 4).poolSize()); // bw2_server.c: 10 * runtime_max_cores()
    assertEquals(4, gate(paper(), 4).poolSize());
  }

  @Test
  void anIterationIsFourRttsAndTheFirstIsNotMeasured() {
    ProtegoServerGate g = gate(config(), 4);
    serve(g, 50, 0); // before the measures reset at 10 µs: not counted
    clock.advance(39 * US);
    assertEquals(0, g.iterations());
    clock.advance(1 * US);
    assertEquals(1, g.iterations());
    // nothing measured after the reset: in_cur = 0 grows the pool ([A1]), 40 → 41
    assertEquals(Decision.GROW_IDLE, g.lastDecision());
    assertEquals(41, g.poolSize());
  }

  @Test
  void underThePrintedRuleAnUnmeasuredIterationShrinks() {
    ProtegoServerGate g = gate(paper(), 4);
    serve(g, 50, 0);
    clock.advance(40 * US);
    // in and out 0 against 0 → line 20, clamped at parallelism
    assertEquals(Decision.SHRINK_NO_TREND, g.lastDecision());
    assertEquals(4, g.poolSize());
  }

  @Test
  void theAuthorsRuleStepsByOneAndGrowsOnlyAFullyHandedOutPool() {
    // One core, one credit to start; one session whose window stays 1 (no demand): C_issued = 1.
    ProtegoServerGate g = gate(config().withInitialPoolPerCore(1), 1);
    assertEquals(1, g.poolSize());
    clock.advance(15 * US);
    serve(g, 10, 0);
    clock.advance(25 * US); // t = 40: in 10 ≥ 0, out 10 > 0, 10·10 ≥ 10, held 1 ≥ C 1 → +1
    assertEquals(Decision.GROW, g.lastDecision());
    assertEquals(2, g.poolSize());
    assertEquals(1, g.issuedCredits());
    clock.advance(15 * US);
    serve(g, 20, 0);
    clock.advance(25 * US); // t = 80: the slope says grow, but only 1 of the 2 credits is held
    assertEquals(Decision.SHRINK_POOL_UNUSED, g.lastDecision());
    assertEquals(1, g.poolSize()); // −1, not ⌊0.98·2⌋
    clock.advance(15 * US);
    serve(g, 10, 0);
    clock.advance(25 * US); // t = 120: DECR phase, in 10 < 20 and out 10 < 20, 10·10 > 10 → +1
    assertEquals(Decision.GROW, g.lastDecision());
    assertEquals(2, g.poolSize());
    clock.advance(15 * US);
    serve(g, 10, 0);
    clock.advance(25 * US); // t = 160: in 10 = 10 is the INCR phase; out 10 = 10 did not rise
    assertEquals(Decision.SHRINK_NO_TREND, g.lastDecision());
    assertEquals(1, g.poolSize());
    clock.advance(40 * US); // t = 200: nothing came in → +1
    assertEquals(Decision.GROW_IDLE, g.lastDecision());
    assertEquals(2, g.poolSize());
    assertEquals(5, g.iterations());
  }

  @Test
  void underTheAuthorsRuleASessionKeepsItsLastCreditUnlessDropped() {
    for (ProtegoConfig.Rule rule : ProtegoConfig.Rule.values()) {
      // C = 1 and three sessions holding one credit each: C_issued 3 > C, so eq. 6 takes a
      // credit back on each response
      ProtegoServerGate g = gate(config().withRule(rule).withInitialPoolPerCore(1), 1);
      ServerPermit[] permits = new ServerPermit[3];
      for (int i = 0; i < 3; i++) {
        permits[i] = g.admit(new RequestMetadata().sessionId(i + 1)
            .flags(RequestMetadata.FLAG_REGISTER), clock.read());
      }
      assertEquals(3, g.issuedCredits());
      permits[0].complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata());
      permits[1].complete(Outcome.ABORTED, clock.read(), new ResponseMetadata());
      // [A7] served: keeps max((C − C_issued)/n_c, 1) = 1; dropped: drains. Printed rule: both
      // drain.
      boolean authors = rule == ProtegoConfig.Rule.AUTHORS;
      assertEquals(authors ? 1 : 0, g.windowOf(1), rule.name());
      assertEquals(0, g.windowOf(2), rule.name());
      assertEquals(authors ? 2 : 1, g.issuedCredits(), rule.name());
    }
  }

  @Test
  void thePoolGrowsWhileThroughputFollowsLoadAndShrinksWhenItStops() {
    ProtegoServerGate g = gate(paper(), 4);
    clock.advance(15 * US);
    serve(g, 10, 0);
    clock.advance(25 * US); // t = 40 µs: in 10, out 10 against 0, 0 → grow by a = 1
    assertEquals(Decision.GROW, g.lastDecision());
    assertEquals(5, g.poolSize());
    clock.advance(15 * US); // measures reset at 50 µs
    serve(g, 20, 0);
    clock.advance(25 * US); // t = 80 µs: Δin = +10, Δout = +10 → grow
    assertEquals(Decision.GROW, g.lastDecision());
    assertEquals(6, g.poolSize());
    clock.advance(15 * US);
    serve(g, 30, 20);
    clock.advance(25 * US); // t = 120 µs: in 30 (+10), out 10 (−10): line 20, ⌊0.98·6⌋ = 5
    assertEquals(Decision.SHRINK_NO_TREND, g.lastDecision());
    assertEquals(5, g.poolSize());
    assertEquals(3, g.iterations());
  }

  @Test
  void dropsAboveTheCapShrinkThePool() {
    ProtegoServerGate g = gate(paper().withMaxDropRate(0.5), 4);
    clock.advance(15 * US);
    serve(g, 10, 0);
    clock.advance(25 * US);
    assertEquals(5, g.poolSize());
    clock.advance(15 * US);
    serve(g, 40, 21); // out rose 10 → 19, but 21 drops > 0.5·40
    clock.advance(25 * US);
    assertEquals(Decision.SHRINK_DROPS, g.lastDecision());
    assertEquals(4, g.poolSize()); // ⌊0.98·5⌋ = 4, also the floor (parallelism)
  }

  @Test
  void theRttIsMeasuredFromCreditIssueToResponseThroughTheCreditId() {
    ProtegoServerGate g = gate(config(), 4);
    clock.advance(15 * US);
    ServerPermit first = g.admit(new RequestMetadata().sessionId(1)
        .flags(RequestMetadata.FLAG_REGISTER), clock.read());
    ResponseMetadata response = new ResponseMetadata();
    first.complete(Outcome.SUCCESS, clock.read(), response);
    long creditId = response.creditId();
    assertNotEquals(0, creditId);
    clock.advance(7 * US); // the credit travels, the request spends it and is served
    ServerPermit second = g.admit(new RequestMetadata().sessionId(1).creditId(creditId),
        clock.read());
    second.complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata());
    // a stale id (older than maxRtt = SLO = 100 µs) and a request without an id give no sample
    g.admit(new RequestMetadata().sessionId(1).creditId(creditId - 500 * US), clock.read())
        .complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata());
    g.admit(new RequestMetadata().sessionId(1), clock.read())
        .complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata());
    assertEquals(10 * US, g.rttNanos(), "the estimate changes only when an iteration ends");
    clock.advance(18 * US); // t = 40 µs: iteration 1 ends
    // smoothed with gain 1/8: 10 + (7 − 10)/8 = 9.625 µs
    assertEquals(9_625, g.rttNanos());
    // the next iteration follows the new RTT: reset at 49.625 µs, decision at
    // 49.625 + 3·9.625 = 78.5 µs
    clock.advance(38 * US);
    assertEquals(1, g.iterations());
    clock.advance(1 * US);
    assertEquals(2, g.iterations());
  }

  @Test
  void completionIsExactlyOnceAndClosingStopsTheLoop() {
    ProtegoServerGate g = gate(config(), 4);
    ServerPermit p = g.admit(new RequestMetadata().sessionId(1)
        .flags(RequestMetadata.FLAG_REGISTER), clock.read());
    p.complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata());
    assertTrue(p.isCompleted());
    assertThrows(IllegalStateException.class,
        () -> p.complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata()));
    g.close();
    clock.advance(1_000 * US);
    assertEquals(0, g.iterations());
    assertNull(g.lastDecision());
  }

  @Test
  void theClientEchoesTheLatestCreditIdAdvancedByTheTimeItWaited() {
    ProtegoClientGate<String> client = new ProtegoClientGate<>(config(),
        new ClientEnvironment(1, 100 * US, OverloadMetrics.NONE));
    client.offer("a", clock.read());
    client.offer("b", clock.read());
    RequestMetadata header = new RequestMetadata();
    assertEquals("a", client.poll(clock.read(), header));
    assertEquals(0, header.creditId(), "the registering request rides on no issued credit");
    assertNull(client.poll(clock.read(), header.reset()));
    client.onResponse(new ResponseMetadata().sessionId(1).creditDelta(1).creditId(42),
        clock.read(), clock.read());
    assertEquals("b", client.poll(clock.read(), header.reset()));
    assertEquals(42, header.creditId(), "spent at once: the id as it came");
    clock.advance(5 * US);
    client.offer("c", clock.read());
    assertEquals("c", client.poll(clock.read(), header.reset()));
    assertEquals(42 + 5 * US, header.creditId(), "the credit waited 5 µs here");
    client.onControl(new ResponseMetadata().sessionId(1).creditDelta(1), clock.read());
    client.offer("d", clock.read());
    assertEquals("d", client.poll(clock.read(), header.reset()));
    assertEquals(0, header.creditId(), "explicit credits carry no id: no sample");
  }

  @Test
  void aCreditThatWaitedAtAnIdleClientMeasuresNoIdleTime() {
    ProtegoServerGate g = gate(config(), 4);
    ProtegoClientGate<String> client = new ProtegoClientGate<>(config(),
        new ClientEnvironment(1, 100 * US, OverloadMetrics.NONE));
    RequestMetadata header = new RequestMetadata();
    client.offer("a", clock.read());
    client.poll(clock.read(), header);
    ServerPermit first = g.admit(header, clock.read());
    ResponseMetadata response = new ResponseMetadata();
    first.complete(Outcome.SUCCESS, clock.read(), response); // t = 0: stamped 0
    clock.advance(5 * US);
    client.onResponse(response, 0, clock.read()); // t = 5: nothing queued, the credit waits
    clock.advance(290 * US); // iterations pass; measures reset at 290 µs
    client.offer("b", clock.read());
    assertEquals("b", client.poll(clock.read(), header.reset())); // t = 295
    clock.advance(5 * US);
    ServerPermit second = g.admit(header, clock.read()); // t = 300
    clock.advance(10 * US);
    second.complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata()); // t = 310
    assertEquals(10 * US, g.rttNanos());
    clock.advance(10 * US); // t = 320: the iteration ends on one sample of 310 − 290 = 20 µs,
    // not 310 (which, above maxRtt = 100 µs, would have been discarded)
    assertEquals(10 * US + (20 * US - 10 * US) / 8, g.rttNanos());
  }

  @Test
  void withTheClientEchoingIdsTheEstimateIsTheCreditToResponseTime() {
    // One always-busy session; 5 µs each way, 10 µs of service. A credit stamped when a response
    // leaves the server at T reaches the client at T + 5, is spent at once, the request arrives at
    // T + 10 and is answered at T + 20: every sample is 20 µs, the network RTT alone is 10.
    long half = 5 * US;
    long service = 10 * US;
    @SuppressWarnings("unchecked")
    ProtegoClientGate<Integer>[] client = new ProtegoClientGate[1];
    ProtegoServerGate[] server = new ProtegoServerGate[1];
    Runnable[] send = new Runnable[1];
    send[0] = () -> {
      RequestMetadata header = new RequestMetadata();
      while (client[0].poll(clock.read(), header) != null) {
        RequestMetadata copy = new RequestMetadata().sessionId(header.sessionId())
            .demand(header.demand()).flags(header.flags()).creditId(header.creditId());
        header.reset();
        clock.schedule(() -> {
          ServerPermit permit = server[0].admit(copy, clock.read());
          clock.schedule(() -> {
            ResponseMetadata response = new ResponseMetadata();
            permit.complete(permit.isAdmitted() ? Outcome.SUCCESS : Outcome.DROPPED, clock.read(),
                response);
            clock.schedule(() -> {
              client[0].onResponse(response, 0, clock.read());
              client[0].offer(0, clock.read());
              send[0].run();
            }, half);
          }, service);
        }, half);
      }
    };
    server[0] = new ProtegoServerGate(config(), new ServerEnvironment(clock, clock, now -> 0,
        (session, delta) -> clock.schedule(() -> {
          client[0].onControl(new ResponseMetadata().sessionId(session).creditDelta(delta),
              clock.read());
          send[0].run();
        }, half), OverloadMetrics.NONE, 4));
    client[0] = new ProtegoClientGate<>(config(),
        new ClientEnvironment(1, 100 * US, OverloadMetrics.NONE));
    server[0].start();
    for (int i = 0; i < 8; i++) {
      client[0].offer(i, clock.read());
    }
    send[0].run();
    assertEquals(10 * US, server[0].rttNanos());
    clock.advance(40 * US); // the first iteration ends: 10 + (20 − 10)/8
    assertEquals(1, server[0].iterations());
    assertEquals(11_250, server[0].rttNanos());
    clock.advance(10_000 * US); // the smoothed estimate converges (to within 8 ns, integer steps)
    assertTrue(server[0].rttNanos() > 20 * US - 8 && server[0].rttNanos() <= 20 * US,
        "rtt " + server[0].rttNanos());
    assertTrue(server[0].poolSize() >= 4, "pool " + server[0].poolSize());
  }

  @Test
  void aFloodIsHeldToTheSessionsWindow() {
    ProtegoServerGate g = gate(config(), 4); // a pool of 40, one session
    // the registering request says 50 are queued: its answer grants the whole pool
    g.admit(new RequestMetadata().sessionId(1).demand(50).flags(RequestMetadata.FLAG_REGISTER),
        clock.read()).complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata());
    int admitted = 0;
    List<ServerPermit> held = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      ServerPermit p = g.admit(new RequestMetadata().sessionId(1), clock.read());
      if (p.isAdmitted()) {
        admitted++;
        held.add(p);
      } else {
        assertEquals(Status.REJECTED_NO_CREDIT, p.status());
        assertEquals(admitted, g.windowOf(1), "refused only with its whole window in flight");
        p.complete(Outcome.DROPPED, clock.read(), new ResponseMetadata());
      }
    }
    // the flood never has more in flight than that, and its refusals earn it nothing
    assertEquals(40, admitted);
    assertEquals(40, g.windowOf(1));
    held.forEach(p -> p.complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata()));
  }
}
