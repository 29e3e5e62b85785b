package io.spillway.peers;

import io.spillway.api.ClientEnvironment;
import io.spillway.api.ClientGate;
import io.spillway.api.OverloadScheme;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import java.util.Objects;

/**
 * {@code netflix-gradient2}, {@code netflix-vegas}, {@code netflix-aimd}: Netflix
 * concurrency-limits 0.5.4 as users deploy it on an RPC server (its gRPC server interceptor), a
 * server-wide concurrency limit adapted from the latency of each request, admission to completion.
 * Requests over the limit get a fast {@code REJECTED_LIMIT}; clients send at once and expire at
 * the SLO. See {@link ConcurrencyLimitServerGate} for the enforcement.
 *
 * <p>Immutable and thread-safe.
 */
public final class NetflixConcurrencyLimit implements OverloadScheme {

  private final NetflixLimitConfig config;

  private NetflixConcurrencyLimit(NetflixLimitConfig config) {
    this.config = Objects.requireNonNull(config, "config");
  }

  /** The limiter with the given algorithm and parameters. */
  public static NetflixConcurrencyLimit of(NetflixLimitConfig config) {
    return new NetflixConcurrencyLimit(config);
  }

  @Override
  public String name() {
    return config.schemeName();
  }

  /** The parameters this scheme runs with. */
  public NetflixLimitConfig config() {
    return config;
  }

  @Override
  public ServerGate newServerGate(ServerEnvironment environment) {
    return new ConcurrencyLimitServerGate(config, environment);
  }

  @Override
  public <R> ClientGate<R> newClientGate(ClientEnvironment environment) {
    return ClientGate.sendAtOnce(environment);
  }

  @Override
  public String toString() {
    return name() + " " + config;
  }
}
