package io.spillway.api.internal;

import io.spillway.api.LockWaitRule;

/**
 * How long a request that joins a lock's wait queue now would wait: the delay ASQM compares with
 * the request's remaining budget before it queues (protego-nsdi23 §3.2).
 *
 * <p>Two rules:
 *
 * <ul>
 *   <li>{@link LockWaitRule#OLDEST_WAITER}, the paper's (§4 "Queueing delay measurement"): the
 *       lock's queueing delay, {@code now − enqueue time of the oldest waiter}.
 *   <li>{@link LockWaitRule#QUEUE_AWARE}, the default: the larger of that delay and an estimate
 *       from the queue's length, {@code n·h + 2·σ·(sqrt(n + 1) − 1)} for {@code n} waiters,
 *       {@code h} and {@code σ} the mean and standard deviation of the lock's measured hand-off
 *       interval. With nobody waiting it is zero, as the paper's. It refuses every request the
 *       paper's rule refuses, and more.
 * </ul>
 *
 * <p>Why the default differs from the paper. The oldest waiter's age tells how long the head has
 * waited, not how many requests queue behind it: while the age is under the budget every arrival
 * is let in, so when arrivals outpace the lock by λ/μ the queue holds about λ/μ times the budget's
 * worth of work, and the requests at its tail wait that long (the simulator's two-path experiment
 * at 1.4× demand, a 144 µs budget: Protego's p99 264.2 µs against its 200 µs target). The
 * authors' later runtime names the same weakness ("can suffer if a burst of requests are queued
 * at the same time") and adds a queue-length policy, hold time × waiters (Svalinn's {@code
 * cong_aware_mutex}, {@code CONG_AWARE_MUTEX_POLICY_QLEN}): {@code n·h} here. That is the mean
 * wait, and a request admitted at the edge of its budget overruns it half the time. The budget
 * already sets aside the p99 of the request's own service (§3.2), about {@code h + 2σ} in a
 * normal approximation; waiting behind {@code n} holds and then being served is a sum of {@code
 * n + 1} holds, whose spread is {@code 2σ·sqrt(n + 1)}. The second term adds what the set-aside
 * lacks, so the request's whole time in the lock, wait and hold, stays within the budget plus
 * set-aside about as often as its own service alone would. The simulator's two-path experiment
 * measured the alternatives (docs/results/simulation.md).
 *
 * <p>Hand-off interval: when a thread that waited acquires the lock, the time since the previous
 * waiter's acquisition is one sample if this thread was already waiting then. Between the two
 * acquisitions the lock was never free (a waiter was queued), so the interval is how long the queue
 * takes to advance one place, including the hand-off itself and any holder that barged in. Only
 * waiters read the clock, so uncontended acquisitions cost nothing. The mean and the mean absolute
 * deviation are exponentially weighted ({@code 1/16} per sample); {@code σ} is the mean absolute
 * deviation × {@code sqrt(π/2)} (exact for a normal distribution, and less swayed by one long
 * stall than a mean square would be). The first sample assumes the spread of an exponential
 * distribution (mean absolute deviation = 2/e × mean). Until a first sample the estimate is the
 * paper's.
 *
 * <p>Thread-safety: {@link #onQueuedAcquire} must be called by the thread that holds the lock
 * (holders are serialised by the lock); {@link #waitNanos} may be called from any thread at any
 * time and takes no lock. The single-threaded simulator uses the same object.
 */
public final class LockWaitEstimator {

  /** Standard deviations of the queue's total hold time added to its mean. */
  public static final double SIGMAS = 2.0;

  /** Mean absolute deviation of an exponential distribution, per unit of its mean: 2/e. */
  static final double EXPONENTIAL_DEVIATION = 2 / Math.E;

  /** Standard deviation per mean absolute deviation of a normal distribution: sqrt(π/2). */
  static final double NORMAL_SD_PER_MEAN_DEVIATION = Math.sqrt(Math.PI / 2);

  /** Weight of a new hand-off sample in the moving averages. */
  static final double WEIGHT = 1.0 / 16;

  private final LockWaitRule rule;

  // Written by the lock holder only; read lock-free by would-be waiters. A reader may see a new
  // deviation with the old mean (two volatile writes): off by one sample's weight at most.
  private volatile double meanHold;
  private volatile double meanDeviation;
  private boolean sampled; // holder only
  private boolean granted; // holder only
  private long lastGrantNanos; // holder only: previous acquisition by a waiter

  /** An estimator with the {@link LockWaitRule#QUEUE_AWARE} rule. */
  public LockWaitEstimator() {
    this(LockWaitRule.QUEUE_AWARE);
  }

  /** An estimator with the given rule. */
  public LockWaitEstimator(LockWaitRule rule) {
    if (rule == null) {
      throw new NullPointerException("rule");
    }
    this.rule = rule;
  }

  /** The rule this estimator applies. */
  public LockWaitRule rule() {
    return rule;
  }

  /**
   * A thread that waited since {@code enqueuedAtNanos} acquired the lock at {@code
   * acquiredAtNanos}. Call it holding the lock. Ticker values may wrap; only differences count.
   */
  public void onQueuedAcquire(long enqueuedAtNanos, long acquiredAtNanos) {
    if (granted && enqueuedAtNanos - lastGrantNanos <= 0) {
      double interval = Math.max(0, acquiredAtNanos - lastGrantNanos);
      if (!sampled) {
        sampled = true;
        meanDeviation = EXPONENTIAL_DEVIATION * interval;
        meanHold = interval;
      } else {
        meanDeviation += WEIGHT * (Math.abs(interval - meanHold) - meanDeviation);
        meanHold += WEIGHT * (interval - meanHold);
      }
    }
    granted = true;
    lastGrantNanos = acquiredAtNanos;
  }

  /**
   * The wait a request joining the queue now should expect, for a lock that is held, with {@code
   * waiters} threads queued and {@code oldestWaiterDelayNanos} its queueing delay.
   */
  public long waitNanos(long oldestWaiterDelayNanos, int waiters) {
    if (rule == LockWaitRule.OLDEST_WAITER) {
      return oldestWaiterDelayNanos;
    }
    double ahead = Math.max(0, waiters);
    double spread = SIGMAS * holdDeviationNanos() * (Math.sqrt(ahead + 1) - 1);
    double bound = ahead * meanHold + spread;
    return Math.max(oldestWaiterDelayNanos, (long) bound); // the cast saturates, never wraps
  }

  /** Mean hand-off interval measured so far, in nanoseconds; zero before the first sample. */
  public double meanHoldNanos() {
    return meanHold;
  }

  /**
   * Standard deviation of the hand-off interval, in nanoseconds, estimated from the mean absolute
   * deviation ({@code × sqrt(π/2)}, exact for a normal distribution); zero before the first sample.
   */
  public double holdDeviationNanos() {
    return NORMAL_SD_PER_MEAN_DEVIATION * meanDeviation;
  }

  @Override
  public String toString() {
    return "LockWaitEstimator[" + rule + ", hold=" + Math.round(meanHold) + "±"
        + Math.round(holdDeviationNanos()) + "ns]";
  }
}
