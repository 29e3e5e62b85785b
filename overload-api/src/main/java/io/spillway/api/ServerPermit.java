package io.spillway.api;

/**
 * The handle for one request a server has decided on. It must be completed exactly once, whether
 * the request was admitted (then with the outcome of its handling) or rejected at admission (then
 * with {@link Outcome#DROPPED}, which produces the fast reject). Completing writes the response's
 * overload fields, including the credits piggybacked on it.
 *
 * <p>Thread-safe: a permit may be created on an event loop and completed on a worker thread. A
 * second completion throws {@link IllegalStateException}; see {@link AbstractServerPermit}.
 */
public interface ServerPermit {

  /** Whether the request may run. */
  boolean isAdmitted();

  /** {@link Status#OK} if admitted, otherwise why it was rejected. */
  Status status();

  /**
   * Ends the request and fills {@code response} with its status and piggybacked overload fields.
   *
   * @param outcome how it ended; a rejected permit must end as {@link Outcome#DROPPED}
   * @param nowNanos the current time, shared with whatever else the caller timed
   * @param response filled in by this call, sent by the caller
   * @throws IllegalStateException if already completed
   * @throws IllegalArgumentException if a rejected permit is completed with another outcome
   */
  void complete(Outcome outcome, long nowNanos, ResponseMetadata response);

  /** Whether {@link #complete} has been called. */
  boolean isCompleted();

  /**
   * The admitted request has left the server's queues: its handler has it. A host that queues
   * admitted requests before they run (a hand-over to workers, a virtual thread waiting for a
   * carrier) calls this once, as the handler gets the request; a host that runs the handler on
   * the thread that admitted it may call it at once. Until then, or if it is never called, the
   * request counts as waiting to run.
   *
   * <p>The distinction matters to a limit on requests waiting (the default scheme's plain-client
   * limit): a handler that blocks on a downstream call or a database holds its request in flight
   * for long without making anyone wait behind it, and counting such requests against the queue
   * would refuse a blocking service's calls long before its workers were short.
   *
   * <p>Idempotent; ignored on a rejected permit and after {@link #complete}. Gates that do not
   * distinguish waiting from running requests ignore it.
   *
   * @param nowNanos when the handler got the request, by the ticker the request was admitted by
   */
  default void started(long nowNanos) { }
}
