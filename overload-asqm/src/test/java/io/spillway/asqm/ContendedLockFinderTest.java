package io.spillway.asqm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantLock;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * A two-path service in miniature (Protego Fig. 1): every worker alternates between two mutexes
 * and holds each for a while, so both are contended; a third lock is only ever taken by one
 * thread. The finder must rank the two mutexes first and not report the uncontended one. Nothing
 * here depends on how long anything takes, only on who waited for what.
 */
class ContendedLockFinderTest {

  private final Lock path1 = new ReentrantLock();
  private final BudgetedLock path2 = new BudgetedLock();
  private final Lock private3 = new ReentrantLock();
  private volatile long sink;

  private void work(int spins) {
    long x = 0;
    for (int i = 0; i < spins; i++) {
      x += i * 31L;
    }
    sink = x;
  }

  // Each path takes its mutex itself: the finder labels a lock with the frame that waited for it.
  void path1Request() {
    path1.lock();
    try {
      work(20_000);
    } finally {
      path1.unlock();
    }
  }

  void path2Request() {
    path2.lock();
    try {
      work(20_000);
    } finally {
      path2.unlock();
    }
  }

  void privateWork() {
    private3.lock();
    try {
      work(1_000);
    } finally {
      private3.unlock();
    }
  }

  /** Worker {@code id}'s i-th request: path 1 and the other path in turn; worker 0 also takes its own lock. */
  private void request(int i, int id, Runnable otherPath) {
    if ((i + id) % 2 == 0) {
      path1Request();
    } else {
      otherPath.run();
    }
    if (id == 0) {
      privateWork();
    }
  }

  /** Path 1's lock and {@code otherPath}'s rank first (in either order); worker 0's own lock not at all. */
  private void assertTheTwoPathsRankFirst(List<ContendedLockFinder.LockContention> ranked, String otherPath) {
    ContendedLockFinder.print(ranked, 5, System.out);
    assertTrue(ranked.size() >= 2, "found " + ranked);
    Set<String> topSites = ranked.subList(0, 2).stream()
        .map(c -> c.site().replaceAll(":\\d+$", "")).collect(Collectors.toSet());
    assertEquals(Set.of(getClass().getName() + ".path1Request", getClass().getName() + "." + otherPath),
        topSites, "the two paths' locks rank first: " + ranked);
    assertFalse(ranked.stream().anyMatch(c -> c.site().contains("privateWork")),
        "a lock only one thread takes is never waited for: " + ranked);
  }

  @Test
  void ranksTheTwoContendedMutexesFirst() throws Exception {
    int workers = 6;
    CyclicBarrier start = new CyclicBarrier(workers + 1);
    List<ContendedLockFinder.LockContention> ranked = ContendedLockFinder.profile(() -> {
      List<Thread> threads = new ArrayList<>();
      for (int w = 0; w < workers; w++) {
        int id = w;
        threads.add(Thread.ofPlatform().start(() -> {
          try {
            start.await();
          } catch (Exception e) {
            throw new IllegalStateException(e);
          }
          for (int i = 0; i < 4_000; i++) {
            request(i, id, this::path2Request);
          }
        }));
      }
      try {
        start.await();
        for (Thread t : threads) {
          t.join();
        }
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    });
    assertTheTwoPathsRankFirst(ranked, "path2Request");
    assertTrue(ranked.get(0).waits() > 0 && ranked.get(0).totalWaitNanos() > 0);
  }

  @Test
  void waitingForAnEventIsNotLockQueueing() throws Exception {
    java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(1);
    List<ContendedLockFinder.LockContention> ranked = ContendedLockFinder.profile(() -> {
      Thread.ofPlatform().start(() -> {
        for (int i = 0; i < 2_000; i++) {
          Thread.onSpinWait();
        }
        done.countDown();
      });
      try {
        done.await(); // as a server's main thread awaits its shutdown
      } catch (InterruptedException e) {
        throw new IllegalStateException(e);
      }
    });
    assertFalse(ranked.stream().anyMatch(c -> c.lock().contains("CountDownLatch")),
        "a latch is a signal, not a lock: " + ranked);
    assertTrue(ContendedLockFinder.isSignal("java.util.concurrent.CountDownLatch$Sync"));
    assertFalse(ContendedLockFinder.isSignal("java.util.concurrent.locks.ReentrantLock$NonfairSync"));
  }

  private final Object cacheMonitor = new Object();

  void cacheRequest() {
    synchronized (cacheMonitor) {
      work(20_000);
    }
  }

  /** Dumps of this JVM, counted, so a workload can run until enough were taken. */
  private static final class CountedDumps implements LockWaitSampler.DumpSource {
    final LockWaitSampler.DumpSource inner;
    final AtomicLong taken = new AtomicLong();

    CountedDumps() throws IOException {
      inner = LockWaitSampler.thisJvm();
    }

    @Override
    public String dump() throws IOException {
      String d = inner.dump();
      taken.incrementAndGet();
      return d;
    }

    @Override
    public void close() throws IOException {
      inner.close();
    }
  }

  /**
   * The same service on virtual threads, one path behind a ReentrantLock and one behind a
   * monitor: JFR records neither wait (JDK 25), the dumps see both. The workload runs until 20
   * dumps were taken, so what is asserted does not depend on the machine's speed.
   */
  @Test
  void ranksTheContendedLocksOfVirtualThreadsFirst() throws Exception {
    int workers = 6;
    AtomicBoolean stop = new AtomicBoolean();
    List<ContendedLockFinder.LockContention> ranked;
    try (CountedDumps dumps = new CountedDumps()) {
      ranked = ContendedLockFinder.profile(() -> {
        List<Thread> threads = new ArrayList<>();
        for (int w = 0; w < workers; w++) {
          int id = w;
          threads.add(Thread.ofVirtual().start(() -> {
            for (int i = 0; !stop.get(); i++) {
              request(i, id, this::cacheRequest);
            }
          }));
        }
        while (dumps.taken.get() < 20) {
          Thread.onSpinWait();
        }
        stop.set(true);
        for (Thread t : threads) {
          try {
            t.join();
          } catch (InterruptedException e) {
            throw new IllegalStateException(e);
          }
        }
      }, dumps, Duration.ofMillis(5));
    }
    assertTheTwoPathsRankFirst(ranked, "cacheRequest");
    assertTrue(ranked.get(0).sampled() && ranked.get(1).sampled(), "from the dumps: " + ranked);
  }

  /**
   * Another JVM, sampled by its process id with nothing on its command line: its eight virtual
   * threads queue for one lock, which ranks first.
   */
  @Test
  void samplesAnotherJvmByItsProcessId() throws Exception {
    Path java = Path.of(System.getProperty("java.home"), "bin", "java");
    Process child = new ProcessBuilder(java.toString(), "-cp", System.getProperty("java.class.path"),
        ContendedChild.class.getName()).redirectErrorStream(true).start();
    try {
      BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
      String line = out.readLine();
      assertEquals("ready", line, "the child started");
      List<ContendedLockFinder.LockContention> ranked =
          ContendedLockFinder.sample(child.pid(), Duration.ofSeconds(1), Duration.ofMillis(10));
      ContendedLockFinder.print(ranked, 5, System.out);
      assertFalse(ranked.isEmpty(), "the child's lock was seen");
      assertEquals(ContendedChild.class.getName() + ".critical", ranked.get(0).site().replaceAll(":\\d+$", ""),
          "the shared lock ranks first: " + ranked);
      assertEquals("java.util.concurrent.locks.ReentrantLock$NonfairSync", ranked.get(0).lock());
      assertTrue(ranked.get(0).sampled());
      assertFalse(ranked.stream().anyMatch(c -> c.site().contains("uncontended")), "" + ranked);
    } finally {
      child.getOutputStream().close();
      child.destroy();
      child.waitFor();
    }
  }

  @Test
  void aProcessThatIsNotThereIsAClearError() {
    IOException e = org.junit.jupiter.api.Assertions.assertThrows(IOException.class,
        () -> ContendedLockFinder.sample(Long.MAX_VALUE / 2, Duration.ofMillis(10), Duration.ofMillis(10)));
    assertTrue(e.getMessage().contains(Long.toString(Long.MAX_VALUE / 2)), e.getMessage());
  }
}
