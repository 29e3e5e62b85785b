package io.spillway.api;

/**
 * How a server gate sends a message no response can carry: Breakwater's explicit credit message
 * to a session with no request in flight (§3.2.1: "explicit credit messages are only generated when
 * piggybacking is not possible"). The transport implements it; the simulator charges each message's
 * cost to the server.
 *
 * <p>Must be thread-safe and must not block: gates call it from their control loop.
 */
@FunctionalInterface
public interface ControlChannel {

  /** Drops every message: for gates that are driven without a transport. */
  ControlChannel DISCARD = (sessionId, creditDelta) -> { };

  /** Sends an explicit credit message changing the session's credit window by {@code creditDelta}. */
  void sendCredit(long sessionId, int creditDelta);

  /**
   * Sends an explicit credit message that also carries the session's window after the change and
   * the message's sequence number ({@link ResponseMetadata#creditSeq()}), from which a client
   * mends a window that lost or reordered messages left wrong. A transport that cannot carry the
   * two sends the delta alone (the default).
   */
  default void sendCredit(long sessionId, int creditDelta, int window, long seq) {
    sendCredit(sessionId, creditDelta);
  }

  /**
   * The gate no longer holds the session: it was idle past the gate's timeout. A transport whose
   * sessions have a channel of their own (overload-grpc's credit stream) ends it, so that the
   * client starts again under a new id rather than keep a window for a session the server no
   * longer counts. Called from the gate's control loop; must not block. By default nothing:
   * transports without such a channel rely on the last credit message, which tells the client to
   * keep the one credit its next request registers with.
   */
  default void sessionEnded(long sessionId) { }
}
