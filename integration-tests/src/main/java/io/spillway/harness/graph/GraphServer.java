package io.spillway.harness.graph;

import io.spillway.sim.Scenario;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * The call-graph harness's services process: a {@link ServiceGraph} under one scheme at a time,
 * started by {@link GraphHarnessMain} (pinned to core 0 where the machine allows) or by hand, to
 * drive with ghz.
 *
 * <p>Starts the graph under {@code SCHEME} and prints {@code SPILLWAY-GRAPH name=port ...} (every
 * service's port, the interfaces' front-ends among them) on stdout once every service listens.
 * Then reads commands, one a line, from stdin:
 * <ul>
 *   <li>{@code stats}: prints {@code SPILLWAY-STATS service.interface=computed/failed ...}, the
 *       counters since the graph started;
 *   <li>{@code scheme NAME}: stops every service and starts them again, on new ports, under
 *       {@code NAME}; prints a new {@code SPILLWAY-GRAPH} line. The JVM, and so the code the JIT
 *       compiled, carries over: the services compile on the one core they serve from, which took
 *       longer than a run on a busy machine, so the harness warms one process once for every scheme.
 * </ul>
 * Stops when stdin closes, so it never outlives the harness.
 *
 * <p>Usage: {@code GraphServer SCENARIO_FILE SCHEME [key=value ...]}
 */
public final class GraphServer {

  static final String PORTS_LINE = "SPILLWAY-GRAPH ";
  static final String STATS_LINE = "SPILLWAY-STATS ";
  static final String SCHEME_COMMAND = "scheme ";

  private GraphServer() { }

  public static void main(String[] args) throws Exception {
    if (args.length < 2) {
      System.err.println("usage: GraphServer SCENARIO_FILE SCHEME [key=value ...]");
      System.exit(2);
    }
    Map<String, String> overrides = new LinkedHashMap<>();
    for (int i = 2; i < args.length; i++) {
      int eq = args[i].indexOf('=');
      if (eq <= 0) {
        System.err.println("GraphServer: expected key=value, got '" + args[i] + "'");
        System.exit(2);
      }
      overrides.put(args[i].substring(0, eq), args[i].substring(eq + 1));
    }
    Scenario scenario = Scenario.load(Path.of(args[0]), overrides);
    ServiceGraph graph = start(scenario, args[1]);
    try {
      BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
      for (String line; (line = in.readLine()) != null; ) {
        String command = line.strip();
        if (command.equals("stats")) {
          System.out.println(STATS_LINE + graph.stats());
          System.out.flush();
        } else if (command.startsWith(SCHEME_COMMAND)) {
          System.err.println("graph server: " + graph.stats());
          graph.close();
          graph = null;
          graph = start(scenario, command.substring(SCHEME_COMMAND.length()).strip());
        } else if (!command.isEmpty()) {
          System.err.println("graph server: unknown command '" + command + "'");
        }
      }
      System.err.println("graph server: " + graph.stats());
    } finally {
      if (graph != null) {
        graph.close();
      }
    }
  }

  private static ServiceGraph start(Scenario scenario, String scheme) throws Exception {
    GraphWiring wiring = GraphWirings.create(scheme, scenario);
    ServiceGraph graph = ServiceGraph.start(scenario, wiring);
    System.err.println("graph server: scheme " + wiring.name() + ", services " + graph
        + ", spin counts " + (CpuSpin.countsCpuTime() ? "thread CPU time" : "wall-clock time"));
    System.out.println(PORTS_LINE + graph.ports().entrySet().stream()
        .map(e -> e.getKey() + "=" + e.getValue()).collect(Collectors.joining(" ")));
    System.out.flush();
    return graph;
  }
}
