package io.spillway.asqm;

import java.io.IOException;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A process for {@link ContendedLockFinderTest} to sample by its id: eight virtual threads take
 * one lock in turn and hold it while they work, so seven are always queued for it, and a ninth
 * takes a lock of its own. Runs until its standard input closes.
 */
final class ContendedChild {

  private static final ReentrantLock SHARED = new ReentrantLock();
  private static final ReentrantLock OWN = new ReentrantLock();
  private static volatile long sink;

  private ContendedChild() { }

  static void critical() {
    SHARED.lock();
    try {
      work(50_000);
    } finally {
      SHARED.unlock();
    }
  }

  static void uncontended() {
    OWN.lock();
    try {
      work(50_000);
    } finally {
      OWN.unlock();
    }
  }

  private static void work(int n) {
    long x = 0;
    for (int i = 0; i < n; i++) {
      x += i * 31L;
    }
    sink = x;
  }

  public static void main(String[] args) throws IOException {
    for (int i = 0; i < 8; i++) {
      Thread.ofVirtual().start(() -> {
        for (;;) {
          critical();
        }
      });
    }
    Thread.ofVirtual().start(() -> {
      for (;;) {
        uncontended();
        Thread.yield();
      }
    });
    System.out.println("ready");
    System.out.flush();
    while (System.in.read() >= 0) {
      // runs until the test closes its input
    }
    System.exit(0);
  }
}
