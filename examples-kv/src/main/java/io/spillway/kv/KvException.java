package io.spillway.kv;

/**
 * The KV server answered a request with an error of memcached's kinds: {@code CLIENT_ERROR} (the
 * request was malformed) or {@code SERVER_ERROR} (a value too large for a page, or no memory
 * after eviction). Not an overload reject: those arrive as {@code
 * io.spillway.transport.OverloadRejectedException}.
 */
public final class KvException extends RuntimeException {

  private static final long serialVersionUID = 1L;
  private final boolean clientError;

  KvException(boolean clientError, String message) {
    super((clientError ? "CLIENT_ERROR " : "SERVER_ERROR ") + message, null, false, false);
    this.clientError = clientError;
  }

  /** Whether the server found the request malformed ({@code CLIENT_ERROR}), rather than failing it. */
  public boolean isClientError() {
    return clientError;
  }
}
