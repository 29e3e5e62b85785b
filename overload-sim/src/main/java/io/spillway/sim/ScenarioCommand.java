package io.spillway.sim;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Consumer;

/**
 * The command line every scenario runner shares ({@code ./spillway sim} and {@code ./spillway
 * harness}): {@code SCENARIO [--out DIR] [--set key=value ...]} plus the runner's own flags. SCENARIO
 * is a path, or a name under {@code scenarios/} (with or without {@code .conf}).
 *
 * @param scenarioFile the scenario file
 * @param out the output directory, or {@code null} for the runner's default
 * @param overrides the {@code --set} pairs, in order
 * @param help whether {@code --help} was given (then nothing else is meaningful)
 */
public record ScenarioCommand(Path scenarioFile, Path out, Map<String, String> overrides, boolean help) {

  /**
   * Parses {@code args}. A flag in {@code flags} takes one value, handed to its consumer.
   *
   * @throws IllegalArgumentException naming what is wrong
   */
  public static ScenarioCommand parse(String[] args, Map<String, Consumer<String>> flags) {
    String scenario = null;
    Path out = null;
    Map<String, String> overrides = new LinkedHashMap<>();
    for (int i = 0; i < args.length; i++) {
      String arg = args[i];
      if (arg.equals("-h") || arg.equals("--help")) {
        return new ScenarioCommand(null, null, Map.of(), true);
      } else if (arg.equals("--out")) {
        out = Path.of(value(args, ++i, arg));
      } else if (arg.equals("--set")) {
        String kv = value(args, ++i, arg);
        int eq = kv.indexOf('=');
        if (eq <= 0) {
          throw new IllegalArgumentException("--set takes key=value, got '" + kv + "'");
        }
        overrides.put(kv.substring(0, eq).strip(), kv.substring(eq + 1).strip());
      } else if (flags.containsKey(arg)) {
        flags.get(arg).accept(value(args, ++i, arg));
      } else if (arg.startsWith("-") || scenario != null) {
        throw new IllegalArgumentException("unexpected argument '" + arg + "' (try --help)");
      } else {
        scenario = arg;
      }
    }
    if (scenario == null) {
      throw new IllegalArgumentException("name a scenario: a path, or a name under scenarios/ (try --help)");
    }
    return new ScenarioCommand(resolve(scenario), out, overrides, false);
  }

  /** Loads the scenario with the overrides applied. */
  public Scenario load() throws java.io.IOException {
    return Scenario.load(scenarioFile, overrides);
  }

  static Path resolve(String arg) {
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
}
