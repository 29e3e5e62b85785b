package io.spillway.credit;

import io.spillway.api.ClientEnvironment;
import io.spillway.api.ClientGate;
import io.spillway.api.OverloadScheme;
import io.spillway.api.ServerEnvironment;
import java.util.Objects;

/**
 * Protego's performance-driven admission control (protego-nsdi23 §3.1, Algorithm 1) as a named
 * {@link OverloadScheme}, {@code protego}: Breakwater's credits with the pool sized by throughput
 * slope, by default as the authors' server sizes it ({@link ProtegoConfig.Rule}). Protego's other half, ASQM (§3.2), is not a gate: it runs inside handlers through
 * {@code io.spillway.asqm.BudgetedLock}, whose aborts reach this scheme as
 * {@link io.spillway.api.Outcome#ABORTED} completions and count as drops (Alg. 1 line 6).
 *
 * <p>Immutable and thread-safe.
 */
public final class Protego implements OverloadScheme {

  private final ProtegoConfig config;

  private Protego(ProtegoConfig config) {
    this.config = Objects.requireNonNull(config, "config");
  }

  /** Protego's admission control with the given parameters. */
  public static Protego of(ProtegoConfig config) {
    return new Protego(config);
  }

  @Override
  public String name() {
    return "protego";
  }

  /** The parameters this scheme runs with. */
  public ProtegoConfig config() {
    return config;
  }

  @Override
  public ProtegoServerGate newServerGate(ServerEnvironment environment) {
    return new ProtegoServerGate(config, environment);
  }

  @Override
  public <R> ClientGate<R> newClientGate(ClientEnvironment environment) {
    return new ProtegoClientGate<>(config, environment);
  }

  @Override
  public boolean issuesCredits() {
    return true;
  }

  @Override
  public String toString() {
    return name() + " " + config;
  }
}
