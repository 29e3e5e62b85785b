package io.spillway.baselines;

import io.spillway.api.ClientEnvironment;
import io.spillway.api.ClientGate;
import io.spillway.api.NoControl;
import io.spillway.api.OverloadScheme;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import java.util.Objects;

/**
 * {@code window}: client-side window-based rate limiting as in ORCA, the second approach
 * breakwater-osdi20 §2.2 examines. Each client bounds its requests in flight by an AIMD window
 * ({@link WindowClientGate}); the server admits everything. Its weakness at µs scale (§2.2,
 * Fig. 1): the window never goes below one, so with many clients the sum of minimum windows alone
 * overwhelms the server (incast), and each client's view of the server is stale.
 *
 * <p>Immutable and thread-safe.
 */
public final class Window implements OverloadScheme {

  private final WindowConfig config;

  private Window(WindowConfig config) {
    this.config = Objects.requireNonNull(config, "config");
  }

  /** The window scheme with the given parameters. */
  public static Window of(WindowConfig config) {
    return new Window(config);
  }

  @Override
  public String name() {
    return "window";
  }

  /** The parameters this scheme runs with. */
  public WindowConfig config() {
    return config;
  }

  @Override
  public ServerGate newServerGate(ServerEnvironment environment) {
    return NoControl.INSTANCE.newServerGate(environment); // the server admits all
  }

  @Override
  public <R> ClientGate<R> newClientGate(ClientEnvironment environment) {
    return new WindowClientGate<>(config, environment);
  }

  @Override
  public String toString() {
    return "window " + config;
  }
}
