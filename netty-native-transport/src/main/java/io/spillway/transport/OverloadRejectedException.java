package io.spillway.transport;

import io.spillway.api.Status;

/**
 * A call the server (or the client's own gate) turned away: the status says why. It arrives fast,
 * within the target delay, so the caller can retry elsewhere or degrade. No stack trace.
 */
public final class OverloadRejectedException extends RuntimeException {

  private static final long serialVersionUID = 1L;
  private final Status status;

  public OverloadRejectedException(Status status) {
    super("request rejected: " + status, null, false, false);
    this.status = status;
  }

  /** Why the request was not served. */
  public Status status() {
    return status;
  }
}
