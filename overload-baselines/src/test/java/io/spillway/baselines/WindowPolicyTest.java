package io.spillway.baselines;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.spillway.api.ClientEnvironment;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.Status;
import org.junit.jupiter.api.Test;

/** The window's AIMD (breakwater-osdi20 §2.2) with literal numbers, and its client gate. */
class WindowPolicyTest {

  private static final long US = 1_000;

  @Test
  void goodResponsesGrowTheWindowByAiPerWindow() {
    assertEquals(2.0, WindowPolicy.increase(1.0, 1.0, 64), 1e-12);
    assertEquals(4.25, WindowPolicy.increase(4.0, 1.0, 64), 1e-12);
    assertEquals(4.5, WindowPolicy.increase(4.0, 2.0, 64), 1e-12);
    assertEquals(64.0, WindowPolicy.increase(64.0, 1.0, 64), 1e-12);
  }

  @Test
  void lateResponsesShrinkItMultiplicativelyButNotBelowOne() {
    assertEquals(5.0, WindowPolicy.decrease(10.0, 0.5), 1e-12);
    assertEquals(8.0, WindowPolicy.decrease(10.0, 0.8), 1e-12);
    assertEquals(1.0, WindowPolicy.decrease(1.5, 0.5), 1e-12);
    assertEquals(1.0, WindowPolicy.decrease(1.0, 0.5), 1e-12);
  }

  @Test
  void aWindowAlwaysHasOneSlot() {
    assertEquals(1, WindowPolicy.slots(1.0));
    assertEquals(1, WindowPolicy.slots(1.99));
    assertEquals(2, WindowPolicy.slots(2.9));
  }

  @Test
  void theGateSendsUpToTheWindowAndDecreasesOncePerEpisode() {
    WindowConfig config = WindowConfig.forSlo(200 * US);   // ai 1, md 0.5, late after 200 µs
    WindowClientGate<String> gate = new WindowClientGate<>(config,
        new ClientEnvironment(7, 200 * US, OverloadMetrics.NONE));
    RequestMetadata header = new RequestMetadata();
    for (int i = 0; i < 5; i++) {
      gate.offer("r" + i, 0);
    }
    assertNotNull(gate.poll(0, header));
    assertEquals(7, header.sessionId());
    assertNull(gate.poll(0, header), "window 1: one in flight");
    ResponseMetadata ok = new ResponseMetadata().status(Status.OK);
    gate.onResponse(ok, 0, 20 * US);                        // good: w = 1 + 1/1 = 2
    assertEquals(2.0, gate.window(), 1e-12);
    assertNotNull(gate.poll(20 * US, header));
    assertNotNull(gate.poll(20 * US, header));
    assertNull(gate.poll(20 * US, header));
    gate.onResponse(ok, 20 * US, 300 * US);                 // late (280 µs): w = 1
    assertEquals(1.0, gate.window(), 1e-12);
    gate.onResponse(ok, 20 * US, 310 * US);                 // late, but sent before the decrease
    assertEquals(1.0, gate.window(), 1e-12);
    assertEquals(0, gate.inFlight());
    assertEquals(2, gate.queued());
    assertEquals(100 * US, gate.nextWakeupNanos());         // oldest queued at 0 expires at SLO/2
    assertEquals(2, gate.expire(100 * US, r -> { }));
  }
}
