package io.spillway.lucene;

/**
 * A search request the service will not run: an empty or over-long query, a {@code k} out of
 * range, an unknown field or malformed syntax. The message says which, for the client
 * (gRPC {@code INVALID_ARGUMENT}).
 */
public final class InvalidQueryException extends Exception {

  private static final long serialVersionUID = 1L;

  InvalidQueryException(String message) {
    super(message, null, false, false);
  }
}
