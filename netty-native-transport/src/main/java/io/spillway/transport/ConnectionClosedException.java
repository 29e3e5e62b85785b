package io.spillway.transport;

/** The connection a call was queued or in flight on closed before the call got an answer. */
public final class ConnectionClosedException extends java.io.IOException {

  private static final long serialVersionUID = 1L;

  public ConnectionClosedException(String message) {
    super(message);
  }
}
