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

  /**
   * A signalled waiter has left the condition's queue (protego-nsdi23 §4 measures "the oldest
   * thread in the waiter queue"); while it waits to re-acquire the lock it must not age the
   * condition, or a ping-pong hand-off is refused for the wait of the thread it has just woken.
   */
  @Test
  void aSignalledWaiterNoLongerAgesTheCondition() throws Exception {
    long t = now.get();
    Worker<Void> woken = waiterFor(1); // stamped at t
    now.set(t + 100); // wraps

    RequestBudget budget = RequestBudget.of(60);
    Worker<long[]> pinger = new Worker<>(() -> withBudget(budget, () -> {
      lock.lock();
      try {
        isReady.set(true);
        ready.signal(); // the woken thread now queues for the lock this thread holds
        long[] seen = {ready.waiters(), ready.queueingDelayNanos(now.get()), 0};
        seen[2] = ready.awaitIfUncongested() ? 1 : 0; // nobody waits on the condition: waits
        return seen;
      } finally {
        lock.unlock();
      }
    }));
    woken.join(); // it had the lock again: the pinger waits, or was refused and left
    lock.lock();
    try {
      ready.signal();
    } finally {
      lock.unlock();
    }
    long[] seen = pinger.join();
    assertEquals(1, seen[2], "awaitIfUncongested admitted the hand-off");
    assertEquals(0, seen[0], "waiters right after the signal");
    assertEquals(0, seen[1], "queueing delay right after the signal");
    assertEquals(0, ready.waiters());
  }

  /** signalAll() empties the queue at once, not as the woken threads get the lock back in turn. */
  @Test
  void signalAllEmptiesTheQueueAtOnce() throws Exception {
    long t = now.get();
    Worker<Void> first = waiterFor(1);
    now.set(t + 10);
    Worker<Void> second = waiterFor(2);
    now.set(t + 100);
    lock.lock();
    try {
      isReady.set(true);
      ready.signalAll();
      assertEquals(0, ready.waiters(), "waiters right after signalAll");
      assertEquals(0, ready.queueingDelayNanos(now.get()), "delay right after signalAll");
      // Admitted with nothing left, as the queue is empty; an interrupt set beforehand makes the
      // admitted wait end at once, still holding the lock (a refusal would return false instead).
      Thread.currentThread().interrupt();
      assertThrows(InterruptedException.class,
          () -> withBudget(RequestBudget.of(0), ready::awaitIfUncongested));
      assertFalse(Thread.interrupted());
    } finally {
      lock.unlock();
    }
    first.join();
    second.join();
    assertEquals(0, ready.waiters());
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
