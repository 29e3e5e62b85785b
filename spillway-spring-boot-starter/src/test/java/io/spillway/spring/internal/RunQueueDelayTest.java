package io.spillway.spring.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class RunQueueDelayTest {

  /** Starts near the end of the long range, so that elapsed times cross the wrap. */
  private final AtomicLong now = new AtomicLong(Long.MAX_VALUE - 5_000_000);

  private static long parse(String line, int field) {
    byte[] b = line.getBytes(StandardCharsets.US_ASCII);
    return RunQueueDelay.parseField(b, b.length, field);
  }

  @Test
  void readsTheCpuAndWaitFieldsOfASchedstatLine() {
    assertEquals(284_134_902L, parse("284134902 289882984 87\n", 0));
    assertEquals(289_882_984L, parse("284134902 289882984 87\n", 1));
    assertEquals(0L, parse("0 0 1\n", 1));
    assertEquals(-1L, parse("284134902\n", 1));
    assertEquals(-1L, parse("", 0));
    assertEquals(-1L, parse("12 x 3\n", 1));
  }

  /** A source that hands out scripted [cpu, wait] pairs; null for a failed read. */
  private static RunQueueDelay.Source scripted(long[]... reads) {
    Deque<long[]> q = new ArrayDeque<>();
    for (long[] r : reads) {
      q.add(r == null ? new long[0] : r);
    }
    return into -> {
      long[] r = q.pop();
      if (r.length == 0) {
        return false;
      }
      into[0] = r[0];
      into[1] = r[1];
      return true;
    };
  }

  @Test
  void theSignalIsAWeightedMeanOfTheWaitsOfEndedRequests() {
    RunQueueDelay d = new RunQueueDelay(now::get, into -> true, 1);
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
    RunQueueDelay d = new RunQueueDelay(now::get, into -> true, 1);
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
    RunQueueDelay d = new RunQueueDelay(now::get, scripted(
        new long[] {10_000, 1_000}, new long[] {410_000, 3_001_000},
        new long[] {500_000, 5_000}, null,
        new long[] {600_000, 9_000}, new long[] {700_000, 8_000}), 1);
    assertTrue(d.begin());
    assertEquals(3_000_000, d.end());
    assertEquals(400_000, d.cpuNanos());
    assertEquals(3_000_000, d.queueingDelayNanos(now.get()));
    assertTrue(d.begin());
    assertEquals(-1, d.end(), "the second read failed: no sample");
    assertEquals(-1, d.cpuNanos());
    assertTrue(d.begin());
    assertEquals(-1, d.end(), "went backwards (another thread's file): no sample");
    assertEquals(3_000_000, d.queueingDelayNanos(now.get()));
  }

  @Test
  void virtualThreadsAreNotSampled() throws Exception {
    RunQueueDelay d = new RunQueueDelay(now::get, into -> { throw new AssertionError("read"); }, 1);
    boolean[] begun = {true};
    Thread t = Thread.ofVirtual().start(() -> begun[0] = d.begin());
    t.join();
    assertFalse(begun[0]);
  }

  @Test
  void onLinuxTheKernelsCountIsReadableAndNeverFalls() {
    assumeTrue(System.getProperty("os.name", "").toLowerCase().contains("linux"), "Linux only");
    assertNull(RunQueueDelay.ProcSchedstat.unavailabilityCause());
    RunQueueDelay.ProcSchedstat source = new RunQueueDelay.ProcSchedstat();
    long[] first = new long[2];
    long[] second = new long[2];
    assertTrue(source.read(first));
    long spin = 0;
    for (int i = 0; i < 1_000_000; i++) {
      spin += i ^ spin;
    }
    assertTrue(source.read(second));
    assertTrue(second[0] > first[0], "CPU time grew: " + first[0] + " then " + second[0] + " " + spin);
    assertTrue(first[1] >= 0 && second[1] >= first[1], first[1] + " then " + second[1]);
  }
}
