package io.spillway.harness.graph;

import io.spillway.sim.CallGraph;
import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The services processes of one harness run, placed by a {@link GraphPlacement}: one {@link
 * GraphServerProcess} with every service (pinned to core 0), or, when the placement splits the
 * graph, a second one with the core-1 services (pinned to core 1, at a niceness the harness
 * gives, logs {@code graph-server-core1.log}, {@code gc-graph-server-core1.log}) started first,
 * and the first one with the rest, given the second's ports. Switching scheme switches the second
 * first, then the first with the second's new ports.
 *
 * <p>Not thread-safe; used by the harness's main thread.
 */
final class GraphServers implements AutoCloseable {

  /** The core-1 process's log name. */
  static final String CORE1 = GraphServerProcess.MAIN + "-core1";

  private final CallGraph graph;
  private final GraphServerProcess main;
  private final GraphServerProcess core1;

  private GraphServers(CallGraph graph, GraphServerProcess main, GraphServerProcess core1) {
    this.graph = graph;
    this.main = main;
    this.core1 = core1;
  }

  /**
   * Starts the services of {@code scenarioFile} (with {@code overrides}) under {@code scheme} as
   * {@code placement} says, each process pinned to its core if {@code pin}, the core-1 process at
   * niceness {@code core1Nice} (0: the harness's own), and waits until they listen. Logs go to
   * {@code out}.
   */
  static GraphServers start(Path scenarioFile, Map<String, String> overrides, CallGraph graph,
      GraphPlacement placement, String scheme, boolean pin, int core1Nice, Path out) throws IOException {
    if (!placement.split()) {
      return new GraphServers(graph, GraphServerProcess.start(scenarioFile, overrides, scheme, pin, out), null);
    }
    GraphServerProcess core1 = GraphServerProcess.start(scenarioFile, overrides, scheme, pin ? 1 : -1, core1Nice, out,
        placement.core1(), Map.of(), CORE1);
    try {
      GraphServerProcess main = GraphServerProcess.start(scenarioFile, overrides, scheme, pin ? 0 : -1, 0, out,
          placement.core0(), core1.ports(), GraphServerProcess.MAIN);
      return new GraphServers(graph, main, core1);
    } catch (IOException | RuntimeException e) {
      core1.close();
      throw e;
    }
  }

  /** The ids of the services processes. */
  List<Long> pids() {
    return core1 == null ? List.of(main.pid()) : List.of(core1.pid(), main.pid());
  }

  /** Restarts every service under {@code scheme}; their ports change. */
  void switchTo(String scheme) throws IOException {
    if (core1 == null) {
      main.switchTo(scheme);
      return;
    }
    core1.switchTo(scheme);
    main.switchTo(scheme, core1.ports());
  }

  /** Every service's port, by name, in the graph's order. */
  Map<String, Integer> ports() {
    if (core1 == null) {
      return main.ports();
    }
    Map<String, Integer> ports = new LinkedHashMap<>();
    for (CallGraph.Service s : graph.services()) {
      Integer port = main.ports().containsKey(s.name()) ? main.ports().get(s.name()) : core1.ports().get(s.name());
      if (port != null) {
        ports.put(s.name(), port);
      }
    }
    return ports;
  }

  /**
   * The time every process's JIT has spent compiling since it started, ms, summed; -1 if a JVM
   * does not say.
   */
  long compileMillis() throws IOException {
    long ms = main.compileMillis();
    if (core1 != null) {
      long other = core1.compileMillis();
      ms = ms < 0 || other < 0 ? -1 : ms + other;
    }
    return ms;
  }

  /** Every process's counters since its services started ({@link GraphServerProcess#computed}). */
  Map<String, Long> computed() throws IOException {
    Map<String, Long> computed = new LinkedHashMap<>(main.computed());
    if (core1 != null) {
      computed.putAll(core1.computed());
    }
    return computed;
  }

  /** Stops the core-0 process (the callers), then the core-1 one, even if the first fails to stop. */
  @Override
  public void close() throws IOException {
    try {
      main.close();
    } finally {
      if (core1 != null) {
        core1.close();
      }
    }
  }
}
