package io.spillway.spring.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.spillway.api.ControlChannel;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.Status;
import io.spillway.api.testing.VirtualClock;
import io.spillway.credit.Spillway;
import io.spillway.spring.GateStats;
import io.spillway.spring.SpillwayHttpGate;
import io.spillway.spring.SpillwayHttpHeaders;
import io.spillway.spring.SpillwayProperties;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.springframework.mock.web.MockHttpServletRequest;
import org.springframework.mock.web.MockHttpServletResponse;

/**
 * The servlet filter with its run slots, in virtual time: the slots follow the handler's shape, and
 * a request whose budget the slots' queue exceeds is refused (the reject status) before it runs.
 */
class ServletRunSlotsTest {

  private final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 1_000_000_000L);
  /** The handler thread's CPU time, as the scripted scheduler statistics report it. */
  private final AtomicLong cpu = new AtomicLong();
  private final RunQueueDelay runQueue = new RunQueueDelay(clock, into -> {
    into[0] = cpu.get();
    into[1] = 0;
    return true;
  }, 1);
  private final RunSlots slots = new RunSlots(clock, 2, 200);
  private SpillwayHttpGate gate;

  private SpillwayServletFilter filter(long targetBudgetNanos) {
    GateStats stats = new GateStats("default");
    ServerGate g = Spillway.forSlo(Duration.ofMillis(100)).newServerGate(new ServerEnvironment(
        clock, clock, slots, ControlChannel.DISCARD, stats, 2));
    gate = new SpillwayHttpGate(clock, slots,
        new SpillwayHttpGate.Endpoint("default", "/**", true, g, 100_000_000, targetBudgetNanos,
            stats, false),
        List.of(), List.of(), SpillwayProperties.NoBudget.TARGET, false, 1);
    return new SpillwayServletFilter(gate, runQueue, slots, null,
        SpillwayProperties.DEFAULT_REJECT_STATUS);
  }

  /** Serves one request whose handler takes {@code wallNanos}, {@code cpuNanos} of it on a CPU. */
  private MockHttpServletResponse serve(SpillwayServletFilter f, long wallNanos, long cpuNanos)
      throws Exception {
    MockHttpServletResponse response = new MockHttpServletResponse();
    f.doFilter(new MockHttpServletRequest("GET", "/x"), response, (req, res) -> {
      clock.advance(wallNanos);
      cpu.addAndGet(cpuNanos);
    });
    return response;
  }

  @Test
  void slotsFollowTheShareOfItsTimeTheHandlerSpendsOnACpu() throws Exception {
    SpillwayServletFilter f = filter(100_000_000);
    assertEquals(200, slots.slots(), "the container's threads until measured");
    for (int i = 0; i < 40; i++) {
      assertEquals(200, serve(f, 300_000, 300_000).getStatus());
    }
    assertEquals(2, slots.slots(), "CPU-bound: one slot per core");
    for (int i = 0; i < 40; i++) {
      assertEquals(200, serve(f, 10_000_000, 500_000).getStatus());
    }
    assertEquals(40, slots.slots(), "a twentieth on a CPU: twenty requests fill a core");
    assertEquals(0, gate.inFlight());
    assertEquals(0, slots.running());
  }

  @Test
  void aRequestTheSlotsQueueCannotServeWithinItsBudgetIsRefusedBeforeItRuns() throws Exception {
    SpillwayServletFilter f = filter(1_000_000); // a 1 ms budget target
    for (int i = 0; i < 40; i++) {
      serve(f, 300_000, 300_000);
    }
    assertEquals(2, slots.slots());
    // both slots busy, and a request waiting for one since 2 ms ago
    slots.acquire(clock.read(), Long.MAX_VALUE);
    slots.acquire(clock.read(), Long.MAX_VALUE);
    long queuedAt = clock.read();
    Thread waiter = Thread.ofPlatform().start(() -> {
      slots.acquire(queuedAt, Long.MAX_VALUE);
      slots.release();
    });
    long deadline = System.nanoTime() + 30_000_000_000L;
    while (slots.waiting() != 1) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("the waiter never queued");
      }
      Thread.onSpinWait();
    }
    clock.advance(2_000_000);
    boolean[] ran = new boolean[1];
    MockHttpServletResponse response = new MockHttpServletResponse();
    f.doFilter(new MockHttpServletRequest("GET", "/x"), response, (req, res) -> ran[0] = true);
    assertEquals(SpillwayProperties.DEFAULT_REJECT_STATUS, response.getStatus());
    assertEquals(Integer.toString(Status.REJECTED_BUDGET.code()),
        response.getHeader(SpillwayHttpHeaders.STATUS));
    assertEquals(false, ran[0], "refused before the handler");
    assertEquals(1, gate.endpoints().get(0).stats().budgetAborts());
    assertEquals(0, gate.inFlight(), "its permit ended");
    slots.release();
    slots.release();
    waiter.join();
    assertEquals(0, slots.running());
  }
}
