package io.spillway.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The peers' limiters (overload-peers) run in the simulator: briefly, below capacity and at twice
 * capacity, each through the registry with its library defaults. The full comparison is {@code
 * ./spillway sim peers-fig3}.
 */
class PeersSimulationTest {

  private static final List<String> PEERS = List.of("netflix-gradient2", "netflix-vegas", "netflix-aimd");

  private static ResultRecord row(Experiment.Results r, String scheme, double demand) {
    return r.rows().stream().filter(x -> x.scheme().equals(scheme) && x.demand() == demand)
        .findFirst().orElseThrow();
  }

  @Test
  void everyPeerRunsServesBelowCapacityAndShedsAbove() throws Exception {
    Map<String, String> v = new HashMap<>(Map.of("clients", "200", "cores", "4",
        "warmup_ms", "100", "duration_ms", "200", "demand", "0.5, 2.0",
        "capacity_rps", "340000", "schemes", String.join(", ", PEERS)));
    Experiment.Results r = new Experiment(Scenario.of(v), 2).run();
    for (String scheme : PEERS) {
      ResultRecord low = row(r, scheme, 0.5);
      assertTrue(low.goodputRps() >= 0.95 * low.offeredRps(),
          scheme + " below capacity: goodput " + low.goodputRps() + " of " + low.offeredRps());
      ResultRecord high = row(r, scheme, 2.0);
      assertTrue(high.throughputRps() > 0, scheme + " at 2x served nothing");
      assertTrue(high.throughputRps() <= 1.05 * 340_000, scheme + " served beyond capacity");
      assertTrue(high.dropRate() > 0, scheme + " must reject over its limit at 2x");
    }
  }

  @Test
  void peerKeysReachTheirSchemes() {
    Scenario s = Scenario.of(Map.of("netflix.initial_limit", "30", "netflix.min_limit", "10",
        "netflix.max_limit", "90", "netflix.gradient2.queue_size", "2",
        "netflix.vegas.smoothing", "0.5", "netflix.aimd.timeout_us", "150",
        "netflix.aimd.backoff", "0.8"));
    assertEquals(30, SchemeRegistry.gradient2Config(s).initialLimit());
    assertEquals(10, SchemeRegistry.gradient2Config(s).minLimit());
    assertEquals(90, SchemeRegistry.gradient2Config(s).maxConcurrency());
    assertEquals(2, SchemeRegistry.gradient2Config(s).queueSize());
    assertEquals(0.5, SchemeRegistry.vegasConfig(s).smoothing());
    assertEquals(90, SchemeRegistry.vegasConfig(s).maxConcurrency());
    assertEquals(150_000, SchemeRegistry.aimdConfig(s).timeoutNanos());
    assertEquals(0.8, SchemeRegistry.aimdConfig(s).backoffRatio());
    assertEquals(10, SchemeRegistry.aimdConfig(s).minLimit());
  }
}
