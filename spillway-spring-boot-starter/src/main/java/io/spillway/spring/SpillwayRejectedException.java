package io.spillway.spring;

import io.spillway.api.Status;

/**
 * A request a Spillway gate turned away: the error a {@link SpillwayReactor#gate gated} publisher
 * signals when its subscription is not admitted, and what the client filters raise for a {@code
 * 429} or {@code 503} whose retries are spent. Cheap: no stack trace.
 */
public final class SpillwayRejectedException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  private final transient Status status;
  private final long retryAfterMillis;

  /**
   * @param status why it was turned away
   * @param retryAfterMillis when the server asked to be retried, in ms; 0 if it did not say
   */
  public SpillwayRejectedException(Status status, long retryAfterMillis) {
    super(null, null, false, false);
    this.status = status;
    this.retryAfterMillis = retryAfterMillis;
  }

  /** Why the request was turned away. */
  public Status status() {
    return status;
  }

  /** When the server asked to be retried, in milliseconds; 0 if it did not say. */
  public long retryAfterMillis() {
    return retryAfterMillis;
  }

  @Override
  public String getMessage() {
    return "spillway: rejected (" + GateStats.reason(status) + ")"
        + (retryAfterMillis > 0 ? ", retry after " + retryAfterMillis + " ms" : "");
  }
}
