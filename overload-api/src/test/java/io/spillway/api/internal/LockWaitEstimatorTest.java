package io.spillway.api.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.spillway.api.LockWaitRule;
import org.junit.jupiter.api.Test;

class LockWaitEstimatorTest {

  @Test
  void beforeAnySampleTheEstimateIsTheOldestWaitersAge() {
    LockWaitEstimator e = new LockWaitEstimator();
    assertEquals(0, e.waitNanos(0, 0));
    assertEquals(5_000, e.waitNanos(5_000, 3));
  }

  /** 2·σ for a 10 µs exponential first sample: 2 · sqrt(π/2) · (2/e) · 10,000 ns. */
  private static final double TWO_SIGMA_10US = 2 * Math.sqrt(Math.PI / 2) * (2 / Math.E) * 10_000;

  @Test
  void firstSampleAssumesExponentialSpread() {
    LockWaitEstimator e = new LockWaitEstimator();
    e.onQueuedAcquire(0, 100_000); // first grant: nothing to measure against
    e.onQueuedAcquire(90_000, 110_000); // waited through the interval 100..110 µs: a 10 µs sample
    assertEquals(10_000.0, e.meanHoldNanos());
    assertEquals(9_221.37, e.holdDeviationNanos(), 0.01); // sqrt(π/2) · 2/e · 10 µs
    assertEquals(18_442.74, TWO_SIGMA_10US, 0.01);
    // 3 waiters: 3·10 µs + 2σ·(sqrt(4) − 1) = 30,000 + 18,442.74 ns.
    assertEquals(48_442, e.waitNanos(20_000, 3));
    // The paper's delay wins when it is larger.
    assertEquals(95_000, e.waitNanos(95_000, 3));
    // 8 waiters: 80,000 + 18,442.74·(sqrt(9) − 1) = 116,885.5 ns.
    assertEquals(116_885, e.waitNanos(0, 8));
    // Nobody waiting: no queue to estimate, the paper's zero.
    assertEquals(0, e.waitNanos(0, 0));
  }

  @Test
  void aThreadThatArrivedAfterThePreviousGrantGivesNoSample() {
    LockWaitEstimator e = new LockWaitEstimator();
    e.onQueuedAcquire(0, 100_000);
    e.onQueuedAcquire(105_000, 300_000); // enqueued after the grant at 100: the lock may have idled
    assertEquals(0.0, e.meanHoldNanos());
    e.onQueuedAcquire(250_000, 310_000); // waited through 300..310: 10 µs
    assertEquals(10_000.0, e.meanHoldNanos());
  }

  @Test
  void laterSamplesAreWeightedOneSixteenth() {
    LockWaitEstimator e = new LockWaitEstimator();
    e.onQueuedAcquire(0, 0);
    e.onQueuedAcquire(0, 10_000); // 10 µs: mean 10, mean absolute deviation 2/e · 10 = 7.3576 µs
    e.onQueuedAcquire(0, 42_000); // 32 µs: mean 10 + (32 − 10)/16 = 11.375 µs
    assertEquals(11_375.0, e.meanHoldNanos(), 1e-6);
    // deviation: 7,357.59 + (|32,000 − 10,000| − 7,357.59)/16 = 8,272.74 ns; σ = × sqrt(π/2)
    assertEquals(8_272.74 * 1.2533141, e.holdDeviationNanos(), 0.02);
  }

  @Test
  void oldestWaiterRuleIsThePapers() {
    LockWaitEstimator e = new LockWaitEstimator(LockWaitRule.OLDEST_WAITER);
    e.onQueuedAcquire(0, 0);
    e.onQueuedAcquire(0, 10_000);
    assertEquals(20_000, e.waitNanos(20_000, 3));
    assertEquals(0, e.waitNanos(0, 9));
  }

  @Test
  void survivesATickerNearWrapAround() {
    LockWaitEstimator e = new LockWaitEstimator();
    long start = Long.MAX_VALUE - 5_000;
    e.onQueuedAcquire(start - 1_000, start);
    e.onQueuedAcquire(start - 500, start + 10_000); // crosses Long.MAX_VALUE: still a 10 µs sample
    assertEquals(10_000.0, e.meanHoldNanos());
  }

  @Test
  void rejectsNullRule() {
    assertThrows(NullPointerException.class, () -> new LockWaitEstimator(null));
  }
}
