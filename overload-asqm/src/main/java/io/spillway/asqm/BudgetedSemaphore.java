package io.spillway.asqm;

import io.spillway.api.BudgetExceededException;
import io.spillway.api.LockWaitRule;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.RequestBudget;
import io.spillway.api.Ticker;
import io.spillway.api.internal.LockWaitEstimator;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.AbstractQueuedSynchronizer;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A counting semaphore of a number of permits — a connection pool's slots, a bulkhead —
 * whose queue knows how long its oldest waiter has been waiting, and which can refuse a request
 * whose remaining queueing budget that queue would outlast: Protego's Active Synchronization Queue
 * Management (protego-nsdi23 §3.2) applied to a pool, one of the "other queues for contended
 * blocking interfaces" §3.2 names, with {@link BudgetedLock}'s decision rule.
 *
 * <h2>Contract</h2>
 *
 * <ul>
 *   <li>{@link #acquireWithinBudget()}: takes a permit unless the wait this semaphore makes a
 *       newcomer expect ({@link #expectedWaitNanos}) exceeds the remaining budget of the request in
 *       scope ({@link RequestBudget#currentOrNull()}); then it throws a cheap {@link
 *       BudgetExceededException} at once, without queueing and without charging anything.
 *       Otherwise it waits (uninterruptibly) and returns a {@link Permit} for try-with-resources.
 *       With a permit free, or no budget in scope, it never refuses. Protego §4's {@code
 *       mutex_lock_if_uncongested} for a semaphore.
 *   <li>{@link #acquire()}: waits as long as it takes, never refused, for work that must not
 *       abort (Protego §4 keeps {@code mutex_lock} for those).
 *   <li>{@link #tryAcquire()} and {@link #tryAcquire(long, TimeUnit)} as {@link
 *       java.util.concurrent.Semaphore}'s (non-fair: a free permit is taken even while others
 *       wait); {@link #release()} returns one permit.
 *   <li>Every wait, in any acquisition form, is charged to the budget in scope, if any: {@code
 *       budget.charge(acquiredAt − enqueuedAt)} (§3.2: "after the request is dequeued, it deducts
 *       the queueing delay it incurred from its budget").
 *   <li>The free permits never exceed the number of permits (given at construction, or by
 *       {@link #setPermits} when the pool is resized): a {@link #release()} without a matching
 *       acquisition throws {@link IllegalStateException} (a pool that grew a phantom slot would
 *       admit more connections than the database serves).
 * </ul>
 *
 * <h2>A newcomer's expected wait with N permits</h2>
 *
 * <p>The estimate is {@link BudgetedLock}'s ({@link LockWaitRule#QUEUE_AWARE}), unchanged: the
 * larger of the queueing delay ({@code now − stamp of the oldest waiter}, Protego §4) and {@code
 * n·h + 2σ·(sqrt(n + 1) − 1)} for {@code n} waiters, {@code h} and {@code σ} the mean and spread of the measured hand-off
 * interval. What changes with N is what that interval is, and the estimator measures it directly:
 * it is the time between two successive acquisitions by waiters, taken only when the second was
 * already queued at the first, so that all N permits were in use throughout (a waiter queues only
 * when none is free). With N holders each holding for {@code S} on average, permits come back
 * about every {@code S/N}, so the sample is {@code ≈ S/N}, not {@code S}. A newcomer behind
 * {@code n} waiters, the permits all taken, is served at the {@code (n+1)}-th release from now:
 * about {@code n·S/N} plus the time to the next release — the same sum of {@code n + 1}
 * inter-release intervals the estimator already bounds for a lock. Dividing by N again would count
 * the parallelism twice; the literal cases in {@code BudgetedSemaphoreTest} show a 3-permit pool
 * whose holders each hold 6,000 ns expecting 2,000 ns per waiter ahead. With nobody waiting the
 * estimate is zero, as for a lock, even when every permit is held: the paper's queueing delay is
 * zero then too, and a request that meets an empty queue waits at most one hold.
 *
 * <p>Because holders release in any order and concurrently, unlike a lock's, the estimator's
 * samples (which it needs serialised) are taken under a small private lock, on the slow path only,
 * with the clock read inside it so that samples arrive in time order.
 *
 * <h2>Cost</h2>
 *
 * <p>An uncontended {@link #acquireWithinBudget()}, {@link #acquire()} or {@link #tryAcquire()} is
 * one CAS on the permit count and no clock read, as {@link java.util.concurrent.Semaphore}'s; the
 * {@link Permit} handle is one small allocation, and its {@link Permit#close()} one more CAS to
 * make it idempotent. The clock is read on the way into the wait queue and once on the way out.
 * Waiters are stamped in a {@link WaiterLine}, so the delay is read lock-free ({@link
 * #queueingDelayNanos}); this semaphore is a {@link QueueDelaySignal}.
 *
 * <p>There are no per-semaphore parameters beyond the permit count (§3.2: "no per-queue parameter
 * setting"). The ticker must be the clock the requests' budgets are measured with.
 *
 * <p><b>Thread-safety:</b> thread-safe. A permit may be released by a thread other than the one
 * that took it (as with {@link java.util.concurrent.Semaphore}). The budget in scope belongs to
 * the calling thread's request and is charged on that thread.
 */
public final class BudgetedSemaphore implements QueueDelaySignal {

  /*
   * Design notes.
   *
   * [1] The permit count is an AQS shared state, as java.util.concurrent.Semaphore's, written
   *     here so that release can refuse to exceed the number of permits (Semaphore's grows).
   * [2] A thread joins the WaiterLine before it may park and leaves it after it has a permit
   *     (or gave up), so the line is a superset of the AQS queue's threads, off by the instants
   *     around parking — as in BudgetedLock.
   * [3] The decision is taken before queueing: a refused request has not waited, so nothing is
   *     charged (RequestBudget.fits is delay <= remaining).
   */

  private final Sync sync;
  private final Ticker ticker;
  private final WaiterLine line = new WaiterLine();
  private final LockWaitEstimator waits;
  private final ReentrantLock sampling = new ReentrantLock();

  /** A semaphore of {@code permits} on the system clock. */
  public BudgetedSemaphore(int permits) {
    this(permits, Ticker.system());
  }

  /** A semaphore of {@code permits} whose waiters are stamped with {@code ticker}. */
  public BudgetedSemaphore(int permits, Ticker ticker) {
    this(permits, ticker, LockWaitRule.QUEUE_AWARE);
  }

  /**
   * As {@link #BudgetedSemaphore(int, Ticker)}, deciding with {@code rule}: {@link
   * LockWaitRule#OLDEST_WAITER} is the paper's check alone (for experiments).
   *
   * @throws IllegalArgumentException if {@code permits < 1}
   */
  public BudgetedSemaphore(int permits, Ticker ticker, LockWaitRule rule) {
    if (permits < 1) {
      throw new IllegalArgumentException("permits must be at least 1: " + permits);
    }
    this.sync = new Sync(permits);
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    this.waits = new LockWaitEstimator(rule);
  }

  // ---- acquisition -------------------------------------------------------------------------

  /**
   * Takes a permit unless the expected wait exceeds the remaining budget in scope; waits
   * uninterruptibly otherwise (as {@link BudgetedLock#acquireWithinBudget()}).
   *
   * @throws BudgetExceededException (without a stack trace) if the expected wait ({@link
   *     #expectedWaitNanos}) exceeds the remaining budget; no permit is taken then
   */
  public Permit acquireWithinBudget() {
    if (sync.tryTake()) {
      return new Permit(this);
    }
    long now = ticker.read();
    refuseIfOverBudget(now);
    acquireQueued(now);
    return new Permit(this);
  }

  /** Throws if the expected wait at {@code now} exceeds the remaining budget in scope, if any. */
  private void refuseIfOverBudget(long now) {
    RequestBudget budget = RequestBudget.currentOrNull();
    if (budget != null) {
      WaiterLine.Head head = line.head();
      long delay = waits.waitNanos(head.queueingDelayNanos(now), head.size());
      if (!budget.fits(delay)) {
        throw new BudgetExceededException(delay, budget.remainingNanos());
      }
    }
  }

  /**
   * As {@link #acquireWithinBudget()}, but waits at most {@code timeout} and answers interrupts:
   * for a resource whose holders may never give it back (a pool's leaked connection), where a
   * wait must end as the resource's own would have.
   *
   * @return the permit, or {@code null} if none came free within {@code timeout}
   * @throws BudgetExceededException (without a stack trace) if the expected wait exceeds the
   *     remaining budget; no permit is taken then
   * @throws InterruptedException if interrupted before or while waiting; no permit is taken then
   */
  public Permit acquireWithinBudget(long timeout, TimeUnit unit) throws InterruptedException {
    Objects.requireNonNull(unit, "unit");
    if (Thread.interrupted()) {
      throw new InterruptedException();
    }
    if (sync.tryTake()) {
      return new Permit(this);
    }
    long now = ticker.read();
    refuseIfOverBudget(now);
    return timeout > 0 && acquireQueued(now, unit.toNanos(timeout)) ? new Permit(this) : null;
  }

  /** Takes a permit, waiting uninterruptibly as long as it takes; the wait is charged. */
  public Permit acquire() {
    if (!sync.tryTake()) {
      acquireQueued(ticker.read());
    }
    return new Permit(this);
  }

  /**
   * Takes a permit, waiting until one is free or the thread is interrupted; the wait is charged.
   *
   * @throws InterruptedException if interrupted before or while waiting; no permit is taken then
   */
  public Permit acquireInterruptibly() throws InterruptedException {
    if (Thread.interrupted()) {
      throw new InterruptedException();
    }
    if (sync.tryTake()) {
      return new Permit(this);
    }
    long stamp = ticker.read();
    WaiterLine.Waiter waiter = line.join(stamp);
    boolean acquired = false;
    try {
      sync.acquireSharedInterruptibly(1);
      acquired = true;
    } finally {
      leaveLine(waiter, stamp, acquired);
    }
    return new Permit(this);
  }

  /** Takes a permit if one is free now, even if others wait; never waits, never reads the clock. */
  public boolean tryAcquire() {
    return sync.tryTake();
  }

  /**
   * Takes a permit if one becomes free within {@code timeout} (as {@link
   * java.util.concurrent.Semaphore#tryAcquire(long, TimeUnit)}); the wait is charged.
   *
   * @throws InterruptedException if interrupted before or while waiting
   */
  public boolean tryAcquire(long timeout, TimeUnit unit) throws InterruptedException {
    Objects.requireNonNull(unit, "unit");
    if (Thread.interrupted()) {
      throw new InterruptedException();
    }
    if (sync.tryTake()) {
      return true;
    }
    return timeout > 0 && acquireQueued(ticker.read(), unit.toNanos(timeout));
  }

  /**
   * Returns one permit taken by {@link #tryAcquire} (a {@link Permit} returns its own on {@link
   * Permit#close()}; do not release it here as well).
   *
   * @throws IllegalStateException if every permit is already free
   */
  public void release() {
    sync.releaseShared(1);
  }

  // ---- ASQM --------------------------------------------------------------------------------

  /**
   * This semaphore's queueing delay at {@code nowNanos}: {@code nowNanos − enqueue stamp of the
   * oldest waiter}, zero when nobody waits (Protego §4). Lock-free; read it with this ticker.
   */
  @Override
  public long queueingDelayNanos(long nowNanos) {
    return line.queueingDelayNanos(nowNanos);
  }

  /**
   * The wait a request that queues now should expect (class comment): the semaphore's {@link
   * LockWaitRule} applied to the queueing delay and the number of waiters. Lock-free.
   */
  public long expectedWaitNanos(long nowNanos) {
    WaiterLine.Head head = line.head();
    return waits.waitNanos(head.queueingDelayNanos(nowNanos), head.size());
  }

  /** Threads waiting for a permit (stamped in the waiter line), read without locking. */
  public int waiters() {
    return line.size();
  }

  /** Permits free now. */
  public int availablePermits() {
    return sync.available();
  }

  /** The number of permits: the one given at construction, or the last {@link #setPermits}. */
  public int permits() {
    return sync.limit;
  }

  /**
   * Makes the number of permits {@code permits}, as a connection pool resized at run time (for
   * example HikariCP's {@code setMaximumPoolSize} over JMX) changes its slots. More permits are free
   * at once and wake as many waiters. Fewer take effect as permits come back: the holders keep
   * theirs, and the free count stays below zero until enough have been returned, so at no time
   * are more permits out than the new number allows once the holders above it are done. Resizes
   * are serialized; acquisitions and releases go on during one.
   *
   * @throws IllegalArgumentException if {@code permits < 1}
   */
  public void setPermits(int permits) {
    if (permits < 1) {
      throw new IllegalArgumentException("permits must be at least 1: " + permits);
    }
    sync.resize(permits);
  }

  /** Whether {@code thread} is parked waiting for a permit. */
  public boolean hasQueuedThread(Thread thread) {
    return sync.isQueued(thread);
  }

  @Override
  public String toString() {
    return "BudgetedSemaphore[available=" + sync.available() + "/" + sync.limit + ", waiters="
        + line.size() + "]";
  }

  // ---- internals ---------------------------------------------------------------------------

  /** Waits in line, stamped {@code stamp}, at most {@code nanos}; whether it got a permit. */
  private boolean acquireQueued(long stamp, long nanos) throws InterruptedException {
    WaiterLine.Waiter waiter = line.join(stamp);
    boolean acquired = false;
    try {
      acquired = sync.tryAcquireSharedNanos(1, nanos);
      return acquired;
    } finally {
      leaveLine(waiter, stamp, acquired);
    }
  }

  private void acquireQueued(long stamp) {
    WaiterLine.Waiter waiter = line.join(stamp);
    boolean acquired = false;
    try {
      sync.acquireShared(1);
      acquired = true;
    } finally {
      leaveLine(waiter, stamp, acquired);
    }
  }

  /**
   * A waiter stamped {@code stamp} leaves the line. If it has a permit, one clock read under the
   * sampling lock gives the estimator its hand-off sample (in time order) and charges the budget;
   * otherwise only the budget is charged for the time it waited.
   */
  private void leaveLine(WaiterLine.Waiter waiter, long stamp, boolean acquired) {
    line.leave(waiter);
    if (!acquired) {
      WaiterLine.chargeWait(ticker, stamp);
      return;
    }
    long now;
    sampling.lock();
    try {
      now = ticker.read();
      waits.onQueuedAcquire(stamp, now);
    } finally {
      sampling.unlock();
    }
    RequestBudget budget = RequestBudget.currentOrNull();
    if (budget != null) {
      budget.charge(now - stamp);
    }
  }

  /**
   * The free permit count, bounded above by the limit. A resize moves the limit and the count in
   * the order that keeps {@code free <= limit} for every release that has an acquisition behind it:
   * a larger limit is raised before the count, a smaller one lowered after it, so a release never
   * sees a count at a limit it is not yet (or no longer) entitled to.
   */
  private static final class Sync extends AbstractQueuedSynchronizer {
    private static final long serialVersionUID = 1L;

    private volatile int limit;

    Sync(int permits) {
      this.limit = permits;
      setState(permits);
    }

    synchronized void resize(int permits) {
      int delta = permits - limit;
      if (delta > 0) {
        limit = permits;
        add(delta);
        releaseShared(0); // wake as many waiters as there are new permits (tryReleaseShared(0))
      } else if (delta < 0) {
        add(delta);
        limit = permits;
      }
    }

    private void add(int delta) {
      for (;;) {
        int available = getState();
        if (compareAndSetState(available, available + delta)) {
          return;
        }
      }
    }

    int available() {
      return getState();
    }

    boolean tryTake() {
      return tryAcquireShared(1) >= 0;
    }

    @Override
    protected int tryAcquireShared(int ignored) {
      for (;;) {
        int available = getState();
        int remaining = available - 1;
        if (remaining < 0 || compareAndSetState(available, remaining)) {
          return remaining;
        }
      }
    }

    @Override
    protected boolean tryReleaseShared(int permits) {
      if (permits == 0) {
        return true; // a resize added permits: propagate the wake-up
      }
      for (;;) {
        // The limit read on both sides of the count: a resize moves one and then the other, and
        // a count and limit from either side of it could match for a release that has its
        // acquisition (a new count beside the old, smaller limit); only a limit that held still
        // across the count read may refuse.
        int max = limit;
        int available = getState();
        if (available >= max) {
          if (limit != max) {
            continue;
          }
          throw new IllegalStateException("release without an acquisition: all " + max
              + " permits are free");
        }
        if (compareAndSetState(available, available + 1)) {
          return true;
        }
      }
    }
  }

  /**
   * One permit of a {@link BudgetedSemaphore}, returned by {@link #close()}. Closing it again is
   * a no-op, so a handle closed both by a try-with-resources block and by an explicit call (or by
   * a wrapper whose own close may run twice) returns the permit exactly once.
   *
   * <p>Thread-safe: any thread may close it, and concurrent closes return the permit once.
   */
  public static final class Permit implements AutoCloseable {
    private static final VarHandle RELEASED;

    static {
      try {
        RELEASED = MethodHandles.lookup().findVarHandle(Permit.class, "released", boolean.class);
      } catch (ReflectiveOperationException e) {
        throw new ExceptionInInitializerError(e);
      }
    }

    private final BudgetedSemaphore owner;
    private volatile boolean released;

    private Permit(BudgetedSemaphore owner) {
      this.owner = owner;
    }

    /** Whether this permit was returned. */
    public boolean isReleased() {
      return released;
    }

    /** Returns the permit (once). */
    @Override
    public void close() {
      if (RELEASED.compareAndSet(this, false, true)) {
        owner.release();
      }
    }
  }
}
