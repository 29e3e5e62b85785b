package io.spillway.transport.internal;

/**
 * A frame that is not well-formed: bad magic, unknown version or type, a payload over the limit.
 * The connection that sent it is closed with this as the logged reason; other connections are not
 * affected. Carries no stack trace: it is an input error, not a bug.
 */
public final class FrameException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  public FrameException(String message) {
    super(message, null, false, false);
  }
}
