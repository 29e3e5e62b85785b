package io.spillway.sim;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * {@code ./spillway sim SCENARIO [--out DIR] [--set key=value ...] [--threads N]}: runs a scenario
 * in the simulator, prints the table, and writes DIR/results.json (default DIR:
 * results/SCENARIO). SCENARIO is a path, or a name under {@code scenarios/}.
 */
public final class SimulatorMain {

  private SimulatorMain() { }

  public static void main(String[] args) throws Exception {
    try {
      System.exit(run(args));
    } catch (IllegalArgumentException e) {
      System.err.println("spillway sim: " + e.getMessage());
      System.exit(2);
    }
  }

  static int run(String[] args) throws Exception {
    String scenarioArg = null;
    Path out = null;
    int threads = Runtime.getRuntime().availableProcessors();
    Map<String, String> overrides = new LinkedHashMap<>();
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "-h", "--help" -> {
          printUsage();
          return 0;
        }
        case "--out" -> out = Path.of(value(args, ++i, "--out"));
        case "--threads" -> threads = Integer.parseInt(value(args, ++i, "--threads"));
        case "--set" -> {
          String kv = value(args, ++i, "--set");
          int eq = kv.indexOf('=');
          if (eq <= 0) {
            throw new IllegalArgumentException("--set takes key=value, got '" + kv + "'");
          }
          overrides.put(kv.substring(0, eq).strip(), kv.substring(eq + 1).strip());
        }
        default -> {
          if (args[i].startsWith("-") || scenarioArg != null) {
            throw new IllegalArgumentException("unexpected argument '" + args[i] + "' (try --help)");
          }
          scenarioArg = args[i];
        }
      }
    }
    if (scenarioArg == null) {
      printUsage();
      return 2;
    }
    Path file = resolve(scenarioArg);
    Scenario scenario = Scenario.load(file, overrides);
    if (out == null) {
      out = Path.of("results", scenario.name());
    }
    long started = System.nanoTime();
    Experiment.Results results = new Experiment(scenario, threads).run();
    Report.printTable(results, System.out);
    Report.write(results, out);
    System.out.printf(Locale.ROOT, "%nwrote %s, plots and report.md in %s (%.1f s wall clock, %d threads)%n",
        out.resolve("results.json"), out, (System.nanoTime() - started) / 1e9, threads);
    return 0;
  }

  private static Path resolve(String arg) {
    Path direct = Path.of(arg);
    if (Files.isRegularFile(direct)) {
      return direct;
    }
    for (Path candidate : new Path[] {Path.of("scenarios", arg), Path.of("scenarios", arg + ".conf")}) {
      if (Files.isRegularFile(candidate)) {
        return candidate;
      }
    }
    throw new IllegalArgumentException("no scenario '" + arg + "' (looked for " + direct + ", scenarios/"
        + arg + ", scenarios/" + arg + ".conf)");
  }

  private static String value(String[] args, int i, String flag) {
    if (i >= args.length) {
      throw new IllegalArgumentException(flag + " needs a value");
    }
    return args[i];
  }

  private static void printUsage() {
    System.out.println("usage: spillway sim SCENARIO [--out DIR] [--set key=value ...] [--threads N]");
    System.out.println();
    System.out.println("schemes: " + String.join(", ", SchemeRegistry.names()));
    System.out.println("scenario keys:");
    Scenario.KEYS.forEach((k, v) -> System.out.printf(Locale.ROOT, "  %-30s %s%n", k, v));
  }
}
