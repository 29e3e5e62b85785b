package io.spillway.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.spillway.api.ControlChannel;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.testing.VirtualClock;
import io.spillway.credit.Spillway;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Every refusal ends its permit as dropped, and the meters count it there as well as under its
 * reason: a request the properties refuse for want of a budget ({@code when-absent=reject}) as
 * much as one its gate refuses.
 */
class RefusalMetersTest {

  private final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 1_000_000_000L);
  private final GateStats stats = new GateStats("default");
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

  private SpillwayHttpGate gate(SpillwayProperties.NoBudget noBudget) {
    ServerGate g = Spillway.forSlo(Duration.ofMillis(10)).newServerGate(new ServerEnvironment(
        clock, clock, now -> 0, ControlChannel.DISCARD, stats, 1));
    SpillwayHttpGate gate = new SpillwayHttpGate(clock, now -> 0,
        new SpillwayHttpGate.Endpoint("default", "/**", true, g, 10_000_000, 10_000_000, stats,
            false),
        List.of(), List.of(), noBudget, false, 1);
    new SpillwayMeterBinder(gate).bindTo(registry);
    return gate;
  }

  private double meter(String name, String tag, String value) {
    return registry.get(name).tags("endpoint", "default", tag, value).functionCounter().count();
  }

  @Test
  void aRequestRefusedForWantOfABudgetIsCountedAsDropped() {
    SpillwayHttpGate gate = gate(SpillwayProperties.NoBudget.REJECT);
    SpillwayHttpGate.Admission a = gate.admit(gate.endpointFor("/x"),
        Map.<String, String>of()::get, null);
    assertFalse(a.isAdmitted());
    assertEquals(1, meter("spillway.requests.rejected", "reason", "budget"));
    assertEquals(1, meter("spillway.requests.completed", "outcome", "dropped"));
    assertEquals(0, gate.inFlight());
  }
}
