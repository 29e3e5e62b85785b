package io.spillway.spring.internal;

import io.spillway.api.ControlChannel;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.testing.VirtualClock;
import io.spillway.credit.Spillway;
import io.spillway.spring.GateStats;
import io.spillway.spring.SpillwayHttpGate;
import io.spillway.spring.SpillwayProperties;
import java.time.Duration;
import java.util.List;

/**
 * The servlet filter on one endpoint ({@code /**}) with the default scheme for a 100 ms SLO, its
 * clock virtual (near {@code Long.MAX_VALUE}, to cross the wrap) and its outcomes counted.
 */
final class VirtualTimeServletFilter {

  static final long MS = 1_000_000;
  final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 1_000_000_000L);
  final GateStats stats = new GateStats("default");
  final SpillwayHttpGate gate;
  final SpillwayServletFilter filter;

  VirtualTimeServletFilter() {
    ServerGate g = Spillway.forSlo(Duration.ofMillis(100)).newServerGate(new ServerEnvironment(
        clock, clock, QueueDelaySignal.NONE, ControlChannel.DISCARD, stats, 2));
    gate = new SpillwayHttpGate(clock, QueueDelaySignal.NONE,
        new SpillwayHttpGate.Endpoint("default", "/**", true, g, 100 * MS, 20 * MS, stats, true),
        List.of(), List.of(), SpillwayProperties.NoBudget.UNLIMITED, false, 1);
    filter = new SpillwayServletFilter(gate, null, null, null,
        SpillwayProperties.DEFAULT_REJECT_STATUS);
  }
}
