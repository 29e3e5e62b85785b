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
import io.spillway.api.testing.VirtualClock;
import io.spillway.credit.ProtegoPolicy.Decision;
import org.junit.jupiter.api.Test;

/**
 * Protego's gate in virtual time, the clock started just before {@link Long#MAX_VALUE}. With the
 * defaults for a 100 µs SLO and a 10 µs RTT an iteration is: pool set at t, measures reset at
 * t + 10 µs, decision at t + 40 µs.
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
  void anIterationIsFourRttsAndTheFirstIsNotMeasured() {
    ProtegoServerGate g = gate(config(), 4);
    serve(g, 50, 0); // before the measures reset at 10 µs: not counted
    clock.advance(39 * US);
    assertEquals(0, g.iterations());
    clock.advance(1 * US);
    assertEquals(1, g.iterations());
    // nothing measured after the reset: in and out 0 against 0 → line 20, clamped at parallelism
    assertEquals(Decision.SHRINK_NO_TREND, g.lastDecision());
    assertEquals(4, g.poolSize());
  }

  @Test
  void thePoolGrowsWhileThroughputFollowsLoadAndShrinksWhenItStops() {
    ProtegoServerGate g = gate(config(), 4);
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
    ProtegoServerGate g = gate(config().withMaxDropRate(0.5), 4);
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
    assertEquals(7 * US, g.rttNanos());
    // the next iteration follows the new RTT: reset at 47 µs, decision at 47 + 3·7 = 68 µs
    clock.advance(27 * US);
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
  void theClientEchoesTheLatestCreditId() {
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
    assertEquals(42, header.creditId());
    client.onControl(new ResponseMetadata().sessionId(1).creditDelta(1), clock.read());
    client.offer("c", clock.read());
    assertEquals("c", client.poll(clock.read(), header.reset()));
    assertEquals(0, header.creditId(), "explicit credits carry no id: no sample");
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
    clock.advance(40 * US); // the first iteration ends
    assertEquals(1, server[0].iterations());
    assertEquals(20 * US, server[0].rttNanos());
    clock.advance(1_000 * US);
    assertEquals(20 * US, server[0].rttNanos());
    assertTrue(server[0].poolSize() >= 4, "pool " + server[0].poolSize());
  }
}
