package io.spillway.transport;

import io.spillway.api.Status;

/**
 * A call the server (or the client's own gate) turned away: the status says why. It arrives fast,
 * within the target delay, so the caller can retry elsewhere or degrade. No stack trace.
 */
public final class OverloadRejectedException extends RuntimeException {

  private static final long serialVersionUID = 1L;
  private final Status status;
  private final long sentAtNanos;

  /** A rejection of a request that was never sent (it expired or was dropped in the client). */
  public OverloadRejectedException(Status status) {
    this(status, Long.MIN_VALUE);
  }

  /** A rejection of a request that left the client at {@code sentAtNanos} (client ticker). */
  public OverloadRejectedException(Status status, long sentAtNanos) {
    super("request rejected: " + status, null, false, false);
    this.status = status;
    this.sentAtNanos = sentAtNanos;
  }

  /** Whether the request reached the server (and the server rejected it). */
  public boolean wasSent() {
    return sentAtNanos != Long.MIN_VALUE;
  }

  /** When the request left the client, for reject delay; only meaningful if {@link #wasSent()}. */
  public long sentAtNanos() {
    return sentAtNanos;
  }

  /** Why the request was not served. */
  public Status status() {
    return status;
  }
}
