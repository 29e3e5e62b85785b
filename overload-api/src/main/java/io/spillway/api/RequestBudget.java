package io.spillway.api;

/**
 * How much longer a request may spend queueing (Protego's ASQM, protego-nsdi23 §3.2): its
 * queueing budget is {@code target delay − p99 service time − p99 network delay}, set when the
 * request is dispatched, and shrunk by the time it waits in each queue (dispatch, carrier, lock).
 * A stage that would make the request wait longer than what is left rejects it at once.
 *
 * <p>The budget of the request being served travels in {@link #CURRENT}, a {@link ScopedValue}
 * bound by the transport around the handler, so code deep inside the handler (a budgeted lock)
 * finds it without a parameter. Code with no budget in scope behaves as if the budget were
 * unlimited.
 *
 * <p>Not thread-safe: a budget belongs to one request. A request that moves between threads hands
 * its budget over through the same queue that carries the request, which orders the accesses.
 */
public final class RequestBudget {

  /** The budget of the request the current thread is serving, if the transport bound one. */
  public static final ScopedValue<RequestBudget> CURRENT = ScopedValue.newInstance();

  private long remainingNanos;
  private long chargedNanos;

  private RequestBudget(long remainingNanos) {
    this.remainingNanos = remainingNanos;
  }

  /**
   * A budget of {@code queueingBudgetNanos}.
   *
   * @throws IllegalArgumentException if negative
   */
  public static RequestBudget of(long queueingBudgetNanos) {
    if (queueingBudgetNanos < 0) {
      throw new IllegalArgumentException("negative budget: " + queueingBudgetNanos);
    }
    return new RequestBudget(queueingBudgetNanos);
  }

  /**
   * The budget Protego derives from the latency target (protego-nsdi23 §3.2): {@code target −
   * p99Service − p99Network}, at least zero.
   */
  public static RequestBudget fromTarget(long targetDelayNanos, long p99ServiceNanos,
      long p99NetworkNanos) {
    if (targetDelayNanos < 0 || p99ServiceNanos < 0 || p99NetworkNanos < 0) {
      throw new IllegalArgumentException("negative latency: target=" + targetDelayNanos
          + " service=" + p99ServiceNanos + " network=" + p99NetworkNanos);
    }
    // each term is non-negative, so target − service cannot overflow, but subtracting the network
    // from a negative rest could wrap to a huge budget: compare before subtracting
    long rest = targetDelayNanos - p99ServiceNanos;
    return new RequestBudget(rest > p99NetworkNanos ? rest - p99NetworkNanos : 0);
  }

  /** The budget bound in the current scope, or {@code null} if none is. */
  public static RequestBudget currentOrNull() {
    return CURRENT.isBound() ? CURRENT.get() : null;
  }

  /** Nanoseconds of queueing this request may still spend; zero when exhausted. */
  public long remainingNanos() {
    return remainingNanos;
  }

  /** Whether waiting {@code expectedDelayNanos} more would still fit in the budget. */
  public boolean fits(long expectedDelayNanos) {
    return expectedDelayNanos <= remainingNanos;
  }

  /** Deducts time spent waiting in a queue; the budget never goes below zero. */
  public void charge(long waitedNanos) {
    if (waitedNanos > 0) {
      remainingNanos = waitedNanos >= remainingNanos ? 0 : remainingNanos - waitedNanos;
      long charged = chargedNanos + waitedNanos;
      chargedNanos = charged < 0 ? Long.MAX_VALUE : charged; // saturates: neither term is negative
    }
  }

  /**
   * All the time {@link #charge charged} to this budget so far, also what went beyond it: the
   * request's queueing after the budget was set. A host subtracts it from the request's time in
   * the handler to get its service time, whose p99 later budgets are set from (protego-nsdi23
   * §3.2 takes the p99 <em>service</em> time, queueing excluded). Saturates at {@link
   * Long#MAX_VALUE}.
   */
  public long chargedNanos() {
    return chargedNanos;
  }

  /** Whether nothing is left. */
  public boolean isExhausted() {
    return remainingNanos == 0;
  }

  @Override
  public String toString() {
    return "RequestBudget[remaining=" + remainingNanos + "ns]";
  }
}
