package io.spillway.threading;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.testing.VirtualClock;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * µTune's load detector (mutune-osdi18 §4, "Runtime adaptation", steps 2–3) against known arrival
 * rates, read every millisecond, as the adaptation reads it under load ({@link ThreadingAdaptation#of}),
 * in virtual time near {@link Long#MAX_VALUE}. The rates are the socket sweep's range: 100/s, 1,000/s
 * and the 22,000/s offered under Breakwater.
 */
class ArrivalRateEstimatorTest {

  private static final long SEED = Long.getLong("spillway.test.seed", 2026L);
  private static final long TICK = 1_000_000L;

  @ParameterizedTest
  @ValueSource(doubles = {100, 1_000, 22_000})
  void aConstantRateIsReadWithinThreePercentAtEveryTick(double rps) {
    VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 500_000_000L); // wraps during the run
    ArrivalRateEstimator a = new ArrivalRateEstimator(5, 9);
    Ticks ticks = new Ticks(clock, a, 2_000_000_000L);
    clock.every(TICK, ticks);
    double gap = 1e9 / rps;
    double due = 0; // exact arrival times, so the stream's rate is rps to the nanosecond
    for (int i = 0; i < rps * 4; i++) {
      due += gap;
      clock.advance(Math.round(due) - clock.elapsed());
      a.record(clock.read());
    }
    assertTrue(ticks.count > 1_000, "ticks read: " + ticks.count);
    // The span runs to the tick, not to the youngest arrival (so that a silence lowers the
    // estimate): a tick just before an arrival reads one gap more time, about 1/46 of the span of
    // 9 five-arrival windows at 100 and 1,000/s (97.8 % of the rate), less at 22,000/s where the
    // tick, not the window, closes each mark.
    assertEquals(rps, ticks.min, rps * 0.03, "lowest estimate at " + rps + "/s");
    assertEquals(rps, ticks.max, rps * 0.03, "highest estimate at " + rps + "/s");
  }

  @ParameterizedTest
  @ValueSource(doubles = {100, 1_000, 22_000})
  void aPoissonRateIsReadWithinThreePercentOnAverage(double rps) {
    VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 500_000_000L);
    ArrivalRateEstimator a = new ArrivalRateEstimator(5, 9);
    Ticks ticks = new Ticks(clock, a, 2_000_000_000L);
    clock.every(TICK, ticks);
    SplittableRandom random = new SplittableRandom(SEED);
    long end = 60_000_000_000L;
    while (clock.elapsed() < end) {
      clock.advance(Math.max(1, Math.round(-Math.log(1 - random.nextDouble()) / rps * 1e9)));
      a.record(clock.read());
    }
    assertEquals(rps, ticks.sum / ticks.count, rps * 0.03, "mean estimate at " + rps + "/s, seed " + SEED);
  }

  @Test
  void aSaturatedLoopThatStampsInBatchesAndTicksLateStillReads22000() {
    // The server's loop stamps each request when it reads it, and on a saturated core it reads
    // them in batches, the adaptation's tick running between batches, late: here 22,000/s read
    // every 0.5-3 ms, all of a batch with one stamp, and the tick run only after a batch.
    VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 500_000_000L);
    ArrivalRateEstimator a = new ArrivalRateEstimator(5, 9);
    SplittableRandom random = new SplittableRandom(SEED);
    double rps = 22_000;
    double arrived = 0;
    long recorded = 0;
    double sum = 0;
    long reads = 0;
    while (clock.elapsed() < 20_000_000_000L) {
      long batch = 500_000 + random.nextLong(2_500_000);
      clock.advance(batch);
      arrived += rps * batch / 1e9;
      for (; recorded < (long) arrived; recorded++) {
        a.record(clock.read());
      }
      double rate = a.estimate(clock.read());
      if (clock.elapsed() > 1_000_000_000L) {
        sum += rate;
        reads++;
      }
    }
    assertEquals(rps, sum / reads, rps * 0.03, "mean estimate, seed " + SEED);
  }

  @Test
  void aSmoothingWithNoRoomForItsMarksIsRefusedWhenConfigured() {
    // The estimator keeps smoothing + 1 window marks: at Integer.MAX_VALUE that count overflows.
    // The configuration says so where it is given, not as a NegativeArraySizeException from the
    // first network thread the server starts.
    org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
        () -> new ArrivalRateEstimator(5, Integer.MAX_VALUE));
    ThreadingProfile p = ThreadingProfile.builder().add(ThreadingModel.parse("IB"), 0, 1).build();
    org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
        () -> new ThreadingAdaptation(p, 5, Integer.MAX_VALUE, 1_000_000, 0.1, 0.25, 3));
  }

  /** The adaptation's tick: reads the estimate every millisecond once {@code from} has passed. */
  private static final class Ticks implements Runnable {
    private final VirtualClock clock;
    private final ArrivalRateEstimator arrivals;
    private final long from;
    long count;
    double sum;
    double min = Double.POSITIVE_INFINITY;
    double max;

    Ticks(VirtualClock clock, ArrivalRateEstimator arrivals, long from) {
      this.clock = clock;
      this.arrivals = arrivals;
      this.from = from;
    }

    @Override
    public void run() {
      double rate = arrivals.estimate(clock.read());
      if (clock.elapsed() >= from) {
        count++;
        sum += rate;
        min = Math.min(min, rate);
        max = Math.max(max, rate);
      }
    }
  }
}
