package io.spillway.asqm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The dump reader and the estimate, on literal dumps in the JDK 25 plain-text format
 * ({@code HotSpotDiagnosticMXBean.dumpThreads(..., TEXT_PLAIN)}, {@code jcmd Thread.dump_to_file}).
 */
class ThreadDumpLockWaitsTest {

  private static final String LOCK = "java.util.concurrent.locks.ReentrantLock$NonfairSync@3835c46";
  private static final String MONITOR = "java.lang.Object@6e171cd7";

  /** A virtual thread parked behind a ReentrantLock that {@code Shard.acquire} takes. */
  private static String parkedOnLock(int id) {
    return "#" + id + " \"\" virtual WAITING 2026-11-29T00:42:56.848521231Z\n"
        + "    at java.base/java.lang.VirtualThread.park(VirtualThread.java:742)\n"
        + "    - parking to wait for <" + LOCK + ">\n"
        + "    at java.base/java.lang.System$1.parkVirtualThread(System.java:2285)\n"
        + "    at java.base/java.util.concurrent.locks.LockSupport.park(LockSupport.java:221)\n"
        + "    at java.base/java.util.concurrent.locks.ReentrantLock.lock(ReentrantLock.java:323)\n"
        + "    at io.spillway.asqm.BudgetedLock.lock(BudgetedLock.java:120)\n"
        + "    at com.example.Shard.acquire(Shard.java:65)\n"
        + "    at com.example.Search.run(Search.java:10)\n"
        + "\n";
  }

  /** A virtual thread blocked entering a contended synchronized block. */
  private static String blockedOnMonitor(int id) {
    return "#" + id + " \"worker \"7\"\" virtual BLOCKED 2026-11-29T00:42:52.190767256Z\n"
        + "    at com.example.Cache.put(Cache.java:42)\n"
        + "    - waiting to lock <" + MONITOR + ">\n"
        + "    at java.base/java.lang.VirtualThread.run(VirtualThread.java:460)\n"
        + "\n";
  }

  private static final String NOT_LOCK_QUEUEING =
      // an idle carrier of virtual threads
      "#24 \"ForkJoinPool-1-worker-1\" WAITING 2026-11-29T00:42:52.198537718Z\n"
      + "    at java.base/jdk.internal.misc.Unsafe.park(Native Method)\n"
      + "    - parking to wait for <java.util.concurrent.ForkJoinPool@795cd85e>\n"
      + "    at java.base/java.util.concurrent.ForkJoinPool.awaitWork(ForkJoinPool.java:2109)\n"
      + "\n"
      // a consumer waiting on a condition
      + "#40 \"\" virtual WAITING 2026-11-29T00:42:52.2Z\n"
      + "    at java.base/java.lang.VirtualThread.park(VirtualThread.java:742)\n"
      + "    - parking to wait for <java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject@1a2b>\n"
      + "    at com.example.Queue.take(Queue.java:5)\n"
      + "\n"
      // a timed park: a sleep or a timeout, not a lock's queue
      + "#41 \"\" virtual TIMED_WAITING 2026-11-29T00:42:52.2Z\n"
      + "    at java.base/java.lang.VirtualThread.parkNanos(VirtualThread.java:800)\n"
      + "    - parking to wait for <" + LOCK + ">\n"
      + "    at com.example.Shard.tryAcquire(Shard.java:70)\n"
      + "\n"
      // a latch: a signal
      + "#42 \"main\" WAITING 2026-11-29T00:42:52.2Z\n"
      + "    at java.base/jdk.internal.misc.Unsafe.park(Native Method)\n"
      + "    - parking to wait for <java.util.concurrent.CountDownLatch$Sync@77>\n"
      + "    at com.example.Main.main(Main.java:3)\n"
      + "\n"
      // running
      + "#43 \"\" virtual RUNNABLE 2026-11-29T00:42:52.2Z\n"
      + "    at com.example.Search.run(Search.java:12)\n"
      + "\n";

  /** A platform thread parked behind the same lock. */
  private static final String PLATFORM_PARKED =
      "#50 \"grpc-default-executor-0\" WAITING 2026-11-29T00:42:52.2Z\n"
      + "    at java.base/jdk.internal.misc.Unsafe.park(Native Method)\n"
      + "    - parking to wait for <" + LOCK + ">\n"
      + "    at java.base/java.util.concurrent.locks.ReentrantLock.lock(ReentrantLock.java:323)\n"
      + "    at com.example.Shard.acquire(Shard.java:65)\n"
      + "\n";

  /** A dump cut short inside a lock's line skips that thread and reads the others. */
  @Test
  void aLockLineCutShortSkipsItsThreadInsteadOfFailingTheDump() {
    String cut = "#60 \"\" virtual WAITING 2026-11-29T00:42:52.2Z\n"
        + "    at java.base/java.lang.VirtualThread.park(VirtualThread.java:742)\n"
        + "    - parking to wait for <java.util.concurrent.locks.ReentrantLock$Nonf\n";
    String dump = "2026-11-29T00:42:52Z\n25.0.3+9-LTS\n\n" + parkedOnLock(32) + cut;
    assertEquals(List.of(new ThreadDumpLockWaits.LockWait(32, LOCK,
            "java.util.concurrent.locks.ReentrantLock$NonfairSync", "com.example.Shard.acquire:65")),
        ThreadDumpLockWaits.parse(dump, true));
  }

  /**
   * A dump the sampler cannot read, whatever the reason, is reported by stop(), not lost with the
   * sampler thread (which would return a ranking of what it saw before as if sampling had gone on).
   */
  @Test
  void aDumpThatCannotBeReadIsReportedByStop() throws Exception {
    java.util.concurrent.CountDownLatch asked = new java.util.concurrent.CountDownLatch(1);
    LockWaitSampler sampler = new LockWaitSampler(() -> {
      asked.countDown();
      throw new IllegalStateException("no dump today");
    }, java.time.Duration.ofMillis(1), true).start();
    asked.await();
    java.io.IOException e = org.junit.jupiter.api.Assertions.assertThrows(java.io.IOException.class, sampler::stop);
    assertEquals("no dump today", e.getCause().getMessage());
  }

  @Test
  void readsTheLockEachThreadQueuesForAndTheFrameThatTookIt() {
    String dump = "2026-11-29T00:42:52Z\n25.0.3+9-LTS\n\n" + parkedOnLock(32) + blockedOnMonitor(33)
        + NOT_LOCK_QUEUEING + PLATFORM_PARKED;
    assertEquals(List.of(
            new ThreadDumpLockWaits.LockWait(32, LOCK, "java.util.concurrent.locks.ReentrantLock$NonfairSync",
                "com.example.Shard.acquire:65"),
            new ThreadDumpLockWaits.LockWait(33, MONITOR, "java.lang.Object", "com.example.Cache.put:42")),
        ThreadDumpLockWaits.parse(dump, true), "virtual threads only");
    List<ThreadDumpLockWaits.LockWait> all = ThreadDumpLockWaits.parse(dump, false);
    assertEquals(3, all.size(), "and the platform thread: " + all);
    assertEquals(50, all.get(2).threadId());
  }

  @Test
  void framesAreNamedAsJfrNamesThemAndTheJdksAndSpillwaysLockFramesAreSkipped() {
    assertEquals("com.example.Shard.acquire:65",
        ThreadDumpLockWaits.applicationSite("com.example.Shard.acquire(Shard.java:65)"));
    assertEquals("com.example.Shard.acquire:65",
        ThreadDumpLockWaits.applicationSite("app.module/com.example.Shard.acquire(Shard.java:65)"));
    assertEquals("com.example.Gen.run", ThreadDumpLockWaits.applicationSite("com.example.Gen.run(Unknown Source)"));
    assertNull(ThreadDumpLockWaits.applicationSite("java.base/java.util.concurrent.locks.ReentrantLock.lock(ReentrantLock.java:323)"));
    assertNull(ThreadDumpLockWaits.applicationSite("io.spillway.asqm.BudgetedLock.lock(BudgetedLock.java:120)"));
  }

  @Test
  void eachSampleStandsForTheTimeSinceTheLastAndAThreadSeenTwiceInARowWaitsOnce() {
    ThreadDumpLockWaits waits = new ThreadDumpLockWaits();
    // 10 ms: threads 32 and 34 wait for the lock, 33 for the monitor.
    waits.add(parkedOnLock(32) + blockedOnMonitor(33) + parkedOnLock(34), 10_000_000, true);
    // 12 ms later: 32 still waits (the same wait), 34 got it, 35 now waits; 33 got the monitor.
    waits.add(parkedOnLock(32) + parkedOnLock(35), 12_000_000, true);
    // 8 ms later: nobody waits; then 32 waits again (a new wait).
    waits.add("", 8_000_000, true);
    waits.add(parkedOnLock(32), 10_000_000, true);
    assertEquals(4, waits.samples());

    List<ContendedLockFinder.LockContention> ranked = waits.ranked();
    assertEquals(2, ranked.size());
    ContendedLockFinder.LockContention lock = ranked.get(0);
    assertEquals("java.util.concurrent.locks.ReentrantLock$NonfairSync", lock.lock());
    assertEquals("com.example.Shard.acquire:65", lock.site());
    assertEquals(4, lock.waits(), "32 (twice, apart), 34, 35");
    assertEquals(10 + 10 + 12 + 12 + 10, lock.totalWaitNanos() / 1_000_000);
    assertEquals(22_000_000, lock.maxWaitNanos(), "32's first wait, seen in two samples in a row");
    assertTrue(lock.sampled());
    ContendedLockFinder.LockContention monitor = ranked.get(1);
    assertEquals("java.lang.Object", monitor.lock());
    assertEquals(1, monitor.waits());
    assertEquals(10_000_000, monitor.totalWaitNanos());
  }

  @Test
  void aThreadThatMovesToAnotherLockStartsANewWaitThere() {
    ThreadDumpLockWaits waits = new ThreadDumpLockWaits();
    waits.add(parkedOnLock(32), 5_000_000, true);
    waits.add(blockedOnMonitor(32), 5_000_000, true);
    waits.add(parkedOnLock(32), 5_000_000, true);
    List<ContendedLockFinder.LockContention> ranked = waits.ranked();
    assertEquals(2, ranked.get(0).waits(), "two waits for the lock, not one across the monitor: " + ranked);
    assertEquals(5_000_000, ranked.get(0).maxWaitNanos());
    assertEquals(1, ranked.get(1).waits());
  }
}
