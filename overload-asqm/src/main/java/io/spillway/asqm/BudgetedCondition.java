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
 * <p>A waiter counts from the moment it starts waiting until it leaves the condition's queue: when
 * it is signalled (by {@link #signal} or {@link #signalAll}), or when it gives up (interrupt,
 * timeout) and has the lock again. A signalled thread that still waits to re-acquire the lock is
 * no longer a waiter here, as Protego measures the condition variable's own waiter queue
 * (protego-nsdi23 §4); it is still charged until it holds the lock.
 *
 * <p><b>Thread-safety:</b> thread-safe; as with any condition, waiting and signalling require
 * holding the lock. {@link #queueingDelayNanos} and {@link #waiters} may be read from any thread.
 */
public final class BudgetedCondition implements Condition, QueueDelaySignal {

  private final BudgetedLock lock;
  private final Condition condition;
  private final Ticker ticker;
  private final WaiterLine line = new WaiterLine();
  // The waiters in the order they joined the underlying condition's queue. Guarded by the lock:
  // a waiter joins holding it, leaves once await has re-acquired it, and signals require it.
  private Member first;
  private Member last;

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
    Member waiter = enter(stamp);
    try {
      condition.awaitUninterruptibly();
    } finally {
      exit(waiter);
      WaiterLine.chargeWait(ticker, stamp);
    }
  }

  @Override
  public long awaitNanos(long nanosTimeout) throws InterruptedException {
    lock.requireHeld();
    long stamp = ticker.read();
    Member waiter = enter(stamp);
    try {
      return condition.awaitNanos(nanosTimeout);
    } finally {
      exit(waiter);
      WaiterLine.chargeWait(ticker, stamp);
    }
  }

  @Override
  public boolean await(long time, TimeUnit unit) throws InterruptedException {
    Objects.requireNonNull(unit, "unit");
    lock.requireHeld();
    long stamp = ticker.read();
    Member waiter = enter(stamp);
    try {
      return condition.await(time, unit);
    } finally {
      exit(waiter);
      WaiterLine.chargeWait(ticker, stamp);
    }
  }

  @Override
  public boolean awaitUntil(Date deadline) throws InterruptedException {
    Objects.requireNonNull(deadline, "deadline");
    lock.requireHeld();
    long stamp = ticker.read();
    Member waiter = enter(stamp);
    try {
      return condition.awaitUntil(deadline);
    } finally {
      exit(waiter);
      WaiterLine.chargeWait(ticker, stamp);
    }
  }

  /**
   * Wakes the longest-waiting thread, as the underlying condition's {@code signal} does; from then
   * on it no longer counts as waiting here ({@link #waiters}, {@link #queueingDelayNanos}).
   *
   * @throws IllegalMonitorStateException if the current thread does not hold the lock
   */
  @Override
  public void signal() {
    condition.signal();
    // The condition moved its first waiter that had not given up to the lock's queue; any older
    // one that gave up is there too. Both have left the condition's queue.
    while (first != null && lock.hasQueuedThread(first.thread)) {
      remove(first);
    }
  }

  /**
   * Wakes every waiting thread, as the underlying condition's {@code signalAll} does; none of them
   * counts as waiting here from then on.
   *
   * @throws IllegalMonitorStateException if the current thread does not hold the lock
   */
  @Override
  public void signalAll() {
    condition.signalAll();
    while (first != null) {
      remove(first);
    }
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

  /** Joins the queue stamped {@code stamp}; the caller holds the lock and will {@link #exit}. */
  private Member enter(long stamp) {
    Member member = new Member(Thread.currentThread(), line.join(stamp));
    member.prev = last;
    if (last == null) {
      first = member;
    } else {
      last.next = member;
    }
    last = member;
    return member;
  }

  /** Leaves the queue after a wait, holding the lock again, unless a signal already removed it. */
  private void exit(Member member) {
    if (!member.removed) {
      remove(member);
    }
  }

  private void remove(Member member) {
    if (member.prev == null) {
      first = member.next;
    } else {
      member.prev.next = member.next;
    }
    if (member.next == null) {
      last = member.prev;
    } else {
      member.next.prev = member.prev;
    }
    member.prev = null;
    member.next = null;
    member.removed = true;
    line.leave(member.stamp);
  }

  /** A thread waiting on this condition, with its stamp in the line. */
  private static final class Member {
    final Thread thread;
    final WaiterLine.Waiter stamp;
    Member prev;
    Member next;
    boolean removed;

    Member(Thread thread, WaiterLine.Waiter stamp) {
      this.thread = thread;
      this.stamp = stamp;
    }
  }

  private void awaitStamped(long stamp) throws InterruptedException {
    lock.requireHeld();
    Member waiter = enter(stamp);
    try {
      condition.await();
    } finally {
      exit(waiter);
      WaiterLine.chargeWait(ticker, stamp);
    }
  }

}
