package io.spillway.lucene;

import io.spillway.api.BudgetExceededException;
import io.spillway.api.RequestBudget;
import io.spillway.api.Ticker;
import org.apache.lucene.index.QueryTimeout;

/**
 * A search's deadline from its request's budget, as Lucene's {@link QueryTimeout}: the search
 * stops once it has run for the request's remaining queueing budget plus the search time that
 * budget set aside, after which its answer could only be late.
 *
 * <p>Protego refuses a request at a lock when its queue would outlast the budget (protego-nsdi23
 * §3.2), but once admitted past its locks a request runs to the end, however late. Here the budget
 * also bounds the work, where the work can be stopped: the budget is {@code target − p99
 * service − p99 network}, so a request that starts its search with {@code remaining} left meets
 * its target if the search ends within {@code remaining + p99 search time}; past that the client
 * is better served by a fast reject than by a late answer, and the CPU by stopping. Lucene checks
 * the timeout while it scores ({@code IndexSearcher.setTimeout}, every few hundred documents) and
 * while it enumerates terms for prefix, wildcard and fuzzy queries ({@code
 * ExitableDirectoryReader}).
 *
 * <p>Thread-safe (immutable; the ticker is).
 */
final class BudgetTimeout implements QueryTimeout {

  private final Ticker ticker;
  private final long startedAt;
  private final long limitNanos;

  private BudgetTimeout(Ticker ticker, long startedAt, long limitNanos) {
    this.ticker = ticker;
    this.startedAt = startedAt;
    this.limitNanos = limitNanos;
  }

  /**
   * The timeout of a search starting at {@code now} under the budget in scope, allowed {@code
   * allowanceNanos} (the p99 search time) beyond what is left of it; {@code null} with no budget
   * in scope (the search is not bounded, as without Spillway).
   */
  static BudgetTimeout forBudgetInScope(Ticker ticker, long now, long allowanceNanos) {
    RequestBudget budget = RequestBudget.currentOrNull();
    if (budget == null) {
      return null;
    }
    long remaining = budget.remainingNanos();
    long limit = remaining > Long.MAX_VALUE - allowanceNanos ? Long.MAX_VALUE
        : remaining + allowanceNanos;
    return new BudgetTimeout(ticker, now, limit);
  }

  @Override
  public boolean shouldExit() {
    return ticker.read() - startedAt - limitNanos >= 0;
  }

  /** How long the search could run. */
  long limitNanos() {
    return limitNanos;
  }

  /**
   * The exception that ends the cancelled search's request: Spillway's interceptor answers it
   * with a fast {@code RESOURCE_EXHAUSTED}. Its "queueing delay" is the time the search ran, its
   * "remaining budget" the time it had.
   */
  BudgetExceededException exceeded() {
    return new BudgetExceededException(Math.max(ticker.read() - startedAt, limitNanos), limitNanos);
  }
}
