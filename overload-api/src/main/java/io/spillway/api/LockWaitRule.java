package io.spillway.api;

/**
 * Which delay ASQM compares with a request's remaining budget before the request joins a lock's
 * wait queue (protego-nsdi23 §3.2). Chosen per lock, for instance with {@code
 * io.spillway.asqm.BudgetedLock}'s constructor; the simulator's mutexes take the same choice.
 */
public enum LockWaitRule {
  /**
   * The paper's (protego-nsdi23 §4, "Queueing delay measurement"): the lock's queueing delay,
   * {@code now − enqueue time of the oldest waiter}.
   */
  OLDEST_WAITER,
  /**
   * The default: the larger of the above and {@code n·h + 2·σ·(sqrt(n + 1) − 1)} for {@code n}
   * waiters, {@code h} and {@code σ} the mean and standard deviation of the lock's measured
   * hand-off interval. With nobody waiting it is zero, as the paper's; it refuses every request
   * the paper's rule refuses, and more. The oldest waiter's age tells how long the head has waited,
   * not how many requests queue behind it, so under a burst the tail of the queue waits far past
   * the budget; the second term leaves room for the spread of the holds the request waits behind.
   */
  QUEUE_AWARE
}
