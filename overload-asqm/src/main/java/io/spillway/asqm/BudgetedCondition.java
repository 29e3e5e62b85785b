package io.spillway.asqm;

import io.spillway.api.BudgetExceededException;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.RequestBudget;
import io.spillway.api.Ticker;
import java.util.Date;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;

/**
 * A {@link Condition} of a {@link BudgetedLock} that stamps its waiters, so it has a queueing
 * delay ({@code now − stamp of the oldest waiter}), and can refuse to wait when that delay exceeds
 * the request's remaining budget: Protego's {@code condvar_wait_if_uncongested}
 * (protego-nsdi23 §4).
 *
 * <p>The {@link Condition} methods behave as those of a {@link java.util.concurrent.locks
 * .ReentrantLock} condition (the lock must be held; it is released while waiting and re-acquired
 * before returning). Every wait is charged to the budget in scope, if any, from the moment it
 * starts until the lock is held again.
 *
 * <p><b>Thread-safety:</b> thread-safe; as with any condition, waiting and signalling require
 * holding the lock. {@link #queueingDelayNanos} and {@link #waiters} may be read from any thread.
 */
public final class BudgetedCondition implements Condition, QueueDelaySignal {

  private final BudgetedLock lock;
  private final Condition condition;
  private final Ticker ticker;
  private final WaiterLine line = new WaiterLine();

  BudgetedCondition(BudgetedLock lock, Condition condition, Ticker ticker) {
    this.lock = lock;
    this.condition = condition;
    this.ticker = ticker;
  }

  /**
   * Protego's {@code condvar_wait_if_uncongested}: if this condition's queueing delay exceeds the
   * remaining budget of the request in scope, returns {@code false} at once, still holding the
   * lock, having waited and charged nothing; otherwise waits as {@link #await()} does, charges the
   * wait and returns {@code true}. With no budget in scope it is {@link #await()}.
   *
   * @throws IllegalMonitorStateException if the current thread does not hold the lock
   * @throws InterruptedException if interrupted while waiting (the lock is held again)
   */
  public boolean awaitIfUncongested() throws InterruptedException {
    lock.requireHeld();
    RequestBudget budget = RequestBudget.currentOrNull();
    long now = ticker.read();
    if (budget != null && !budget.fits(line.queueingDelayNanos(now))) {
      return false;
    }
    awaitStamped(now);
    return true;
  }

  /**
   * {@link #awaitIfUncongested()} that throws instead of returning {@code false}.
   *
   * @throws BudgetExceededException (without a stack trace) if the condition's queueing delay
   *     exceeds the remaining budget; the lock is still held then
   */
  public void awaitWithinBudget() throws InterruptedException {
    lock.requireHeld();
    RequestBudget budget = RequestBudget.currentOrNull();
    long now = ticker.read();
    if (budget != null) {
      long delay = line.queueingDelayNanos(now);
      if (!budget.fits(delay)) {
        throw new BudgetExceededException(delay, budget.remainingNanos());
      }
    }
    awaitStamped(now);
  }

  @Override
  public void await() throws InterruptedException {
    awaitStamped(ticker.read());
  }

  @Override
  public void awaitUninterruptibly() {
    lock.requireHeld();
    long stamp = ticker.read();
    WaiterLine.Waiter waiter = line.join(stamp);
    try {
      condition.awaitUninterruptibly();
    } finally {
      line.leave(waiter);
      WaiterLine.chargeWait(ticker, stamp);
    }
  }

  @Override
  public long awaitNanos(long nanosTimeout) throws InterruptedException {
    lock.requireHeld();
    long stamp = ticker.read();
    WaiterLine.Waiter waiter = line.join(stamp);
    try {
      return condition.awaitNanos(nanosTimeout);
    } finally {
      line.leave(waiter);
      WaiterLine.chargeWait(ticker, stamp);
    }
  }

  @Override
  public boolean await(long time, TimeUnit unit) throws InterruptedException {
    Objects.requireNonNull(unit, "unit");
    lock.requireHeld();
    long stamp = ticker.read();
    WaiterLine.Waiter waiter = line.join(stamp);
    try {
      return condition.await(time, unit);
    } finally {
      line.leave(waiter);
      WaiterLine.chargeWait(ticker, stamp);
    }
  }

  @Override
  public boolean awaitUntil(Date deadline) throws InterruptedException {
    Objects.requireNonNull(deadline, "deadline");
    lock.requireHeld();
    long stamp = ticker.read();
    WaiterLine.Waiter waiter = line.join(stamp);
    try {
      return condition.awaitUntil(deadline);
    } finally {
      line.leave(waiter);
      WaiterLine.chargeWait(ticker, stamp);
    }
  }

  @Override
  public void signal() {
    condition.signal();
  }

  @Override
  public void signalAll() {
    condition.signalAll();
  }

  /** {@code now − stamp of the oldest waiter}, zero when none waits; lock-free. */
  @Override
  public long queueingDelayNanos(long nowNanos) {
    return line.queueingDelayNanos(nowNanos);
  }

  /** Threads waiting on this condition, read without locking. */
  public int waiters() {
    return line.size();
  }

  private void awaitStamped(long stamp) throws InterruptedException {
    lock.requireHeld();
    WaiterLine.Waiter waiter = line.join(stamp);
    try {
      condition.await();
    } finally {
      line.leave(waiter);
      WaiterLine.chargeWait(ticker, stamp);
    }
  }

}
