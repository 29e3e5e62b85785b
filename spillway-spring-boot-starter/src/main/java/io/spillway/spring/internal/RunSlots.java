package io.spillway.spring.internal;

import io.spillway.api.QueueDelaySignal;
import io.spillway.api.Ticker;
import io.spillway.api.internal.LockWaitEstimator;
import java.util.ArrayDeque;
import java.util.Objects;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * How many admitted servlet requests run at once, and a first-come-first-served queue, with a
 * measured delay, for the rest.
 *
 * <p><b>Why.</b> A servlet container gives every request a thread of a large pool (Tomcat: 200).
 * Requests beyond what the CPUs can run then share them by time slices: each runs slower the more
 * there are, a lock holder is preempted while others wait for it, and the wait is hidden in the
 * kernel's run queue. Breakwater's and Protego's controls assume the server runs about as many
 * requests as it has cores and queues the rest in a queue it can measure (breakwater-osdi20 §3.1,
 * §4: the signal is the oldest waiting request's delay; protego-nsdi23 §3.2: a request refused
 * before it queues past its budget). The slots make that true for a thread-per-request server:
 * admitted requests wait here, in arrival order, and the oldest one's wait is this stage's
 * queueing delay.
 *
 * <p><b>How many.</b> Enough to keep {@code parallelism} CPUs busy, by the utilization law: a
 * request that spends a fraction f of its running time on a CPU (or waiting for one) needs 1/f
 * requests running to fill one CPU. So {@code slots = ⌈parallelism · w / (c + r)⌉}, with w the
 * request's time in its slot less the waits it spent on budgeted locks (waiting for another
 * request is not a reason to run more of them), c its CPU time and r its run-queue wait, as
 * {@link RunQueueDelay} samples them; w/(c+r) is a 1/8-weighted mean of sampled requests, and the
 * count is kept between {@code parallelism} and the container's thread count. A CPU-bound handler
 * gets {@code parallelism} slots; one that waits 10 ms on a database for 100 µs of CPU gets about
 * a hundred per core. Until a sample arrives the count is the container's thread count, so a
 * service behaves as without slots until they are measured.
 *
 * <p>Cost: an uncontended acquisition and release each take a short private lock; a release that
 * hands its slot to a waiter reads the clock once, for the waiter's wait and the estimator.
 *
 * <p>Thread-safe. A thread holds at most one slot at a time.
 */
public final class RunSlots implements QueueDelaySignal {

  static final int WEIGHT_SHIFT = 3;

  private final Ticker ticker;
  private final int minimum;
  private final int maximum;
  private final ReentrantLock lock = new ReentrantLock();
  /** Waiting threads, oldest first; guarded by {@link #lock}. */
  private final ArrayDeque<Waiter> waiting = new ArrayDeque<>();
  /** Slots held; guarded by {@link #lock}. */
  private int running;
  private volatile int slots;
  /** The oldest waiter's stamp, or {@link Long#MIN_VALUE} when nobody waits. */
  private volatile long oldestStamp = Long.MIN_VALUE;
  /** The mean of w / (c + r), as a fixed-point number with 16 fractional bits; 0: no sample. */
  private volatile long meanRatio;

  private static final ThreadLocal<Waiter> WAITER = ThreadLocal.withInitial(Waiter::new);

  private static final class Waiter {
    Thread thread;
    long stamp;
    long grantedAt;
    volatile boolean granted;
  }

  /** The wait a request joining the queue should expect; fed at each hand-off, under lock. */
  private final LockWaitEstimator waits = new LockWaitEstimator();

  /**
   * @param parallelism the CPUs the requests share: the fewest slots
   * @param threads the container's threads: the most slots, and the count before any sample
   */
  public RunSlots(Ticker ticker, int parallelism, int threads) {
    if (parallelism < 1 || threads < parallelism) {
      throw new IllegalArgumentException("need 1 <= parallelism <= threads: " + parallelism + ", "
          + threads);
    }
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    this.minimum = parallelism;
    this.maximum = threads;
    this.slots = threads;
  }

  /**
   * Takes a slot, waiting for one in arrival order if none is free, unless the wait to expect
   * exceeds {@code budgetNanos}: then returns -1 at once and holds nothing (Protego's rule for a
   * queue a request cannot afford, protego-nsdi23 §3.2). The wait to expect is a {@link
   * LockWaitEstimator}'s, as for a budgeted lock: the slots are a lock that several may hold, and
   * their hand-off interval is how long the queue takes to move one place. Otherwise returns how
   * long it waited, and the caller must {@link #release} the slot.
   *
   * @param nowNanos the clock at arrival (the caller's admission reading)
   * @param budgetNanos the request's remaining queueing budget, {@link Long#MAX_VALUE} for none
   */
  public long acquire(long nowNanos, long budgetNanos) {
    Waiter w;
    lock.lock();
    try {
      if (running < slots && waiting.isEmpty()) {
        running++;
        return 0;
      }
      long oldest = oldestStamp;
      if (oldest != Long.MIN_VALUE
          && waits.waitNanos(nowNanos - oldest, waiting.size()) > budgetNanos) {
        return -1;
      }
      w = WAITER.get();
      w.thread = Thread.currentThread();
      w.stamp = nowNanos;
      w.granted = false;
      waiting.addLast(w);
      if (waiting.size() == 1) {
        oldestStamp = nowNanos;
      }
    } finally {
      lock.unlock();
    }
    boolean interrupted = false;
    while (!w.granted) {
      LockSupport.park(this);
      interrupted |= Thread.interrupted(); // a slot is not given up for an interrupt
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
    return Math.max(0, w.grantedAt - w.stamp);
  }

  /** Gives back a slot {@link #acquire} returned, to the oldest waiter if there is one. */
  public void release() {
    Thread next = null;
    lock.lock();
    try {
      if (running <= slots && !waiting.isEmpty()) {
        next = grantOldest(ticker.read()); // the slot passes on: running stays the same
      } else {
        running--;
      }
    } finally {
      lock.unlock();
    }
    if (next != null) {
      LockSupport.unpark(next);
    }
  }

  /**
   * Folds in one sampled request: {@code inSlotNanos} from slot to release, {@code blockedOnLocks}
   * of it spent waiting on budgeted locks, {@code cpuNanos} on a CPU and {@code runQueueNanos}
   * waiting for one. Called outside the slot.
   */
  public void observe(long inSlotNanos, long blockedOnLocksNanos, long cpuNanos,
      long runQueueNanos) {
    long busy = cpuNanos + runQueueNanos;
    if (busy <= 0 || inSlotNanos <= 0) {
      return;
    }
    long w = Math.max(busy, inSlotNanos - Math.max(0, blockedOnLocksNanos));
    long ratio = (long) Math.min((double) w / busy * (1 << 16), (double) maximum * (1 << 16));
    long m = meanRatio;
    long next = m == 0 ? ratio : m + ((ratio - m) >> WEIGHT_SHIFT); // racing samples: one may be lost
    meanRatio = next;
    int target = (int) Math.min(maximum,
        Math.max(minimum, (minimum * next + (1 << 16) - 1) >> 16));
    if (target != slots) {
      resize(target);
    }
  }

  private void resize(int target) {
    Thread[] wake = null;
    int n = 0;
    lock.lock();
    try {
      slots = target;
      long now = 0;
      while (running < target && !waiting.isEmpty()) {
        if (wake == null) {
          wake = new Thread[Math.min(waiting.size(), target - running)];
          now = ticker.read();
        }
        running++;
        wake[n++] = grantOldest(now);
      }
    } finally {
      lock.unlock();
    }
    for (int i = 0; i < n; i++) {
      LockSupport.unpark(wake[i]);
    }
  }

  /**
   * Hands a slot to the oldest waiter at {@code nowNanos}, republishes the oldest stamp and
   * returns the thread to wake; under lock, so hand-offs reach the estimator in order.
   */
  private Thread grantOldest(long nowNanos) {
    Waiter next = waiting.pollFirst();
    Waiter after = waiting.peekFirst();
    oldestStamp = after == null ? Long.MIN_VALUE : after.stamp;
    waits.onQueuedAcquire(next.stamp, nowNanos);
    Thread t = next.thread;
    next.grantedAt = nowNanos;
    next.granted = true;
    return t;
  }

  /** The slots requests may hold now. */
  public int slots() {
    return slots;
  }

  /** Slots held now. */
  public int running() {
    lock.lock();
    try {
      return running;
    } finally {
      lock.unlock();
    }
  }

  /** Requests waiting for a slot now. */
  public int waiting() {
    lock.lock();
    try {
      return waiting.size();
    } finally {
      lock.unlock();
    }
  }

  /** The oldest waiting request's wait at {@code nowNanos}; zero when none waits. */
  @Override
  public long queueingDelayNanos(long nowNanos) {
    long oldest = oldestStamp;
    return oldest == Long.MIN_VALUE ? 0 : Math.max(0, nowNanos - oldest);
  }
}
