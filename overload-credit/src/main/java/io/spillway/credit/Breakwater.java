package io.spillway.credit;

import io.spillway.api.ClientEnvironment;
import io.spillway.api.ClientGate;
import io.spillway.api.OverloadScheme;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import java.util.Objects;

/**
 * Breakwater as a named {@link OverloadScheme}, with the ablations of breakwater-osdi20 §5.2
 * Fig. 9 ("Performance Breakdown"):
 *
 * <ul>
 *   <li>{@code breakwater-credit}: credit-based admission control alone: demand synchronisation
 *       (explicit demand messages, no overcommit), no AQM;
 *   <li>{@code breakwater-credit-spec}: credits plus demand speculation with overcommitment, no
 *       AQM;
 *   <li>{@code breakwater}: all three, credits, speculation and delay-based AQM.
 * </ul>
 *
 * <p>Immutable and thread-safe.
 */
public final class Breakwater implements OverloadScheme {

  private final String name;
  private final BreakwaterConfig config;
  /** Send-to-response times of this instance's sessions, for the adaptive client queue timeout. */
  private final io.spillway.api.ServiceTimeTracker pathLatency = new io.spillway.api.ServiceTimeTracker();

  private Breakwater(String name, BreakwaterConfig config) {
    this.name = name;
    this.config = Objects.requireNonNull(config, "config");
  }

  /** Full Breakwater with the given parameters. */
  public static Breakwater of(BreakwaterConfig config) {
    return new Breakwater("breakwater", config);
  }

  /** Fig. 9's first bar: credits with demand synchronisation, no AQM. */
  public static Breakwater creditsOnly(BreakwaterConfig config) {
    return new Breakwater("breakwater-credit",
        config.toBuilder().demandSpeculation(false).aqm(false).build());
  }

  /** Fig. 9's second bar: credits and demand speculation, no AQM. */
  public static Breakwater creditsWithSpeculation(BreakwaterConfig config) {
    return new Breakwater("breakwater-credit-spec",
        config.toBuilder().demandSpeculation(true).aqm(false).build());
  }

  @Override
  public String name() {
    return name;
  }

  /** The parameters this scheme runs with. */
  public BreakwaterConfig config() {
    return config;
  }

  @Override
  public BreakwaterServerGate newServerGate(ServerEnvironment environment) {
    return new BreakwaterServerGate(config, environment);
  }

  @Override
  public <R> ClientGate<R> newClientGate(ClientEnvironment environment) {
    return new BreakwaterClientGate<>(config, environment, pathLatency);
  }

  @Override
  public boolean issuesCredits() {
    return true;
  }

  @Override
  public String toString() {
    return name + " " + config;
  }
}
