package io.spillway.api;

/**
 * Thrown inside a handler when waiting in a queue (a budgeted lock, a condition) would exceed the
 * request's remaining {@link RequestBudget}: the request aborts at once, its try-with-resources
 * clean-up runs, and the transport answers with a fast {@link Status#REJECTED_BUDGET} (Protego's
 * ASQM, protego-nsdi23 §3.2). Cheap: no stack trace, so throwing it costs no more than a return.
 */
public class BudgetExceededException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  public BudgetExceededException(String message) {
    super(message, null, false, false);
  }
}
