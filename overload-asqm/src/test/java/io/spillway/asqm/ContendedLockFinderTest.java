package io.spillway.asqm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CyclicBarrier;
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
            if ((i + id) % 2 == 0) {
              path1Request();
            } else {
              path2Request();
            }
            if (id == 0) {
              privateWork();
            }
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
    ContendedLockFinder.print(ranked, 5, System.out);
    assertTrue(ranked.size() >= 2, "found " + ranked);
    Set<String> topSites = ranked.subList(0, 2).stream()
        .map(c -> c.site().replaceAll(":\\d+$", "")).collect(Collectors.toSet());
    assertEquals(Set.of(getClass().getName() + ".path1Request", getClass().getName() + ".path2Request"),
        topSites, "the two path mutexes rank first: " + ranked);
    assertFalse(ranked.stream().anyMatch(c -> c.site().contains("privateWork")),
        "a lock only one thread takes is never waited for: " + ranked);
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
}
