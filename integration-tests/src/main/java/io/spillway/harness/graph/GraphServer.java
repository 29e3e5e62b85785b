package io.spillway.harness.graph;

import io.spillway.sim.Scenario;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * The call-graph harness's services process: a {@link ServiceGraph} under one scheme at a time,
 * started by {@link GraphHarnessMain} (pinned to core 0 where the machine allows) or by hand, to
 * drive with ghz.
 *
 * <p>Starts the graph under {@code SCHEME} and prints {@code SPILLWAY-GRAPH name=port ...} (every
 * service's port, the interfaces' front-ends among them) on stdout once every service listens.
 * With {@code --only a,b,...} it starts only those services (the others run in another process,
 * {@link GraphPlacement}); their callees elsewhere are reached at the ports {@code --remote
 * name=port,...} gives, and only the services started here are printed and counted.
 * Then reads commands, one a line, from stdin:
 * <ul>
 *   <li>{@code stats}: prints {@code SPILLWAY-STATS service.interface=computed/failed ...}, the
 *       counters since the graph started;
 *   <li>{@code jit}: prints {@code SPILLWAY-JIT MILLIS}, the time this JVM's JIT compilers have
 *       spent compiling since it started (-1 where the JVM does not report it): the harness warms
 *       the services until it grows by little, as they compile on the core they serve from;
 *   <li>{@code scheme NAME [name=port ...]}: stops every service and starts them again, on new
 *       ports, under {@code NAME}, with the remote services at the ports given (if any are given:
 *       they replace the previous ones); prints a new {@code SPILLWAY-GRAPH} line. The JVM, and so
 *       the code the JIT compiled, carries over: the services compile on the one core they serve
 *       from, which took longer than a run on a busy machine, so the harness warms one process
 *       for every scheme.
 * </ul>
 * Stops when stdin closes, so it never outlives the harness.
 *
 * <p>Usage: {@code GraphServer SCENARIO_FILE SCHEME [--only a,b,...] [--remote name=port,...]
 * [key=value ...]}
 */
public final class GraphServer {

  static final String PORTS_LINE = "SPILLWAY-GRAPH ";
  static final String STATS_LINE = "SPILLWAY-STATS ";
  static final String SCHEME_COMMAND = "scheme ";
  static final String JIT_LINE = "SPILLWAY-JIT ";
  static final String ONLY = "--only";
  static final String REMOTE = "--remote";

  private GraphServer() { }

  public static void main(String[] args) throws Exception {
    if (args.length < 2) {
      System.err.println(USAGE);
      System.exit(2);
    }
    Map<String, String> overrides = new LinkedHashMap<>();
    List<String> only = null;
    Map<String, Integer> remote = new LinkedHashMap<>();
    try {
      for (int i = 2; i < args.length; i++) {
        if (args[i].equals(ONLY) && i + 1 < args.length) {
          only = Arrays.stream(args[++i].split(",")).map(String::strip).filter(x -> !x.isEmpty()).toList();
        } else if (args[i].equals(REMOTE) && i + 1 < args.length) {
          remote = parsePorts(Arrays.asList(args[++i].split(",")));
        } else {
          int eq = args[i].indexOf('=');
          if (eq <= 0) {
            throw new IllegalArgumentException("expected key=value, got '" + args[i] + "'");
          }
          overrides.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
      }
    } catch (IllegalArgumentException e) {
      System.err.println("GraphServer: " + e.getMessage() + "\n" + USAGE);
      System.exit(2);
    }
    Scenario scenario = Scenario.load(Path.of(args[0]), overrides);
    ServiceGraph graph = start(scenario, args[1], only, remote);
    try {
      BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
      for (String line; (line = in.readLine()) != null; ) {
        String command = line.strip();
        if (command.equals("stats")) {
          System.out.println(STATS_LINE + graph.stats());
          System.out.flush();
        } else if (command.equals("jit")) {
          System.out.println(JIT_LINE + compileMillis());
          System.out.flush();
        } else if (command.startsWith(SCHEME_COMMAND)) {
          List<String> words = Arrays.asList(command.substring(SCHEME_COMMAND.length()).strip().split("\\s+"));
          if (words.size() > 1) {
            remote = parsePorts(words.subList(1, words.size()));
          }
          System.err.println("graph server: " + graph.stats());
          graph.close();
          graph = null;
          graph = start(scenario, words.getFirst(), only, remote);
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

  /** The JIT's total compilation time so far, ms, or -1 where the JVM does not monitor it. */
  static long compileMillis() {
    return io.spillway.harness.SteadyCapacity.ownJitMillis();
  }

  private static final String USAGE =
      "usage: GraphServer SCENARIO_FILE SCHEME [--only a,b,...] [--remote name=port,...] [key=value ...]";

  /** {@code name=port} items (blank ones skipped) as a map. */
  static Map<String, Integer> parsePorts(List<String> items) {
    Map<String, Integer> ports = new LinkedHashMap<>();
    for (String raw : items) {
      String item = raw.strip();
      if (item.isEmpty()) {
        continue;
      }
      int eq = item.indexOf('=');
      try {
        if (eq <= 0) {
          throw new NumberFormatException();
        }
        ports.put(item.substring(0, eq), Integer.parseInt(item.substring(eq + 1)));
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("expected name=port, got '" + item + "'");
      }
    }
    return ports;
  }

  /** {@code ports} as {@code name=port} items joined by {@code separator}. */
  static String formatPorts(Map<String, Integer> ports, String separator) {
    return ports.entrySet().stream().map(e -> e.getKey() + "=" + e.getValue()).collect(Collectors.joining(separator));
  }

  private static ServiceGraph start(Scenario scenario, String scheme, List<String> only,
      Map<String, Integer> remote) throws Exception {
    GraphWiring wiring = GraphWirings.create(scheme, scenario);
    ServiceGraph graph = ServiceGraph.start(scenario, wiring, only, remote);
    System.err.println("graph server: scheme " + wiring.name() + ", services " + graph
        + (remote.isEmpty() ? "" : ", remote " + formatPorts(remote, " "))
        + ", spin counts " + CpuSpin.clock());
    System.out.println(PORTS_LINE + formatPorts(graph.ports(), " "));
    System.out.flush();
    return graph;
  }
}
