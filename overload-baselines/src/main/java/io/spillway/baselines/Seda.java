package io.spillway.baselines;

import io.spillway.api.ClientEnvironment;
import io.spillway.api.ClientGate;
import io.spillway.api.NoControl;
import io.spillway.api.OverloadScheme;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import java.util.Objects;

/**
 * {@code seda}: SEDA's rate-based AIMD on the response-time percentile (Welsh and Culler, USITS
 * 2003), run at each client as breakwater-osdi20 §5.1 runs it ({@link SedaClientGate}); the server
 * admits everything. Its weaknesses at µs scale (§5.2): clients do not coordinate their increases,
 * so many of them overshoot at once (incast), and each waits for a hundred responses or the timeout
 * before reacting; adj_i must be scaled with the number of clients.
 *
 * <p>Immutable and thread-safe.
 */
public final class Seda implements OverloadScheme {

  private final SedaConfig config;

  private Seda(SedaConfig config) {
    this.config = Objects.requireNonNull(config, "config");
  }

  /** SEDA with the given parameters. */
  public static Seda of(SedaConfig config) {
    return new Seda(config);
  }

  @Override
  public String name() {
    return "seda";
  }

  /** The parameters this scheme runs with. */
  public SedaConfig config() {
    return config;
  }

  @Override
  public ServerGate newServerGate(ServerEnvironment environment) {
    return NoControl.INSTANCE.newServerGate(environment); // no drops at the server
  }

  @Override
  public <R> ClientGate<R> newClientGate(ClientEnvironment environment) {
    return new SedaClientGate<>(config, environment);
  }

  @Override
  public String toString() {
    return "seda " + config;
  }
}
