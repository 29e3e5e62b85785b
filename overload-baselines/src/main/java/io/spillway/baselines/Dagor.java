package io.spillway.baselines;

import io.spillway.api.ClientEnvironment;
import io.spillway.api.ClientGate;
import io.spillway.api.OverloadScheme;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import java.util.Objects;

/**
 * {@code dagor}: WeChat's priority-based overload control (Zhou et al., SoCC 2018) as
 * breakwater-osdi20 §5.1 runs it against Breakwater: the server moves an admission level on the
 * average queueing time ({@link DagorServerGate}, {@link DagorPolicy}) and piggybacks it on
 * responses; clients tag requests with random priorities and drop locally what the level rejects
 * ({@link DagorClientGate}). Its weakness at µs scale (§5.2): the level moves once per millisecond
 * or 2,000 requests and reaches each client only with its next response, so clients act on a stale
 * level and incast overshoots the SLO.
 *
 * <p>Immutable and thread-safe.
 */
public final class Dagor implements OverloadScheme {

  private final DagorConfig config;

  private Dagor(DagorConfig config) {
    this.config = Objects.requireNonNull(config, "config");
  }

  /** DAGOR with the given parameters. */
  public static Dagor of(DagorConfig config) {
    return new Dagor(config);
  }

  @Override
  public String name() {
    return "dagor";
  }

  /** The parameters this scheme runs with. */
  public DagorConfig config() {
    return config;
  }

  @Override
  public ServerGate newServerGate(ServerEnvironment environment) {
    return new DagorServerGate(config, environment);
  }

  @Override
  public <R> ClientGate<R> newClientGate(ClientEnvironment environment) {
    return new DagorClientGate<>(config, environment);
  }

  @Override
  public String toString() {
    return "dagor " + config;
  }
}
