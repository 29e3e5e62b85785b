package io.spillway.harness;

import io.spillway.api.OverloadScheme;
import io.spillway.peers.SentinelSystemConfig;
import io.spillway.peers.SentinelSystemProtection;
import io.spillway.sim.Scenario;
import io.spillway.sim.SchemeRegistry;
import java.util.ArrayList;
import java.util.List;

/**
 * The schemes the real-socket harness can name: every scheme of the simulator ({@link
 * SchemeRegistry}), and {@code sentinel}, which runs in real time only.
 *
 * <p>{@code sentinel} is Alibaba Sentinel's system adaptive protection ({@link
 * SentinelSystemProtection}) with its documented defaults, the load trigger at 2.5 × the cores
 * of the process that builds the gate (the server process, pinned to one core), unless the scenario
 * sets {@code sentinel.load} or {@code sentinel.cpu_usage} (-1 turns a trigger off). Sentinel keeps
 * static state, so one JVM runs one Sentinel gate at a time; the harness starts a server process
 * per scheme, so it runs beside every other scheme in one run.
 */
final class SocketSchemes {

  /** The name the harness gives Sentinel. */
  static final String SENTINEL = SchemeRegistry.REAL_TIME_ONLY;

  private SocketSchemes() { }

  /** Every scheme name the harness accepts. */
  static List<String> names() {
    List<String> names = new ArrayList<>(SchemeRegistry.names());
    names.add(SENTINEL);
    return names;
  }

  /**
   * The scheme called {@code name}, configured from {@code scenario}.
   *
   * @throws IllegalArgumentException naming the known schemes if {@code name} is not one, or
   *     naming the key if a {@code sentinel.*} value is out of range
   */
  static OverloadScheme create(String name, Scenario scenario) {
    if (name.equals(SENTINEL)) {
      return SentinelSystemProtection.of(sentinelConfig(scenario));
    }
    try {
      return SchemeRegistry.create(name, scenario);
    } catch (IllegalArgumentException e) {
      if (e.getMessage().startsWith("unknown scheme")) {
        throw new IllegalArgumentException("unknown scheme '" + name + "'; known schemes: "
            + String.join(", ", names()), e);
      }
      throw e;
    }
  }

  /** Sentinel's documented defaults for this process's cores, with any sentinel.* keys applied. */
  static SentinelSystemConfig sentinelConfig(Scenario s) {
    SentinelSystemConfig c = SentinelSystemConfig.defaults();
    try {
      if (s.isSet("sentinel.load")) {
        c = c.withHighestSystemLoad(s.doubleValue("sentinel.load"));
      }
      if (s.isSet("sentinel.cpu_usage")) {
        c = c.withHighestCpuUsage(s.doubleValue("sentinel.cpu_usage"));
      }
      return c;
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("sentinel parameters: " + e.getMessage(), e);
    }
  }
}
