package io.spillway.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.internal.CgroupCpu.Quota;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The CPU-quota stage in virtual time: a group whose usage the test advances at a chosen rate,
 * the signal read once a millisecond as requests would read it.
 */
class CpuQuotaDelayTest {

  /** Near the end of the range, to catch wrap-around. */
  private static final long T0 = Long.MAX_VALUE - 150_000_000L;
  private static final long MS = 1_000_000;
  private static final Quota HALF_A_CORE = new Quota(50 * MS, 100 * MS);

  /** A group using CPU at {@code rate} cores from the last change on. */
  private static final class Group implements CpuQuotaDelay.Group {
    Quota quota = HALF_A_CORE;
    double rate;
    long since = T0;
    long usageAtSince = 7 * MS; // the counter starts wherever the group's life left it
    long now;
    int reads;

    void rate(double cores, long at) {
      usageAtSince = usageAt(at);
      since = at;
      rate = cores;
    }

    long usageAt(long t) {
      return usageAtSince + Math.round(rate * (t - since));
    }

    @Override
    public Quota quota() {
      return quota;
    }

    @Override
    public long usageNanos() {
      reads++;
      return usageAt(now);
    }
  }

  /** Reads the signal every millisecond from {@code from} to {@code to}; returns the last value. */
  private static long run(CpuQuotaDelay stage, Group g, long from, long to) {
    long d = 0;
    for (long t = from; t - to <= 0; t += MS) {
      g.now = t;
      d = stage.queueingDelayNanos(t);
    }
    return d;
  }

  @Test
  void theDelayIsTheShareOfTheHeadroomSpentTimesTheFreezeOfAWholeQuota() {
    // half a core on one CPU, 100 ms periods: aim 45 ms, headroom 5 ms, freeze 100 − 50 = 50 ms
    assertEquals(0, CpuQuotaDelay.delayNanos(40 * MS, 50 * MS, 100 * MS, 1));
    assertEquals(0, CpuQuotaDelay.delayNanos(45 * MS, 50 * MS, 100 * MS, 1));
    assertEquals(10 * MS, CpuQuotaDelay.delayNanos(46 * MS, 50 * MS, 100 * MS, 1));
    assertEquals(50 * MS, CpuQuotaDelay.delayNanos(50 * MS, 50 * MS, 100 * MS, 1),
        "the whole quota: the freeze it brings");
    // two cores' quota on four CPUs: spent in 50 ms at full speed, a 50 ms freeze; half the
    // 20 ms headroom spent
    assertEquals(25 * MS, CpuQuotaDelay.delayNanos(190 * MS, 200 * MS, 100 * MS, 4));
    assertEquals(0, CpuQuotaDelay.delayNanos(200 * MS, 200 * MS, 100 * MS, 2),
        "two cores' quota on two CPUs cannot be spent before the period ends");
  }

  @Test
  void usingLessThanTheAimReadsZeroAndUsingTheWholeQuotaReadsTheFreezeItWouldCause() {
    Group g = new Group();
    CpuQuotaDelay stage = new CpuQuotaDelay(g, HALF_A_CORE, 1, T0);
    g.rate(0.40, T0);
    assertEquals(0, run(stage, g, T0, T0 + 200 * MS), "0.4 cores under a 0.5 quota");

    long t = T0 + 200 * MS;
    g.rate(0.50, t);
    // the window slides onto the new rate: 0.4·(100 − x) + 0.5·x is over 45 ms once x > 50 ms
    assertEquals(0, run(stage, g, t + MS, t + 50 * MS));
    assertEquals(10 * MS, run(stage, g, t + 51 * MS, t + 60 * MS), "46 ms used: a fifth of 50 ms");
    assertEquals(50 * MS, run(stage, g, t + 61 * MS, t + 150 * MS), "the whole quota");

    t += 150 * MS;
    g.rate(0.30, t);
    // 0.5·(100 − x) + 0.3·x falls to 45 ms at x = 25 ms
    assertEquals(10 * MS, run(stage, g, t + MS, t + 20 * MS), "46 ms: still 1 over");
    assertEquals(0, run(stage, g, t + 21 * MS, t + 25 * MS));
  }

  @Test
  void readsWithinAMillisecondOfTheLastSampleReturnItsValueWithoutReadingTheGroup() {
    Group g = new Group();
    CpuQuotaDelay stage = new CpuQuotaDelay(g, HALF_A_CORE, 1, T0);
    g.rate(1.0, T0);
    run(stage, g, T0, T0 + 100 * MS);
    int reads = g.reads;
    long d = stage.queueingDelayNanos(T0 + 100 * MS + 999_999);
    assertEquals(reads, g.reads);
    assertEquals(550 * MS, d, "a whole core under half a core's quota: 55 ms over, 11 headrooms");
    stage.queueingDelayNanos(T0 + 101 * MS);
    assertEquals(reads + 1, g.reads);
  }

  @Test
  void beforeAPeriodOfSamplesTheRateSoFarIsScaledToAPeriod() {
    Group g = new Group();
    CpuQuotaDelay stage = new CpuQuotaDelay(g, HALF_A_CORE, 1, T0);
    g.rate(0.5, T0);
    assertEquals(0, run(stage, g, T0, T0), "one sample spans nothing");
    assertEquals(50 * MS, run(stage, g, T0 + MS, T0 + 10 * MS), "0.5 cores for 10 ms: 50 ms a period");
  }

  @Test
  void aQuotaLiftedOrChangedIsFollowedWithinASecond() {
    Group g = new Group();
    CpuQuotaDelay stage = new CpuQuotaDelay(g, HALF_A_CORE, 1, T0);
    g.rate(0.5, T0);
    assertEquals(50 * MS, run(stage, g, T0, T0 + 200 * MS));
    g.quota = null; // the limit removed
    assertEquals(50 * MS, run(stage, g, T0 + 201 * MS, T0 + 999 * MS), "read again once a second");
    assertEquals(0, run(stage, g, T0 + 1_000 * MS, T0 + 1_001 * MS));
    assertEquals(0.0, stage.quotaCores());

    g.quota = new Quota(25 * MS, 100 * MS); // a quarter of a core: aim 22.5 ms, freeze 75 ms
    assertEquals(825 * MS, run(stage, g, T0 + 1_002 * MS, T0 + 2_100 * MS),
        "50 ms used, 27.5 over: 11 headrooms of 2.5 ms");
    assertEquals(0.25, stage.quotaCores());
  }

  @Test
  void aCounterThatGoesBackStartsTheWindowAgain() {
    Group g = new Group();
    CpuQuotaDelay stage = new CpuQuotaDelay(g, HALF_A_CORE, 1, T0);
    g.rate(0.2, T0);
    g.usageAtSince = 900 * MS;
    assertEquals(0, run(stage, g, T0, T0 + 200 * MS));
    long t = T0 + 201 * MS;
    g.usageAtSince = 0; // a new group's counter, far below the old one
    g.since = t;
    g.rate = 0.5;
    assertEquals(0, run(stage, g, t, t), "one sample of the new counter spans nothing");
    assertEquals(50 * MS, run(stage, g, t + MS, t + 10 * MS),
        "measured from the new counter alone: 0.5 cores");
  }

  @Test
  void aStageIsMadeOnlyOnTheSystemClockForAQuotaBelowTheProcesssCpus(@TempDir Path root)
      throws IOException {
    write(root, "proc/self/cgroup", "0::/app\n");
    write(root, "proc/self/mountinfo", "35 30 0:30 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
    write(root, "proc/self/status", "Cpus_allowed_list:\t0-1\n");
    write(root, "sys/fs/cgroup/app/cpu.stat", "usage_usec 5000\n");
    write(root, "sys/fs/cgroup/app/cpu.max", "150000 100000\n"); // 1.5 of 2 CPUs
    assertEquals(1.5, CpuQuotaDelay.detect(Ticker.system(), root).orElseThrow().quotaCores());
    assertTrue(CpuQuotaDelay.detect(() -> T0, root).isEmpty(),
        "the machine's usage against a virtual clock would read as any rate at all");

    write(root, "sys/fs/cgroup/app/cpu.max", "200000 100000\n"); // as many cores as CPUs
    assertTrue(CpuQuotaDelay.detect(Ticker.system(), root).isEmpty(), "a quota it cannot spend");
    write(root, "sys/fs/cgroup/app/cpu.max", "max 100000\n");
    assertTrue(CpuQuotaDelay.detect(Ticker.system(), root).isEmpty(), "no quota");
  }

  private static void write(Path root, String path, String text) throws IOException {
    Path p = root.resolve(path);
    Files.createDirectories(p.getParent());
    Files.writeString(p, text);
  }
}
