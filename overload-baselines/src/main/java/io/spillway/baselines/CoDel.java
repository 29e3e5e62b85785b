package io.spillway.baselines;

import io.spillway.api.ClientEnvironment;
import io.spillway.api.ClientGate;
import io.spillway.api.OverloadScheme;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import java.util.Objects;

/**
 * {@code codel}: server-side AQM only, the first approach breakwater-osdi20 §2.2 examines. The
 * server drops requests by CoDel's control law on its queueing delay ({@link CoDelPolicy}); clients
 * send every request at once and learn of drops from fast rejects. Its weakness at µs scale (§2.2,
 * Fig. 1): every dropped request still costs the server a receive and a reject, so at high demand
 * the CPU spent on rejects comes out of goodput.
 *
 * <p>Immutable and thread-safe.
 */
public final class CoDel implements OverloadScheme {

  private final CoDelConfig config;

  private CoDel(CoDelConfig config) {
    this.config = Objects.requireNonNull(config, "config");
  }

  /** CoDel with the given parameters. */
  public static CoDel of(CoDelConfig config) {
    return new CoDel(config);
  }

  @Override
  public String name() {
    return "codel";
  }

  /** The parameters this scheme runs with. */
  public CoDelConfig config() {
    return config;
  }

  @Override
  public ServerGate newServerGate(ServerEnvironment environment) {
    return new CoDelServerGate(config, environment);
  }

  @Override
  public <R> ClientGate<R> newClientGate(ClientEnvironment environment) {
    return ClientGate.sendAtOnce(environment);
  }

  @Override
  public String toString() {
    return "codel " + config;
  }
}
