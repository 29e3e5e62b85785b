package io.spillway.lucene;

import io.spillway.asqm.BudgetedLock;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * A lock made busy by the test: one thread holds it and another waits in its queue, stamped at
 * the lock's clock, until {@link #close()}. The test then moves the clock to give the queue the
 * delay it wants.
 */
final class LockQueue implements AutoCloseable {

  private final CountDownLatch release = new CountDownLatch(1);
  private final Thread holder;
  private final Thread waiter;

  LockQueue(BudgetedLock lock) throws InterruptedException {
    CountDownLatch held = new CountDownLatch(1);
    holder = Thread.ofPlatform().daemon().start(() -> {
      lock.lock();
      try {
        held.countDown();
        release.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } finally {
        lock.unlock();
      }
    });
    if (!held.await(10, TimeUnit.SECONDS)) {
      throw new IllegalStateException("the holder never got " + lock);
    }
    waiter = Thread.ofPlatform().daemon().start(() -> {
      lock.lock();
      lock.unlock();
    });
    long giveUp = System.nanoTime() + TimeUnit.SECONDS.toNanos(10); // a safety net, not a measure
    while (lock.waiters() == 0) {
      if (System.nanoTime() - giveUp > 0) {
        throw new IllegalStateException("nobody queued on " + lock);
      }
      Thread.onSpinWait();
    }
  }

  @Override
  public void close() {
    release.countDown();
    try {
      holder.join();
      waiter.join();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
