package io.spillway.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.ControlChannel;
import io.spillway.api.Outcome;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.ServerPermit;
import io.spillway.api.Status;
import io.spillway.api.testing.VirtualClock;
import io.spillway.price.Rajomon;
import io.spillway.price.RajomonConfig;
import io.spillway.price.RajomonServerGate;
import org.junit.jupiter.api.Test;

/** What a gate reports reaches the endpoint's stats, which the meters and the Actuator read. */
class GateStatsTest {

  private static final long US = 1_000;

  @Test
  void aPriceSchemesOwnPriceReachesTheStatsAndTheSnapshot() {
    VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 1_000 * US);
    long[] delay = {0};
    GateStats stats = new GateStats("default");
    RajomonConfig config = RajomonConfig.forSlo(200 * US, 10 * US);
    ServerGate gate = Rajomon.of(config).newServerGate(new ServerEnvironment(clock, clock,
        now -> delay[0], ControlChannel.DISCARD, stats, 4));
    gate.start();
    assertEquals(0, stats.price(), "no price before the queue grows");
    delay[0] = 1_000 * US; // far over the threshold: the price rises every update
    for (int i = 0; i < 10; i++) {
      // a request richer than any price keeps the price's ceiling out of the way
      ServerPermit p = gate.admit(new RequestMetadata().sessionId(1).tokens(1L << 40), clock.read());
      p.complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata());
      clock.advance(config.priceUpdateIntervalNanos());
    }
    long price = ((RajomonServerGate) gate).localPrice();
    assertTrue(price > 0, "the price rose: " + price);
    assertEquals(price, stats.price());
    assertEquals(price, stats.snapshot().get("price"));
    ServerPermit poor = gate.admit(new RequestMetadata().sessionId(2).tokens(0), clock.read());
    poor.complete(Outcome.DROPPED, clock.read(), new ResponseMetadata());
    assertEquals(1, stats.decisions(Status.REJECTED_PRICE), "a request below the price is refused");
    gate.close();
  }

  @Test
  void theDefaultSchemesPoolAndPlainClientsLimitLandInTheirOwnReadings() {
    VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 1_000 * US);
    GateStats stats = new GateStats("default");
    ServerGate gate = io.spillway.credit.Spillway.forSloNanos(1_000 * US).newServerGate(
        new ServerEnvironment(clock, clock, now -> 0, ControlChannel.DISCARD, stats, 4));
    gate.start();
    ServerPermit session = gate.admit(new RequestMetadata().sessionId(7), clock.read());
    session.complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata());
    ServerPermit plain = gate.admit(new RequestMetadata(), clock.read()); // admitted, never started: it waits
    // 150 ms: the pool is reported from the first control period (1 ms) on; the limit, which plain
    // admissions update, by its idle timer every hundred periods
    for (int i = 0; i < 1_500; i++) {
      clock.advance(100 * US);
      if (stats.creditPool() > 0) {
        assertEquals(1, stats.sessions(), "the limit's reports never count as the pool's");
        assertTrue(stats.creditsIssued() >= 2, "issued " + stats.creditsIssued());
      }
      if (stats.concurrencyLimit() > 0) {
        assertEquals(1, stats.limitWaiting(), "the pool's reports never count as the limit's");
      }
    }
    assertTrue(stats.creditPool() >= 4, "pool " + stats.creditPool());
    assertTrue(stats.creditsIssued() >= 1, "issued " + stats.creditsIssued());
    assertTrue(stats.concurrencyLimit() >= 4, "limit " + stats.concurrencyLimit());
    assertEquals(1, stats.limitWaiting());
    assertEquals(1L, stats.snapshot().get("limitWaiting"));
    plain.complete(Outcome.SUCCESS, clock.read(), new ResponseMetadata());
    gate.close();
  }
}
