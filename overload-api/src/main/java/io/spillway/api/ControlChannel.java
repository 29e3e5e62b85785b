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
}
