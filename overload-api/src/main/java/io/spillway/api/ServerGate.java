package io.spillway.api;

/**
 * The server side of an admission scheme: it decides on every request as soon as its overload
 * header is decoded (drop as early as possible, before any work on the payload), and hands back a
 * {@link ServerPermit} that the transport completes exactly once.
 *
 * <p>Thread-safe: {@link #admit} is called concurrently from event loops, {@link ServerPermit}s are
 * completed from worker threads, and the control loop runs on the injected {@link Scheduler}.
 * Nothing here blocks.
 */
public interface ServerGate extends AutoCloseable {

  /**
   * Decides on a request. Never returns {@code null}: a rejected request gets a permit too, whose
   * completion ({@link Outcome#DROPPED}) produces the reject with its piggybacked credit.
   *
   * @param request the decoded header; not retained after the call
   * @param nowNanos the current time, read once by the caller and shared with its other stages
   */
  ServerPermit admit(RequestMetadata request, long nowNanos);

  /**
   * A demand report that no request could carry (demand synchronisation, Breakwater §5.2 "The
   * Value of Demand Speculation"). Gates that speculate on demand take no demand from it; a gate
   * that stamps its credit messages ({@link ResponseMetadata#creditSeq()}) answers it with the
   * session's window as it stands, which is what a client whose window it can no longer trust
   * sends it for ({@link ClientGate#onUnanswered}).
   */
  default void onDemand(long sessionId, int demand, long nowNanos) { }

  /**
   * The session left (deregister message) or its connection closed: its unused credits return to
   * the pool. Requests of the session still in flight must still be completed; their completion
   * then carries no credit. Unknown sessions are ignored.
   */
  void deregister(long sessionId, long nowNanos);

  /** Starts the gate's periodic control, if it has any. Idempotent. */
  default void start() { }

  /** Stops the periodic control. Permits already issued may still be completed. */
  @Override
  default void close() { }
}
