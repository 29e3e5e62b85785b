package io.spillway.spring.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class RunQueueDelayTest {

  /** Starts near the end of the long range, so that elapsed times cross the wrap. */
  private final AtomicLong now = new AtomicLong(Long.MAX_VALUE - 5_000_000);

  private static long parse(String line) {
    byte[] b = line.getBytes(StandardCharsets.US_ASCII);
    return RunQueueDelay.parseRunDelay(b, b.length);
  }

  @Test
  void readsTheSecondFieldOfASchedstatLine() {
    assertEquals(289_882_984L, parse("284134902 289882984 87\n"));
    assertEquals(0L, parse("0 0 1\n"));
    assertEquals(-1L, parse("284134902\n"));
    assertEquals(-1L, parse(""));
    assertEquals(-1L, parse("12 x 3\n"));
  }

  @Test
  void theSignalIsAWeightedMeanOfTheWaitsOfEndedRequests() {
    RunQueueDelay d = new RunQueueDelay(now::get, () -> 0, 1);
    assertEquals(0, d.queueingDelayNanos(now.get()), "nothing sampled yet");
    d.record(8_000_000, now.get());
    assertEquals(8_000_000, d.queueingDelayNanos(now.get()), "the first wait is the mean");
    d.record(0, now.get());
    assertEquals(7_000_000, d.queueingDelayNanos(now.get()), "each later wait weighs 1/8");
    d.record(15_000_000, now.get());
    assertEquals(8_000_000, d.queueingDelayNanos(now.get()));
  }

  @Test
  void aMeanWithNoRecentSampleReadsZeroSoAGateRefusingEverythingSeesItFall() {
    RunQueueDelay d = new RunQueueDelay(now::get, () -> 0, 1);
    d.record(8_000_000, now.get());
    now.addAndGet(RunQueueDelay.STALE_NANOS); // crosses Long.MAX_VALUE
    assertEquals(8_000_000, d.queueingDelayNanos(now.get()));
    now.addAndGet(1);
    assertEquals(0, d.queueingDelayNanos(now.get()));
    d.record(4_000_000, now.get());
    assertEquals(7_500_000, d.queueingDelayNanos(now.get()),
        "a fresh sample revives the mean it left");
  }

  @Test
  void aSampleIsTheDifferenceOfTwoReadsOnTheSameThread() {
    Deque<Long> reads = new ArrayDeque<>(List.of(1_000L, 3_001_000L, 5_000L, -1L, 9_000L, 8_000L));
    RunQueueDelay d = new RunQueueDelay(now::get, reads::pop, 1);
    assertEquals(3_000_000, d.end(d.begin()));
    assertEquals(3_000_000, d.queueingDelayNanos(now.get()));
    assertEquals(-1, d.end(d.begin()), "the second read failed: no sample");
    assertEquals(-1, d.end(d.begin()), "went backwards (another thread's file): no sample");
    assertEquals(3_000_000, d.queueingDelayNanos(now.get()));
    assertEquals(-1, d.end(-1), "not sampled: reads nothing");
    assertTrue(reads.isEmpty());
  }

  @Test
  void virtualThreadsAreNotSampled() throws Exception {
    RunQueueDelay d = new RunQueueDelay(now::get, () -> { throw new AssertionError("read"); }, 1);
    long[] begun = new long[1];
    Thread t = Thread.ofVirtual().start(() -> begun[0] = d.begin());
    t.join();
    assertEquals(-1, begun[0]);
  }

  @Test
  void onLinuxTheKernelsCountIsReadableAndNeverFalls() {
    assumeTrue(System.getProperty("os.name", "").toLowerCase().contains("linux"), "Linux only");
    assertNull(RunQueueDelay.ProcSchedstat.unavailabilityCause());
    RunQueueDelay.ProcSchedstat source = new RunQueueDelay.ProcSchedstat();
    long first = source.runDelayNanos();
    long second = source.runDelayNanos();
    assertTrue(first >= 0 && second >= first, first + " then " + second);
  }
}
