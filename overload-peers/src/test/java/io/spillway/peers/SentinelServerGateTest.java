package io.spillway.peers;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.alibaba.csp.sentinel.Constants;
import com.alibaba.csp.sentinel.slots.system.SystemRuleManager;
import io.spillway.api.Outcome;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerPermit;
import io.spillway.api.Status;
import io.spillway.api.testing.LeakCheckingServerGate;
import io.spillway.api.testing.VirtualClock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The Sentinel gate against the real Sentinel: entries entered and exited exactly once, the system
 * rule's load trigger and BBR estimate deciding refusals, one gate per JVM.
 *
 * <p>Sentinel cannot be driven in virtual time: its statistics windows follow its own millisecond
 * wall clock and its thread samples the system load once a second. So these tests assert what holds
 * whatever the clock does: the in-flight count Sentinel keeps (exact), and the BBR rule's bounds
 * read from Sentinel's own statistics just before and just after the refusal. The one wait, for
 * Sentinel's first load reading, polls that condition with a deadline.
 */
class SentinelServerGateTest {

  /** A load trigger no machine reaches: admission is then decided by nothing but the gate's accounting. */
  private static final SentinelSystemConfig NEVER_TRIPS = SentinelSystemConfig.forCores(1)
      .withHighestSystemLoad(1e9);

  private final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 1_000);
  private final List<SentinelServerGate> opened = new ArrayList<>();

  @AfterEach
  void closeGates() {
    opened.forEach(SentinelServerGate::close);
  }

  private SentinelServerGate open(SentinelSystemConfig config) {
    SentinelServerGate gate = new SentinelServerGate(config, new ServerEnvironment(clock, clock,
        QueueDelaySignal.NONE, (session, delta) -> { }, OverloadMetrics.NONE, 1));
    opened.add(gate);
    return gate;
  }

  private ServerPermit admit(LeakCheckingServerGate gate) {
    return gate.admit(new RequestMetadata().sessionId(1), clock.read());
  }

  private void complete(ServerPermit permit, Outcome outcome) {
    permit.complete(outcome, clock.read(), new ResponseMetadata());
  }

  /** Inbound entries in flight in this JVM, as Sentinel counts them. */
  private static int inFlight() {
    return Constants.ENTRY_NODE.curThreadNum();
  }

  /** Sentinel's estimate of the in-flight count the server sustains: maxSuccessQps · minRt / 1000. */
  private static double bbrEstimate() {
    return Constants.ENTRY_NODE.maxSuccessQps() * Constants.ENTRY_NODE.minRt() / 1000;
  }

  @Test
  void documentedDefaultsAdmitEveryRequestUnderLightLoad() {
    SentinelServerGate sentinel = open(SentinelSystemConfig.defaults());
    LeakCheckingServerGate gate = new LeakCheckingServerGate(sentinel);
    assertEquals(1, SystemRuleManager.getRules().size());
    assertEquals(2.5 * Runtime.getRuntime().availableProcessors(), SystemRuleManager.getSystemLoadThreshold());
    int before = inFlight();
    // One request at a time: the BBR check never refuses the first request in flight, whatever
    // the machine's load, so light load is admitted in full.
    for (int i = 0; i < 2_000; i++) {
      ServerPermit permit = admit(gate);
      assertTrue(permit.isAdmitted(), "request " + i + " refused: " + sentinel.refusals());
      assertEquals(before + 1, inFlight(), "an admitted request holds one Sentinel entry");
      complete(permit, Outcome.SUCCESS);
      assertEquals(before, inFlight(), "completing exits the entry");
    }
    assertEquals(2_000, sentinel.admitted());
    assertEquals(Map.of(), sentinel.refusals());
    gate.assertNoLeaks();
  }

  @Test
  void everyOutcomeExitsItsEntryOnceAndAFailureIsTraced() {
    SentinelServerGate sentinel = open(NEVER_TRIPS);
    LeakCheckingServerGate gate = new LeakCheckingServerGate(sentinel);
    int before = inFlight();
    long exceptionsBefore = Constants.ENTRY_NODE.totalException();
    List<ServerPermit> permits = new ArrayList<>();
    for (int i = 0; i < Outcome.values().length; i++) {
      permits.add(admit(gate));
    }
    assertTrue(permits.stream().allMatch(ServerPermit::isAdmitted));
    assertEquals(before + permits.size(), inFlight());
    for (int i = 0; i < permits.size(); i++) {
      complete(permits.get(i), Outcome.values()[i]);
      assertEquals(before + permits.size() - i - 1, inFlight(), "after completing with " + Outcome.values()[i]);
    }
    assertEquals(1, Constants.ENTRY_NODE.totalException() - exceptionsBefore, "the FAILED one is traced");
    gate.assertNoLeaks();

    ServerPermit once = sentinel.admit(new RequestMetadata(), clock.read()); // unwrapped: the checker flags a retry
    complete(once, Outcome.SUCCESS);
    assertThrows(IllegalStateException.class, () -> complete(once, Outcome.SUCCESS));
    assertEquals(before, inFlight(), "a second completion exits nothing");
  }

  /**
   * With the load trigger armed (threshold 0: any load), Sentinel refuses once more than one request
   * is in flight and more than maxSuccessQps · minRt / 1000: the refusal comes at n in flight with
   * estimate(after) < n ≤ max(2, estimate(before) + 1), since nothing completes while the requests
   * pile up, so the estimate can only fall. The statistics are driven first with 20,000 requests
   * served one at a time, so the estimate is many requests, not the trivial one.
   */
  @Test
  void refusesOnceTheLoadRuleTripsAndInFlightPassesTheBbrEstimate() {
    SentinelServerGate sentinel = open(SentinelSystemConfig.forCores(1).withHighestSystemLoad(0.0));
    LeakCheckingServerGate gate = new LeakCheckingServerGate(sentinel);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!(SystemRuleManager.getCurrentSystemAvgLoad() > 0) && System.nanoTime() - deadline < 0) {
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10)); // Sentinel samples once a second
    }
    assertTrue(SystemRuleManager.getCurrentSystemAvgLoad() > 0,
        "Sentinel read no system load above 0 in 10 s: " + SystemRuleManager.getCurrentSystemAvgLoad());
    int before = inFlight();

    for (int i = 0; i < 20_000; i++) { // one at a time: never refused, as above
      ServerPermit permit = admit(gate);
      assertTrue(permit.isAdmitted(), "request " + i + " refused with one in flight: " + sentinel.refusals());
      complete(permit, Outcome.SUCCESS);
    }
    double estimateBefore = bbrEstimate();
    List<ServerPermit> held = new ArrayList<>();
    ServerPermit refused = null;
    while (refused == null && held.size() < 1_000_000) {
      ServerPermit permit = admit(gate);
      if (permit.isAdmitted()) {
        held.add(permit);
      } else {
        refused = permit;
      }
    }
    double estimateAfter = bbrEstimate();
    String seen = "refused with " + held.size() + " in flight; Sentinel's estimate " + estimateBefore
        + " before, " + estimateAfter + " after (maxSuccessQps " + Constants.ENTRY_NODE.maxSuccessQps()
        + ", minRt " + Constants.ENTRY_NODE.minRt() + " ms)";
    System.out.println(getClass().getSimpleName() + ": " + seen);
    assertTrue(refused != null, "never refused: " + seen);
    assertEquals(Status.REJECTED_LIMIT, refused.status());
    assertEquals(Map.of("load", 1L), sentinel.refusals());
    int n = held.size();
    assertTrue(estimateBefore >= 2, "20,000 requests served should be visible in the last second: " + seen);
    assertTrue(n > estimateAfter && n >= 2, seen);
    assertTrue(n <= Math.max(2, Math.floor(estimateBefore) + 1), seen);
    assertEquals(before + n, inFlight(), "a refused request holds no entry");
    complete(refused, Outcome.DROPPED);
    assertEquals(before + n, inFlight(), "and its completion exits nothing");
    for (ServerPermit permit : held) {
      complete(permit, Outcome.SUCCESS);
    }
    assertEquals(before, inFlight());
    ServerPermit again = admit(gate);
    assertTrue(again.isAdmitted(), "with nothing in flight the BBR check admits again");
    complete(again, Outcome.SUCCESS);
    gate.assertNoLeaks();
  }

  @Test
  void aJvmRunsOneSentinelGateAtATime() {
    SentinelServerGate first = open(NEVER_TRIPS);
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> open(NEVER_TRIPS));
    assertTrue(e.getMessage().contains("one Sentinel gate at a time"), e.getMessage());
    first.close();
    assertTrue(SystemRuleManager.getRules().isEmpty(), "closing clears the system rule");
    first.close(); // idempotent: does not free another gate's slot
    SentinelServerGate second = open(NEVER_TRIPS);
    first.close();
    assertThrows(IllegalStateException.class, () -> open(NEVER_TRIPS), "the second still owns Sentinel");
    second.close();
    assertTrue(SystemRuleManager.getRules().isEmpty());
  }

  @Test
  void configRefusesThresholdsSentinelWouldIgnore() {
    assertThrows(IllegalArgumentException.class, () -> new SentinelSystemConfig(-2, SentinelSystemConfig.OFF));
    assertThrows(IllegalArgumentException.class, () -> new SentinelSystemConfig(SentinelSystemConfig.OFF, 1.5));
    assertThrows(IllegalArgumentException.class,
        () -> new SentinelSystemConfig(SentinelSystemConfig.OFF, SentinelSystemConfig.OFF));
    assertEquals(new SentinelSystemConfig(5.0, SentinelSystemConfig.OFF), SentinelSystemConfig.forCores(2));
    assertEquals("sentinel", SentinelSystemProtection.defaults().name());
  }
}
