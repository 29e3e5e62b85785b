package io.spillway.sim;

import io.spillway.api.NoControl;
import io.spillway.api.OverloadScheme;

/**
 * Where a scheme sits in a call graph: which scheme makes the server gate of a front-end service
 * (the root of some interface) and of an inner service, and whether a caller reaches a callee
 * through a client session of the callee's scheme (rajomon-nsdi25 §4 "Baselines").
 *
 * <p>Placement by name, so that a scheme added to {@link SchemeRegistry} runs on graphs with no
 * more code:
 * <ul>
 *   <li>{@code X} for a scheme that issues credits ({@link OverloadScheme#issuesCredits()}, e.g.
 *       {@code breakwater}): X at the front-end only, as Breakwater was designed (one server and
 *       its clients); inner services are uncontrolled. Its server rejects requests that carry no
 *       credit, so inner hops cannot run it without sessions.
 *   <li>{@code X-d} ({@code breakwater-d}, Rajomon's "Breakwaterd"): X at every service, and
 *       every caller holds one client session of X per callee service, so every sender–receiver
 *       pair in the graph is rate-limited.
 *   <li>any other {@code X} ({@code none}, {@code dagor}, {@code rajomon}): X at every service;
 *       callers send sub-requests directly, carrying the inbound request's tokens and priority.
 * </ul>
 * End clients always use the client gate of the scheme at the root they call.
 *
 * @param name the name experiments and reports use
 * @param frontEnd makes the server gates of services that are the root of an interface
 * @param inner makes the server gates of every other service
 * @param callerSessions whether every call between services goes through a client session of
 *     the callee's scheme; calls into a credit-issuing server always do
 */
record GraphScheme(String name, OverloadScheme frontEnd, OverloadScheme inner,
    boolean callerSessions) {

  /** The suffix that distributes a scheme over every caller–callee pair. */
  static final String DISTRIBUTED = "-d";

  /** No control anywhere: what capacity is measured with. */
  static GraphScheme uncontrolled() {
    return new GraphScheme("none", NoControl.INSTANCE, NoControl.INSTANCE, false);
  }

  /** Whether {@link #resolve} knows {@code name}. */
  static boolean known(String name) {
    return SchemeRegistry.names().contains(base(name));
  }

  /**
   * The placement called {@code name}, configured from {@code scenario}.
   *
   * @throws IllegalArgumentException if the scheme (or, for {@code X-d}, X) is unknown
   */
  static GraphScheme resolve(String name, Scenario scenario) {
    if (name.endsWith(DISTRIBUTED) && !SchemeRegistry.names().contains(name)) {
      OverloadScheme scheme = SchemeRegistry.create(base(name), scenario);
      return new GraphScheme(name, scheme, scheme, true);
    }
    OverloadScheme scheme = SchemeRegistry.create(name, scenario);
    if (scheme.issuesCredits()) {
      return new GraphScheme(name, scheme, NoControl.INSTANCE, false);
    }
    return new GraphScheme(name, scheme, scheme, false);
  }

  private static String base(String name) {
    return name.endsWith(DISTRIBUTED) && !SchemeRegistry.names().contains(name)
        ? name.substring(0, name.length() - DISTRIBUTED.length()) : name;
  }
}
