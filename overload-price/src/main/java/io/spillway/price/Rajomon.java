package io.spillway.price;

import io.spillway.api.ClientEnvironment;
import io.spillway.api.OverloadScheme;
import io.spillway.api.ServerEnvironment;
import java.util.Objects;
import java.util.SplittableRandom;

/**
 * {@code rajomon}: market-based overload control for microservice call graphs (Xing et al.,
 * rajomon-nsdi25). Clients hold tokens that refill over time and attach a random number of them to
 * each request ({@link RajomonClientGate}, §3.3); every server prices each of its interfaces from
 * its queueing delay plus the highest price of the interface's callees, admits requests whose
 * tokens cover the price, and sends the price back lazily ({@link RajomonServerGate}, §3.4). Prices
 * flow from the back end to the clients, so load is shed early in the graph, and the requests shed
 * are those with the fewest tokens wherever they are shed.
 *
 * <p>The server gate also implements {@link io.spillway.api.CallGraphGate}: a transport that makes
 * downstream calls reports their responses to it.
 *
 * <p>Where this departs from the paper, each with its evidence where it is implemented: prices
 * fall with the same gain they rise with (the authors' {@code UpdatePrice}, not the paper's
 * "decreases by 1 token") and do not rise while the queue is already draining ({@link
 * PricePolicy}); a price a caller cannot refresh falls as fast as its server's could, for a
 * callee's price in a server's table ({@link InterfacePriceTable}) and for a price above a
 * client's cap ({@link RajomonClientGate}); {@link RajomonConfig#forSlo} carries parameters
 * tuned as §4 tunes them.
 *
 * <p>Random generators are seeded from {@link RajomonConfig#seed()}, the client's also from its
 * session id, so a run is reproducible.
 *
 * <p>Immutable and thread-safe.
 */
public final class Rajomon implements OverloadScheme {

  private final RajomonConfig config;

  private Rajomon(RajomonConfig config) {
    this.config = Objects.requireNonNull(config, "config");
  }

  /** Rajomon with the given parameters. */
  public static Rajomon of(RajomonConfig config) {
    return new Rajomon(config);
  }

  @Override
  public String name() {
    return "rajomon";
  }

  /** The parameters this scheme runs with. */
  public RajomonConfig config() {
    return config;
  }

  @Override
  public RajomonServerGate newServerGate(ServerEnvironment environment) {
    return new RajomonServerGate(config, environment, new SplittableRandom(mix(config.seed())));
  }

  @Override
  public <R> RajomonClientGate<R> newClientGate(ClientEnvironment environment) {
    long seed = mix(config.seed() ^ mix(environment.sessionId() + 1));
    return new RajomonClientGate<>(config, environment, new SplittableRandom(seed));
  }

  /** SplitMix64's finaliser: nearby inputs give unrelated seeds. */
  private static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  @Override
  public String toString() {
    return "rajomon " + config;
  }
}
