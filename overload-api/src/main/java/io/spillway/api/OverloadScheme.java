package io.spillway.api;

/**
 * An admission scheme by name: a factory for its server gate and its per-session client gates.
 * Every scheme Spillway compares (no control, Breakwater and its ablations, the papers' baselines,
 * the peers' limiters) is one of these, so one driver runs them all side by side.
 *
 * <p>Implementations are immutable and thread-safe; the gates they make state their own
 * thread-safety.
 */
public interface OverloadScheme {

  /** The name experiments and the command line use, e.g. {@code breakwater}. */
  String name();

  /** A server gate for one server. Call {@link ServerGate#start()} before use. */
  ServerGate newServerGate(ServerEnvironment environment);

  /** A client gate for one client session. */
  <R> ClientGate<R> newClientGate(ClientEnvironment environment);

  /**
   * Whether the server grants explicit credits and rejects requests sent without one; the
   * admission contract then checks that no session is ever admitted beyond its grant.
   */
  default boolean issuesCredits() {
    return false;
  }
}
