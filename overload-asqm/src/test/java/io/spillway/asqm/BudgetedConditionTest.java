package io.spillway.asqm;

import io.spillway.api.BudgetExceededException;
import static io.spillway.asqm.BudgetedLockTest.withBudget;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.RequestBudget;
import io.spillway.asqm.BudgetedLockTest.Worker;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@link BudgetedCondition}: Protego's {@code condvar_wait_if_uncongested} on a fake clock. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class BudgetedConditionTest {

  final AtomicLong now = new AtomicLong(Long.MAX_VALUE - 30);
  final BudgetedLock lock = new BudgetedLock(now::get);
  final BudgetedCondition ready = lock.newCondition();
  final AtomicBoolean isReady = new AtomicBoolean();

  /** Starts a thread that waits for {@code isReady}; returns once it waits on the condition. */
  Worker<Void> waiterFor(int expectedWaiters) {
    Worker<Void> worker = new Worker<>(() -> {
      lock.lock();
      try {
        while (!isReady.get()) {
          ready.await();
        }
      } finally {
        lock.unlock();
      }
      return null;
    });
    Await.until(() -> ready.waiters() == expectedWaiters && Await.isParked(worker.thread));
    return worker;
  }

  @Test
  void refusesToWaitWhenTheOldestWaiterHasWaitedLongerThanTheBudget() throws Exception {
    long t = now.get();
    Worker<Void> oldest = waiterFor(1); // stamped at t
    now.set(t + 100); // wraps
    assertEquals(100, ready.queueingDelayNanos(now.get()));

    RequestBudget tight = RequestBudget.of(60);
    Worker<Boolean> refused = new Worker<>(() -> withBudget(tight, () -> {
      lock.lock();
      try {
        boolean waited = ready.awaitIfUncongested();
        return !waited && lock.isHeldByCurrentThread();
      } finally {
        lock.unlock();
      }
    }));
    assertTrue(refused.join(), "returned false at once, still holding the lock");
    assertEquals(60, tight.remainingNanos());

    Worker<Void> throwing = new Worker<>(() -> withBudget(tight, () -> {
      lock.lock();
      try {
        ready.awaitWithinBudget();
      } finally {
        lock.unlock();
      }
      return null;
    }));
    Await.join(throwing.thread);
    assertInstanceOf(BudgetExceededException.class, throwing.failure.get());

    RequestBudget roomy = RequestBudget.of(500);
    Worker<Boolean> waits = new Worker<>(() -> withBudget(roomy, () -> {
      lock.lock();
      try {
        return ready.awaitIfUncongested(); // stamped at t + 100
      } finally {
        lock.unlock();
      }
    }));
    Await.until(() -> ready.waiters() == 2 && Await.isParked(waits.thread));
    now.set(t + 340);
    lock.lock();
    try {
      isReady.set(true);
      ready.signalAll();
    } finally {
      lock.unlock();
    }
    oldest.join();
    assertTrue(waits.join());
    assertEquals(260, roomy.remainingNanos(), "charged the 240 ns it waited");
    assertEquals(0, ready.waiters());
    assertEquals(0, ready.queueingDelayNanos(now.get()));
  }

  @Test
  void withoutABudgetItIsAwaitAndItNeedsTheLock() throws Exception {
    assertThrows(IllegalMonitorStateException.class, ready::awaitIfUncongested);
    assertEquals(0, ready.waiters());
    Worker<Boolean> plain = new Worker<>(() -> {
      lock.lock();
      try {
        return ready.awaitIfUncongested();
      } finally {
        lock.unlock();
      }
    });
    Await.until(() -> ready.waiters() == 1 && Await.isParked(plain.thread));
    lock.lock();
    try {
      ready.signal();
    } finally {
      lock.unlock();
    }
    assertTrue(plain.join());
    assertFalse(lock.isLocked());
  }
}
