package io.spillway.spring.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.ControlChannel;
import io.spillway.api.RequestBudget;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.testing.VirtualClock;
import io.spillway.credit.Spillway;
import io.spillway.spring.GateStats;
import io.spillway.spring.SpillwayHttpGate;
import io.spillway.spring.SpillwayProperties;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.mock.web.MockHttpServletRequest;
import org.springframework.mock.web.MockHttpServletResponse;

/**
 * The servlet filter's service time, in virtual time: a request's waits in budgeted locks,
 * semaphores and pools (what it charged to its budget) are queueing, so they stay out of the p99
 * service time that later requests' budgets are set from (protego-nsdi23 §3.2), with or without
 * the run queue measured.
 */
class ServletServiceTimeTest {

  private static final long MS = 1_000_000;
  private final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 1_000_000_000L);
  private final AtomicLong cpu = new AtomicLong();
  private SpillwayHttpGate gate;

  private SpillwayServletFilter filter(boolean runQueueMeasured) {
    RunSlots slots = new RunSlots(clock, 2, 200);
    GateStats stats = new GateStats("default");
    ServerGate g = Spillway.forSlo(Duration.ofMillis(100)).newServerGate(new ServerEnvironment(
        clock, clock, slots, ControlChannel.DISCARD, stats, 2));
    gate = new SpillwayHttpGate(clock, slots,
        new SpillwayHttpGate.Endpoint("default", "/**", true, g, 100 * MS, 20 * MS, stats, false),
        List.of(), List.of(), SpillwayProperties.NoBudget.TARGET, false, 1);
    if (!runQueueMeasured) {
      return new SpillwayServletFilter(gate, null, null, null,
          SpillwayProperties.DEFAULT_REJECT_STATUS);
    }
    RunQueueDelay runQueue = new RunQueueDelay(clock, into -> {
      into[0] = cpu.get();
      into[1] = 0;
      return true;
    }, 1);
    return new SpillwayServletFilter(gate, runQueue, slots, null,
        SpillwayProperties.DEFAULT_REJECT_STATUS);
  }

  /**
   * Serves requests whose handler waits 4 ms for a budgeted lock (charging its budget, as {@code
   * BudgetedLock} does) and then computes for 1 ms; returns the next request's budget.
   */
  private long budgetAfterContendedRequests(SpillwayServletFilter f) throws Exception {
    for (int i = 0; i < 50; i++) {
      MockHttpServletResponse response = new MockHttpServletResponse();
      f.doFilter(new MockHttpServletRequest("GET", "/x"), response, (req, res) -> {
        clock.advance(4 * MS);
        RequestBudget.currentOrNull().charge(4 * MS);
        clock.advance(MS);
        cpu.addAndGet(MS);
      });
      assertEquals(200, response.getStatus());
    }
    long[] budget = new long[1];
    f.doFilter(new MockHttpServletRequest("GET", "/x"), new MockHttpServletResponse(),
        (req, res) -> budget[0] = RequestBudget.currentOrNull().remainingNanos());
    return budget[0];
  }

  @ParameterizedTest(name = "run queue measured: {0}")
  @ValueSource(booleans = {true, false})
  void lockWaitsAreNotServiceTime(boolean runQueueMeasured) throws Exception {
    long budget = budgetAfterContendedRequests(filter(runQueueMeasured));
    long p99 = gate.endpoints().get(0).p99ServiceNanos(clock.read());
    assertTrue(p99 <= MS, "the handler computed for 1 ms and waited 4: p99 " + p99);
    assertTrue(budget >= 19 * MS, "the 20 ms target less a p99 of about 1 ms: " + budget);
  }
}
