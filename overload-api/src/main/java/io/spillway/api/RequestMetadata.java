package io.spillway.api;

/**
 * The overload fields a request carries (docs/design.md, "Wire metadata"): who sends it, the
 * client's demand, the credit it spends, its tokens and interface, and its remaining budget. The
 * same fields ride in the native frame header and in gRPC metadata.
 *
 * <p>Mutable and reusable, so a decoder can fill one instance per connection without allocating.
 * Not thread-safe.
 */
public final class RequestMetadata {

  /** Flag: the first request of a session; registers it with the server (Breakwater §3). */
  public static final int FLAG_REGISTER = 1;
  /** Flag: the session leaves and returns its unused credits. */
  public static final int FLAG_DEREGISTER = 1 << 1;

  private long sessionId;
  private long requestId;
  private int demand;
  private long creditId;
  private long tokens;
  private int interfaceId;
  private long budgetNanos = Long.MAX_VALUE;
  private int priority;
  private int flags;
  private long origin;

  /** Clears every field to its default, for reuse. */
  public RequestMetadata reset() {
    sessionId = 0;
    requestId = 0;
    demand = 0;
    creditId = 0;
    tokens = 0;
    interfaceId = 0;
    budgetNanos = Long.MAX_VALUE;
    priority = 0;
    flags = 0;
    origin = 0;
    return this;
  }

  public long sessionId() {
    return sessionId;
  }

  public RequestMetadata sessionId(long value) {
    sessionId = value;
    return this;
  }

  public long requestId() {
    return requestId;
  }

  public RequestMetadata requestId(long value) {
    requestId = value;
    return this;
  }

  /** Requests still queued at the client after this one (Breakwater §3.2.2, piggybacked demand). */
  public int demand() {
    return demand;
  }

  public RequestMetadata demand(int value) {
    if (value < 0) {
      throw new IllegalArgumentException("negative demand: " + value);
    }
    demand = value;
    return this;
  }

  /** Identifies the credit this request spends, for end-to-end RTT (Protego Algorithm 1). */
  public long creditId() {
    return creditId;
  }

  public RequestMetadata creditId(long value) {
    creditId = value;
    return this;
  }

  /** Tokens attached by the client (Rajomon §3.3). */
  public long tokens() {
    return tokens;
  }

  public RequestMetadata tokens(long value) {
    tokens = value;
    return this;
  }

  /** The interface (method) the request calls (Rajomon). */
  public int interfaceId() {
    return interfaceId;
  }

  public RequestMetadata interfaceId(int value) {
    interfaceId = value;
    return this;
  }

  /** Remaining queueing budget in nanoseconds; {@link Long#MAX_VALUE} when none is set. */
  public long budgetNanos() {
    return budgetNanos;
  }

  public RequestMetadata budgetNanos(long value) {
    budgetNanos = value;
    return this;
  }

  /** Business or random priority, lower is more important (DAGOR). Zero when unused. */
  public int priority() {
    return priority;
  }

  public RequestMetadata priority(int value) {
    priority = value;
    return this;
  }

  public int flags() {
    return flags;
  }

  public RequestMetadata flags(int value) {
    flags = value;
    return this;
  }

  /**
   * What the request came through at the server, as its transport names it (a connection: the
   * native transport numbers them, the gRPC adapter hashes a socket's remote address), or 0 where
   * it does not say. Not carried on the wire: the server's transport
   * sets it after decoding, so a client cannot choose it. A gate may hold what one origin takes
   * where a session id, which the client chooses, cannot (the newcomers' line of Breakwater's
   * server gate).
   */
  public long origin() {
    return origin;
  }

  public RequestMetadata origin(long value) {
    origin = value;
    return this;
  }

  public boolean isRegister() {
    return (flags & FLAG_REGISTER) != 0;
  }

  public boolean isDeregister() {
    return (flags & FLAG_DEREGISTER) != 0;
  }

  @Override
  public String toString() {
    return "RequestMetadata[session=" + sessionId + ", request=" + requestId + ", demand=" + demand
        + ", creditId=" + creditId + ", tokens=" + tokens + ", interface=" + interfaceId
        + ", budget=" + (budgetNanos == Long.MAX_VALUE ? "none" : budgetNanos + "ns")
        + ", priority=" + priority + ", flags=" + flags + (origin == 0 ? "" : ", origin=" + origin) + "]";
  }
}
