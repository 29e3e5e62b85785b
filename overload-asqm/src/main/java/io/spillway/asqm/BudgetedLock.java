package io.spillway.asqm;

import io.spillway.api.BudgetExceededException;
import io.spillway.api.LockWaitRule;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.RequestBudget;
import io.spillway.api.Ticker;
import io.spillway.api.internal.LockWaitEstimator;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A reentrant mutual-exclusion lock that knows how long its oldest waiter has been queueing, and
 * can refuse a request whose remaining queueing budget that delay already exceeds: Protego's
 * Active Synchronization Queue Management (protego-nsdi23 §3.2, §4 {@code
 * mutex_lock_if_uncongested}).
 *
 * <h2>Contract</h2>
 *
 * <p>{@link #lock}, {@link #lockInterruptibly}, {@link #tryLock()}, {@link #tryLock(long,
 * TimeUnit)}, {@link #unlock} and {@link #newCondition} behave as {@link ReentrantLock}'s do,
 * fairness option included (it is a drop-in replacement): same reentrancy, same exceptions, same
 * interruption and condition semantics. On top of that:
 *
 * <ul>
 *   <li>{@link #lockIfUncongested()}: if the wait this lock makes a newcomer expect exceeds the
 *       remaining budget of the request in scope ({@link RequestBudget#currentOrNull()}), returns
 *       {@code false} at once, without queueing; otherwise waits like {@link #lock()} and returns
 *       {@code true}. With no budget in scope it is {@link #lock()}. The expected wait is never
 *       less than the paper's queueing delay ({@code now − enqueue time of its oldest waiter},
 *       zero when nobody waits), so every request the paper refuses is refused; by default it
 *       also counts the queue's length ({@link LockWaitRule#QUEUE_AWARE}, which says why), and {@link
 *       #BudgetedLock(Ticker, boolean, LockWaitRule)} with {@code OLDEST_WAITER} makes
 *       it the paper's alone.
 *   <li>{@link #acquireWithinBudget()}: the same decision for try-with-resources; throws a cheap
 *       {@link BudgetExceededException} instead of returning {@code false}.
 *   <li>Every wait (any acquisition form, and conditions' awaits) is charged to the budget in
 *       scope, if any: {@code budget.charge(acquiredAt − enqueuedAt)}.
 * </ul>
 *
 * <p>Use {@link #lock()} (or {@link #acquire()}) where the caller must not abort — maintenance,
 * freeing memory of a dropped request — as Protego keeps {@code mutex_lock} for those. There are
 * no per-lock parameters: the decision needs only the lock's delay and the request's budget.
 *
 * <h2>Cost</h2>
 *
 * <p>An uncontended acquisition is one CAS, as for {@link ReentrantLock} (a fair lock also reads
 * the queue head first); the clock is read only on the way into the wait queue and once more on
 * the way out. Waiters are stamped in a {@link WaiterLine} beside the lock, so the delay is read
 * lock-free ({@link #queueingDelayNanos}); this lock is also a {@link QueueDelaySignal}, which
 * gives the per-lock delay Protego §4 suggests measuring to find contended locks.
 *
 * <h2>Clock</h2>
 *
 * <p>The ticker is injected per lock ({@link #BudgetedLock(Ticker, boolean)}); the no-ticker
 * constructors use {@link Ticker#system()}. A per-lock clock rather than a static default keeps
 * tests and the simulator (which run many virtual clocks in one JVM) independent, and is not a
 * tuning knob: it must be the clock the server's budgets are measured with.
 *
 * <p>Limitation: a thread re-acquiring the lock after a condition wait queues inside the
 * underlying {@link ReentrantLock} and is not counted as a lock waiter (its condition wait is
 * counted by the {@link BudgetedCondition}).
 *
 * <p><b>Thread-safety:</b> thread-safe, like any lock. The budget in scope belongs to the calling
 * thread's request and is charged on that thread.
 */
public final class BudgetedLock implements Lock, QueueDelaySignal {

  /*
   * Design notes.
   *
   * [1] Protego (NSDI '23) §3.2: a request's queueing budget = target delay − p99 service −
   *     p99 network; ASQM drops the request at a lock when the lock's queueing delay exceeds
   *     what is left, so the client learns within the target delay. §4: the delay is "the
   *     difference between the current timestamp and the enqueue timestamp of the oldest
   *     thread in the waiter queue".
   * [2] The comparison is delay > remaining (RequestBudget.fits is delay <= remaining), taken
   *     before queueing: a request that is refused has not waited, so nothing is charged. The
   *     delay is LockWaitEstimator's: at least [1]'s, plus what the queue's length says.
   * [3] The lock itself is a ReentrantLock: its AQS queue gives the exact Lock contract; the
   *     WaiterLine only records who waits since when. A thread joins the line before it may
   *     park and leaves it after it has the lock (or gave up), so the line is a superset of
   *     the AQS queue's threads, off by the instants around parking.
   * [4] A waiter that acquires reads the clock once: the same reading charges its budget and
   *     gives the estimator its hand-off sample (it holds the lock then, as the estimator needs).
   */

  private static final long ADMITTED = -1;

  static {
    // Load and initialise the JFR event classes with this class: left to the first contended
    // acquisition, racing waiters would queue on the event class's initialisation and show up
    // as a monitor contention of their own (which ContendedLockFinder would then report).
    new BudgetedLockWaitEvent();
    new BudgetedLockAbortEvent();
  }

  private final ReentrantLock lock;
  private final boolean fair;
  private final Ticker ticker;
  private final WaiterLine line = new WaiterLine();
  private final LockWaitEstimator waits;
  private final String name;

  /** A non-fair lock on the system clock. */
  public BudgetedLock() {
    this(Ticker.system(), false);
  }

  /**
   * A non-fair lock on the system clock with a name, which its JFR events
   * ({@code io.spillway.BudgetedLockWait}) carry so a recording says which lock requests waited for.
   */
  public BudgetedLock(String name) {
    this(name, Ticker.system(), false, LockWaitRule.QUEUE_AWARE);
  }

  /** As {@link #BudgetedLock(String)}, its waiters stamped with {@code ticker}. */
  public BudgetedLock(String name, Ticker ticker) {
    this(name, ticker, false, LockWaitRule.QUEUE_AWARE);
  }

  /** A lock with the given fairness policy (see {@link ReentrantLock#ReentrantLock(boolean)}). */
  public BudgetedLock(boolean fair) {
    this(Ticker.system(), fair);
  }

  /** A non-fair lock whose waiters are stamped with {@code ticker}. */
  public BudgetedLock(Ticker ticker) {
    this(ticker, false);
  }

  /**
   * A lock with the given fairness policy whose waiters are stamped with {@code ticker}, the
   * clock the requests' budgets are measured with.
   */
  public BudgetedLock(Ticker ticker, boolean fair) {
    this(ticker, fair, LockWaitRule.QUEUE_AWARE);
  }

  /**
   * As {@link #BudgetedLock(Ticker, boolean)}, deciding with {@code rule}: {@link
   * LockWaitRule#OLDEST_WAITER} reproduces the paper's check exactly (for experiments);
   * the default, {@link LockWaitRule#QUEUE_AWARE}, also counts the queue's length.
   */
  public BudgetedLock(Ticker ticker, boolean fair, LockWaitRule rule) {
    this(null, ticker, fair, rule);
  }

  /** The fullest form: {@code name} may be {@code null} (events then name the lock by identity). */
  public BudgetedLock(String name, Ticker ticker, boolean fair, LockWaitRule rule) {
    this.name = name;
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    this.fair = fair;
    this.lock = new ReentrantLock(fair);
    this.waits = new LockWaitEstimator(rule);
  }

  // ---- Lock --------------------------------------------------------------------------------

  /** Acquires the lock, waiting as long as it takes; the wait is charged to a budget in scope. */
  @Override
  public void lock() {
    if (!tryFast()) {
      lockQueued(ticker.read());
    }
  }

  @Override
  public void lockInterruptibly() throws InterruptedException {
    if (Thread.interrupted()) {
      throw new InterruptedException();
    }
    if (tryFast()) {
      return;
    }
    long stamp = ticker.read();
    BudgetedLockWaitEvent event = new BudgetedLockWaitEvent();
    event.begin();
    WaiterLine.Waiter waiter = line.join(stamp);
    boolean acquired = false;
    try {
      lock.lockInterruptibly();
      acquired = true;
    } finally {
      leaveLine(waiter, stamp, acquired);
    }
    commitWait(event);
  }

  /**
   * Acquires the lock if it is free now, even if the lock is fair and others wait (as {@link
   * ReentrantLock#tryLock()}). Never waits, never reads the clock.
   */
  @Override
  public boolean tryLock() {
    return lock.tryLock();
  }

  @Override
  public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
    Objects.requireNonNull(unit, "unit");
    if (Thread.interrupted()) {
      throw new InterruptedException();
    }
    if (tryFast()) {
      return true;
    }
    if (time <= 0) {
      return false;
    }
    long stamp = ticker.read();
    BudgetedLockWaitEvent event = new BudgetedLockWaitEvent();
    event.begin();
    WaiterLine.Waiter waiter = line.join(stamp);
    boolean acquired = false;
    try {
      acquired = lock.tryLock(time, unit);
    } finally {
      leaveLine(waiter, stamp, acquired);
    }
    if (acquired) {
      commitWait(event);
    }
    return acquired;
  }

  /**
   * Releases one hold of the lock.
   *
   * @throws IllegalMonitorStateException if the current thread does not hold this lock
   */
  @Override
  public void unlock() {
    lock.unlock();
  }

  /** A condition bound to this lock, whose waits are stamped and can be budgeted. */
  @Override
  public BudgetedCondition newCondition() {
    return new BudgetedCondition(this, lock.newCondition(), ticker);
  }

  // ---- ASQM --------------------------------------------------------------------------------

  /**
   * Protego's {@code mutex_lock_if_uncongested}: acquires the lock unless its expected wait (at
   * least its queueing delay; {@link #expectedWaitNanos}) exceeds the remaining budget of the
   * request in scope. Returns {@code false} at once, without queueing and without charging
   * anything, if it does; otherwise waits uninterruptibly,
   * acquires, charges the wait and returns {@code true}. Immediate when the lock is free or
   * already held by this thread; with no budget in scope it behaves exactly as {@link #lock()}.
   */
  public boolean lockIfUncongested() {
    return acquireUnlessCongested(RequestBudget.currentOrNull()) == ADMITTED;
  }

  /**
   * {@link #lockIfUncongested()} for try-with-resources: {@code try (var _ =
   * lock.acquireWithinBudget()) { ... }}; the lock is released when the block exits, also when a
   * nested budgeted acquisition aborts the request.
   *
   * @throws BudgetExceededException (without a stack trace) if the lock's queueing delay exceeds
   *     the remaining budget; the lock is not held then
   */
  public Held acquireWithinBudget() {
    RequestBudget budget = RequestBudget.currentOrNull();
    long rejectedDelay = acquireUnlessCongested(budget);
    if (rejectedDelay != ADMITTED) {
      throw new BudgetExceededException(rejectedDelay, budget.remainingNanos());
    }
    return new Held(this);
  }

  /** {@link #lock()} for try-with-resources, for code that must not abort. */
  public Held acquire() {
    lock();
    return new Held(this);
  }

  /**
   * This lock's queueing delay at {@code nowNanos}: {@code nowNanos − enqueue stamp of the oldest
   * waiter}, zero when nobody waits. Lock-free; read it with this lock's ticker.
   */
  @Override
  public long queueingDelayNanos(long nowNanos) {
    return line.queueingDelayNanos(nowNanos);
  }

  /**
   * The wait ASQM expects for a request that queues now, with this lock held: the lock's {@link
   * LockWaitRule} applied to the current queueing delay and line length. Lock-free.
   */
  public long expectedWaitNanos(long nowNanos) {
    WaiterLine.Head head = line.head();
    return waits.waitNanos(head.queueingDelayNanos(nowNanos), head.size());
  }

  /** Threads waiting to acquire (stamped in the waiter line), read without locking. */
  public int waiters() {
    return line.size();
  }

  // ---- ReentrantLock's introspection -------------------------------------------------------

  /** Whether any thread holds this lock. */
  public boolean isLocked() {
    return lock.isLocked();
  }

  /** Whether the current thread holds this lock. */
  public boolean isHeldByCurrentThread() {
    return lock.isHeldByCurrentThread();
  }

  /** The current thread's holds on this lock, zero if it does not hold it. */
  public int getHoldCount() {
    return lock.getHoldCount();
  }

  /** Whether this lock is fair. */
  public boolean isFair() {
    return fair;
  }

  /** Whether {@code thread} is waiting to acquire this lock (see {@link ReentrantLock}). */
  public boolean hasQueuedThread(Thread thread) {
    return lock.hasQueuedThread(thread);
  }

  /** The name given at construction, or {@code BudgetedLock@<identity hash>}. */
  public String name() {
    return name != null ? name : "BudgetedLock@" + Integer.toHexString(System.identityHashCode(this));
  }

  @Override
  public String toString() {
    return "BudgetedLock[" + (name != null ? name + ", " : "") + (lock.isLocked() ? "locked" : "unlocked") + ", waiters="
        + line.size() + (fair ? ", fair" : "") + "]";
  }

  // ---- internals ---------------------------------------------------------------------------

  /** A free lock, or a reentrant acquisition: one CAS, no clock. */
  private boolean tryFast() {
    if (fair && lock.hasQueuedThreads() && !lock.isHeldByCurrentThread()) {
      return false;
    }
    return lock.tryLock();
  }

  /** Returns {@link #ADMITTED} holding the lock, or the delay that did not fit the budget. */
  private long acquireUnlessCongested(RequestBudget budget) {
    if (tryFast()) {
      return ADMITTED;
    }
    long now = ticker.read();
    if (budget != null) {
      WaiterLine.Head head = line.head();
      long delay = waits.waitNanos(head.queueingDelayNanos(now), head.size());
      if (!budget.fits(delay)) {
        BudgetedLockAbortEvent event = new BudgetedLockAbortEvent();
        if (event.isEnabled()) {
          event.lockName = name();
          event.expectedWait = delay;
          event.remainingBudget = budget.remainingNanos();
          event.commit();
        }
        return delay;
      }
    }
    lockQueued(now);
    return ADMITTED;
  }

  private void lockQueued(long stamp) {
    BudgetedLockWaitEvent event = new BudgetedLockWaitEvent();
    event.begin();
    WaiterLine.Waiter waiter = line.join(stamp);
    boolean acquired = false;
    try {
      lock.lock();
      acquired = true;
    } finally {
      leaveLine(waiter, stamp, acquired);
    }
    commitWait(event);
  }

  /** Ends a contended acquisition's wait event, begun before joining the line, and commits it. */
  private void commitWait(BudgetedLockWaitEvent event) {
    event.end();
    if (event.shouldCommit()) {
      RequestBudget budget = RequestBudget.currentOrNull();
      event.lockName = name();
      event.remainingBudget = budget != null ? budget.remainingNanos() : Long.MAX_VALUE;
      event.commit();
    }
  }

  /**
   * A waiter stamped {@code stamp} leaves the line, holding the lock if {@code acquired}: then one
   * clock read gives the estimator its hand-off sample (it must hold the lock) and charges the
   * budget in scope; otherwise only the budget is charged for the time it waited.
   */
  private void leaveLine(WaiterLine.Waiter waiter, long stamp, boolean acquired) {
    line.leave(waiter);
    if (!acquired) {
      WaiterLine.chargeWait(ticker, stamp);
      return;
    }
    long now = ticker.read();
    waits.onQueuedAcquire(stamp, now);
    RequestBudget budget = RequestBudget.currentOrNull();
    if (budget != null) {
      budget.charge(now - stamp);
    }
  }


  void requireHeld() {
    if (!lock.isHeldByCurrentThread()) {
      throw new IllegalMonitorStateException("the current thread does not hold " + this);
    }
  }

  /**
   * One hold of a {@link BudgetedLock}, released by {@link #close()}; closing it again is a no-op.
   *
   * <p>Not thread-safe: it belongs to the thread that acquired it, which must be the one that
   * closes it (as with {@link #unlock()}).
   */
  public static final class Held implements AutoCloseable {
    private final BudgetedLock owner;
    private boolean released;

    private Held(BudgetedLock owner) {
      this.owner = owner;
    }

    /**
     * Releases the hold (once).
     *
     * @throws IllegalMonitorStateException if the current thread does not hold the lock; the hold
     *     is then still the owner's to close
     */
    @Override
    public void close() {
      if (!released) {
        owner.unlock(); // first: a refused close must leave the hold to its owner
        released = true;
      }
    }
  }
}
