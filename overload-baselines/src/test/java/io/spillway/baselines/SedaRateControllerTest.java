package io.spillway.baselines;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.ClientEnvironment;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.Status;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;

/**
 * SEDA's controller (Welsh and Culler §4.2, with breakwater-osdi20 §5.1's p99, 1 ms timeout, adj_i =
 * 40, adj_d = 1.04, target 80 µs) and its token bucket, with literal numbers.
 */
class SedaRateControllerTest {

  private static final long US = 1_000;
  private static final long MS = 1_000_000;
  private static final long TARGET = 80 * US;

  @Test
  void percentileIsTheNearestRank() {
    assertEquals(99, SedaRateController.percentile99(LongStream.rangeClosed(1, 100).toArray(), 100));
    assertEquals(10, SedaRateController.percentile99(new long[] {3, 10, 1, 2, 4, 5, 6, 7, 8, 9}, 10));
    assertEquals(42, SedaRateController.percentile99(new long[] {42}, 1));
  }

  @Test
  void theFilterKeepsSeventyPercentOfThePast() {
    assertEquals(30.0, SedaRateController.smooth(0, 100), 1e-9);
    assertEquals(130.0, SedaRateController.smooth(100, 200), 1e-9);
  }

  @Test
  void aboveTargetTheRateIsDividedByAdjD() {
    // cur 120 µs: err = +0.5 > err_d = 0
    assertEquals(1_000.0, SedaRateController.nextRate(1_040, 120 * US, TARGET, 40, 1.04, 2), 1e-9);
    assertEquals(2.0, SedaRateController.nextRate(2, 120 * US, TARGET, 40, 1.04, 2), 1e-9);
  }

  @Test
  void farBelowTargetTheRateGrowsByTheScaledAdjI() {
    // cur 20 µs: err = −0.75 < err_i = −0.5; increase −(err − c_i)·adj_i = 0.65 · 40 = 26
    assertEquals(1_026.0, SedaRateController.nextRate(1_000, 20 * US, TARGET, 40, 1.04, 2), 1e-9);
    // cur 0: err = −1, increase 0.9 · 40 = 36
    assertEquals(1_036.0, SedaRateController.nextRate(1_000, 0, TARGET, 40, 1.04, 2), 1e-9);
  }

  @Test
  void inTheDeadBandTheRateHolds() {
    // cur 60 µs: err = −0.25, between err_i and err_d
    assertEquals(1_000.0, SedaRateController.nextRate(1_000, 60 * US, TARGET, 40, 1.04, 2), 1e-9);
    assertEquals(1_000.0, SedaRateController.nextRate(1_000, 80 * US, TARGET, 40, 1.04, 2), 1e-9);
  }

  @Test
  void theControllerRunsOnTheFirstResponseThenEveryNreqOrTimeout() {
    SedaRateController c = new SedaRateController(TARGET, MS, 100, 40, 1.04, 2, 1_000);
    assertTrue(c.onResponse(20 * US, 0));                 // first: cur = 6 µs, err −0.925 → +32.999..
    assertEquals(6_000.0, c.smoothedNanos(), 1e-9);
    assertEquals(1_000 + 0.825 * 40, c.rate(), 1e-9);
    for (int i = 1; i < 100; i++) {
      assertFalse(c.onResponse(20 * US, i * US));
    }
    assertTrue(c.onResponse(500 * US, 100 * US));         // the 100th sample: p99 = 20 µs
    assertEquals(0.7 * 6_000 + 0.3 * 20_000, c.smoothedNanos(), 1e-9);
    assertFalse(c.onResponse(500 * US, 100 * US + MS - 1));
    assertTrue(c.onResponse(500 * US, 100 * US + MS));    // timeout: p99 of 2 samples = 500 µs
    assertEquals(0.7 * 10_200 + 0.3 * 500_000, c.smoothedNanos(), 1e-9);
  }

  @Test
  void theBucketReleasesABurstThenOneTokenPerPeriod() {
    long origin = Long.MAX_VALUE - MS; // wraps during the test
    TokenBucket b = new TokenBucket(1_000, 4, 4, origin);   // one token per ms
    for (int i = 0; i < 4; i++) {
      assertTrue(b.tryTake(origin));
    }
    assertFalse(b.tryTake(origin));
    assertEquals(origin + MS + 1, b.nextTokenNanos());
    assertFalse(b.tryTake(origin + MS - 1));
    assertTrue(b.tryTake(origin + MS + 1));
    b.setRate(2_000, origin + 2 * MS);                     // one token accrued at the old rate
    assertEquals(1.0, b.tokens(), 1e-6);
    assertTrue(b.tryTake(origin + 2 * MS + 1));
    assertTrue(b.tryTake(origin + 2 * MS + MS / 2 + 2));
    assertEquals(0.0, b.tokens(), 1e-3);
  }

  @Test
  void theGateWaitsForTokensAndIgnoresRejects() {
    SedaConfig config = SedaConfig.forSlo(200 * US, 1_000).withInitialRate(2.0).withBurst(1);
    SedaClientGate<String> gate = new SedaClientGate<>(config,
        new ClientEnvironment(3, 200 * US, OverloadMetrics.NONE));
    RequestMetadata header = new RequestMetadata();
    gate.offer("a", 0);
    gate.offer("b", 0);
    assertNotNull(gate.poll(0, header));
    assertEquals(3, header.sessionId());
    assertNull(gate.poll(0, header), "one token, 2 req/s");
    assertEquals(100 * US, gate.nextWakeupNanos(), "the expiry comes before the next token");
    gate.onResponse(new ResponseMetadata().status(Status.REJECTED_LIMIT), 0, 10 * US);
    assertEquals(2.0, gate.rate(), 1e-9, "a reject is no sample");
    gate.onResponse(new ResponseMetadata().status(Status.OK), 0, 20 * US);
    assertTrue(gate.rate() > 2.0, "a fast response raises the rate: " + gate.rate());
  }
}
