package io.spillway.asqm;

import java.util.concurrent.CountDownLatch;
import java.util.function.BooleanSupplier;

/**
 * Waits for a state another thread reaches. No timing is asserted: the loop only yields until the
 * state holds, and the test's {@code @Timeout} turns a hang into a failure.
 */
final class Await {

  private Await() {}

  static void until(BooleanSupplier condition) {
    while (!condition.getAsBoolean()) {
      Thread.yield();
    }
  }

  static void await(CountDownLatch latch) {
    try {
      latch.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted", e);
    }
  }

  static void join(Thread thread) {
    try {
      thread.join();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted", e);
    }
  }

  /** Whether {@code thread} is parked or blocked (not running, not ended). */
  static boolean isParked(Thread thread) {
    Thread.State state = thread.getState();
    return state == Thread.State.WAITING || state == Thread.State.TIMED_WAITING
        || state == Thread.State.BLOCKED;
  }
}
