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
   * client starts again under a new id, with a window both sides agree on. Credit deltas cannot
   * mend a window that has drifted: a response whose delta never reached its client (the client
   * gave up on the call just after the server answered it) leaves the client counting fewer
   * credits than the server thinks it holds, and neither side knows by how much; a client whose
   * count has drifted to nothing waits for ever for an explicit credit the server, which thinks
   * the session holds credits, never sends. Called from the gate's control loop; must not block.
   * By default nothing: transports without such a channel rely on the deltas alone.
   */
  default void sessionEnded(long sessionId) { }
}
