package io.spillway.peers;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.Outcome;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerPermit;
import io.spillway.api.Status;
import io.spillway.api.testing.VirtualClock;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The adapter's accounting: slots taken and returned exactly once, the limit enforced and fed. */
class ConcurrencyLimitServerGateTest {

  private static final long US = 1_000;
  /** Near wrap-around, so any comparison of raw readings would show. */
  private final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 5 * US);

  private ConcurrencyLimitServerGate gate(NetflixLimitConfig config) {
    return new ConcurrencyLimitServerGate(config, new ServerEnvironment(clock, clock,
        QueueDelaySignal.NONE, (session, delta) -> { }, OverloadMetrics.NONE, 4));
  }

  private ServerPermit admit(ConcurrencyLimitServerGate gate) {
    return gate.admit(new RequestMetadata().sessionId(1), clock.read());
  }

  private List<ServerPermit> admitAll(ConcurrencyLimitServerGate gate, int n) {
    List<ServerPermit> permits = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      permits.add(admit(gate));
    }
    return permits;
  }

  private void complete(ServerPermit permit, Outcome outcome) {
    permit.complete(outcome, clock.read(), new ResponseMetadata());
  }

  @Test
  void admitsUpToTheLimitThenRejectsFast() {
    ConcurrencyLimitServerGate gate = gate(AimdConfig.defaults());
    List<ServerPermit> permits = admitAll(gate, 20);
    assertTrue(permits.stream().allMatch(ServerPermit::isAdmitted));
    assertEquals(20, gate.inFlight());

    ServerPermit over = admit(gate);
    assertFalse(over.isAdmitted());
    assertEquals(Status.REJECTED_LIMIT, over.status());
    assertEquals(20, gate.inFlight(), "a reject holds no slot");
    assertThrows(IllegalArgumentException.class, () -> complete(over, Outcome.SUCCESS));
    ResponseMetadata response = new ResponseMetadata();
    over.complete(Outcome.DROPPED, clock.read(), response);
    assertEquals(Status.REJECTED_LIMIT, response.status());
    assertEquals(20, gate.inFlight());
  }

  @Test
  void completionReturnsTheSlotExactlyOnce() {
    ConcurrencyLimitServerGate gate = gate(AimdConfig.defaults());
    List<ServerPermit> permits = admitAll(gate, 20);
    clock.advance(10 * US);
    complete(permits.get(0), Outcome.SUCCESS);
    assertEquals(19, gate.inFlight());
    assertThrows(IllegalStateException.class, () -> complete(permits.get(0), Outcome.SUCCESS));
    assertEquals(19, gate.inFlight(), "a second completion must not return a second slot");
    assertTrue(admit(gate).isAdmitted(), "the returned slot is free again");
    for (ServerPermit p : permits.subList(1, 20)) {
      complete(p, Outcome.SUCCESS);
    }
    assertEquals(1, gate.inFlight());
  }

  @Test
  void aDropShrinksTheAimdLimitByItsBackoff() {
    ConcurrencyLimitServerGate gate = gate(AimdConfig.defaults().withLimits(30, 20, 200));
    ServerPermit permit = admit(gate);
    clock.advance(10 * US);
    complete(permit, Outcome.DROPPED);
    assertEquals(27, gate.limit(), "30 · 0.9");
    assertEquals(0, gate.inFlight());
  }

  @Test
  void aTimeoutCountsAsADropAndAFailureIsIgnored() {
    ConcurrencyLimitServerGate gate = gate(AimdConfig.defaults().withLimits(30, 20, 200)
        .withTimeout(100 * US));
    ServerPermit failed = admit(gate);
    clock.advance(500 * US); // late, but a failure feeds no sample (onIgnore)
    complete(failed, Outcome.FAILED);
    assertEquals(30, gate.limit());
    ServerPermit timedOut = admit(gate);
    clock.advance(10 * US);
    complete(timedOut, Outcome.TIMED_OUT);
    assertEquals(27, gate.limit());
    assertEquals(0, gate.inFlight());
  }

  @Test
  void aLateSuccessShrinksAndABusyFastOneGrowsTheAimdLimit() {
    ConcurrencyLimitServerGate gate = gate(AimdConfig.defaults().withLimits(30, 20, 200)
        .withTimeout(100 * US));
    List<ServerPermit> permits = admitAll(gate, 20);
    clock.advance(10 * US);
    complete(permits.get(0), Outcome.SUCCESS); // admitted with 1 in flight: below half the limit
    assertEquals(30, gate.limit(), "no growth while under half the limit is in use");
    complete(permits.get(19), Outcome.SUCCESS); // admitted with 20 in flight ≥ 30 / 2
    assertEquals(31, gate.limit(), "a fast sample with half the limit in use adds one");
    clock.advance(200 * US);
    complete(permits.get(18), Outcome.SUCCESS);
    assertEquals(27, gate.limit(), "a sample past the timeout backs off: 31 · 0.9");
  }

  @Test
  void vegasAcceptsAZeroLatencySample() {
    ConcurrencyLimitServerGate gate = gate(VegasConfig.defaults());
    ServerPermit permit = admit(gate);
    complete(permit, Outcome.SUCCESS); // same virtual instant: the library would throw on rtt 0
    assertEquals(0, gate.inFlight());
    assertEquals(20, gate.limit());
  }

  /**
   * Vegas's queue estimate is {@code ceil(limit·(1 − rtt_noload/rtt))} against β = 6·max(1,
   * (int) log10(limit)): at 10× the no-load RTT it shrinks by one per sample until the estimate is
   * no longer above 6, i.e. to 6, and grows by β again once latency is back at the no-load RTT.
   */
  @Test
  void vegasShrinksUnderQueueingAndGrowsBack() {
    ConcurrencyLimitServerGate gate = gate(VegasConfig.defaults());
    ServerPermit first = admit(gate);
    clock.advance(10 * US);
    complete(first, Outcome.SUCCESS); // the no-load RTT: 10 µs
    for (int round = 0; round < 30; round++) { // 10× the no-load RTT, the whole limit in use
      List<ServerPermit> batch = admitAll(gate, gate.limit());
      clock.advance(100 * US);
      batch.forEach(p -> complete(p, Outcome.SUCCESS));
    }
    assertEquals(6, gate.limit());
    List<ServerPermit> batch = admitAll(gate, gate.limit());
    clock.advance(10 * US);
    batch.forEach(p -> complete(p, Outcome.SUCCESS));
    assertTrue(gate.limit() > 6, "no queueing: grows by beta, got " + gate.limit());
    assertEquals(0, gate.inFlight());
  }

  @Test
  void gradient2ShrinksWhenLatencyInflates() {
    ConcurrencyLimitServerGate gate = gate(Gradient2Config.defaults().withLimits(100, 1, 200));
    for (int i = 0; i < 50; i++) { // a steady 10 µs long-term RTT
      List<ServerPermit> batch = admitAll(gate, 60);
      clock.advance(10 * US);
      batch.forEach(p -> complete(p, Outcome.SUCCESS));
    }
    int steady = gate.limit();
    for (int i = 0; i < 10; i++) { // then 10× slower, with the whole limit in use
      List<ServerPermit> batch = admitAll(gate, gate.limit());
      clock.advance(100 * US);
      batch.forEach(p -> complete(p, Outcome.SUCCESS));
    }
    assertTrue(gate.limit() < steady, "limit " + gate.limit() + " should fall below " + steady);
    assertEquals(0, gate.inFlight());
  }

  @Test
  void schemesAreNamedForTheirAlgorithm() {
    assertEquals("netflix-gradient2", NetflixConcurrencyLimit.of(Gradient2Config.defaults()).name());
    assertEquals("netflix-vegas", NetflixConcurrencyLimit.of(VegasConfig.defaults()).name());
    assertEquals("netflix-aimd", NetflixConcurrencyLimit.of(AimdConfig.defaults()).name());
    assertThrows(IllegalArgumentException.class, () -> AimdConfig.defaults().withLimits(10, 20, 200));
  }
}
