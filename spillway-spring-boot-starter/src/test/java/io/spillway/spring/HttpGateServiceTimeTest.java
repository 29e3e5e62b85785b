package io.spillway.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
 * The service time whose p99 is taken from an unbudgeted request's budget target leaves out the
 * time a request queued after admission, for a run slot or a CPU (virtual time).
 */
class HttpGateServiceTimeTest {

  private final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 1_000_000_000L);
  private SpillwayHttpGate gate;

  private SpillwayHttpGate.Admission admit() {
    return gate.admit(gate.endpointFor("/x"), Map.<String, String>of()::get, null);
  }

  /** Serves 400 requests of 2 ms wall time each, reporting {@code cpuWait} for each (or none). */
  private long p99AfterRequests(Long cpuWait) {
    GateStats stats = new GateStats("default");
    ServerGate g = Spillway.forSlo(Duration.ofMillis(10)).newServerGate(new ServerEnvironment(
        clock, clock, now -> 0, ControlChannel.DISCARD, stats, 1));
    gate = new SpillwayHttpGate(clock, now -> 0,
        new SpillwayHttpGate.Endpoint("default", "/**", true, g, 10_000_000, 10_000_000, stats,
            false),
        List.of(), List.of(), SpillwayProperties.NoBudget.TARGET, false, 1);
    for (int i = 0; i < 400; i++) {
      SpillwayHttpGate.Admission a = admit();
      assertTrue(a.isAdmitted());
      clock.advance(2_000_000);
      if (cpuWait != null) {
        a.queuedAfterAdmission(cpuWait);
      }
      a.end(200, null);
    }
    return gate.endpoints().get(0).p99ServiceNanos(clock.read());
  }

  @Test
  void withoutAReportTheWallTimeIsTheServiceTime() {
    long p99 = p99AfterRequests(null);
    // every request took 2 ms; the estimate dithers within one step (a sixteenth) above that
    assertTrue(p99 > 1_000_000 && p99 <= 2_000_000 + 2_000_000 / 16, "p99 " + p99);
    assertEquals(10_000_000 - p99, admit().budget().remainingNanos());
  }

  @Test
  void aMeasuredWaitAfterAdmissionIsQueueingNotService() {
    long p99 = p99AfterRequests(1_800_000L);
    assertTrue(p99 > 50_000 && p99 <= 200_000, "p99 " + p99);
    assertEquals(10_000_000 - p99, admit().budget().remainingNanos());
  }

  @Test
  void requestsWhoseWaitWasNotMeasuredDoNotCount() {
    assertEquals(0, p99AfterRequests(-1L));
    assertEquals(10_000_000, admit().budget().remainingNanos());
  }
}
