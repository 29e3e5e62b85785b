package io.spillway.api;

/**
 * Thrown inside a handler when waiting in a queue (a budgeted lock, a condition) would exceed the
 * request's remaining {@link RequestBudget}: the request aborts at once, its try-with-resources
 * clean-up runs, and the transport answers with a fast {@link Status#REJECTED_BUDGET} (Protego's
 * ASQM, protego-nsdi23 §3.2). Cheap: no stack trace, so throwing it costs no more than a return.
 */
public final class BudgetExceededException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  private final long queueingDelayNanos;
  private final long remainingBudgetNanos;

  /**
   * @param queueingDelayNanos the queue's delay when the request was turned away
   * @param remainingBudgetNanos the request's budget left at that moment (smaller than the delay)
   */
  public BudgetExceededException(long queueingDelayNanos, long remainingBudgetNanos) {
    super(null, null, false, false);
    this.queueingDelayNanos = queueingDelayNanos;
    this.remainingBudgetNanos = remainingBudgetNanos;
  }

  /** The queueing delay of the oldest waiter when the request was turned away. */
  public long queueingDelayNanos() {
    return queueingDelayNanos;
  }

  /** The request's remaining budget at that moment. */
  public long remainingBudgetNanos() {
    return remainingBudgetNanos;
  }

  @Override
  public String getMessage() {
    return "queueing delay " + queueingDelayNanos + "ns exceeds the remaining budget "
        + remainingBudgetNanos + "ns";
  }
}
