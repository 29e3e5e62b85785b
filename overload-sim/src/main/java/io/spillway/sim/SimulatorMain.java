package io.spillway.sim;

import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code ./spillway sim SCENARIO [--out DIR] [--set key=value ...] [--threads N]}: runs a scenario
 * in the simulator, prints the table, and writes DIR/results.json (default DIR:
 * results/SCENARIO); a call-graph scenario writes DIR/graph.json and DIR/INTERFACE/results.json
 * ({@link GraphReport}). SCENARIO is a path, or a name under {@code scenarios/}. A scenario with
 * {@code matrix.*} keys ({@code scenarios/robustness.conf}) is a {@link RobustnessMatrix} instead.
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
    int[] threads = {Runtime.getRuntime().availableProcessors()};
    ScenarioCommand cmd = ScenarioCommand.parse(args,
        Map.of("--threads", v -> threads[0] = Integer.parseInt(v)));
    if (cmd.help()) {
      printUsage();
      return 0;
    }
    Scenario scenario = cmd.load();
    Path out = cmd.out() != null ? cmd.out() : Path.of("results", scenario.name());
    if (scenario.callGraph() != null) {
      return GraphReport.runCommand(scenario, out, threads[0]); // multi-service call graph
    }
    if (!scenario.muTuneKeys().isEmpty()) {
      return MuTuneExperiment.runCommand(scenario, out); // µTune's threading models
    }
    if (RobustnessMatrix.present(scenario)) {
      return runMatrix(scenario, out, threads[0]); // every scheme at its defaults over many workloads
    }
    long started = System.nanoTime();
    List<Map<String, String>> variants = scenario.sweep();
    if (variants.isEmpty()) {
      Experiment.Results results = new Experiment(scenario, threads[0]).run();
      Report.printTable(results, System.out);
      Report.write(results, out);
      System.out.printf(Locale.ROOT, "%nwrote %s, plots and report.md in %s (%.1f s wall clock, %d threads)%n",
          out.resolve("results.json"), out, (System.nanoTime() - started) / 1e9, threads[0]);
      return 0;
    }
    List<SweepSummary.Row> rows = new java.util.ArrayList<>();
    for (Map<String, String> variant : variants) {
      String label = SweepSummary.label(variant);
      Scenario s = scenario.with(variant);
      System.out.printf(Locale.ROOT, "%n=== %s%n", label);
      Experiment.Results results = new Experiment(s, threads[0]).run();
      Report.printTable(results, System.out);
      Report.write(results, out.resolve(SweepSummary.directory(variant)));
      results.rows().forEach(r -> rows.add(new SweepSummary.Row(label, r)));
    }
    SweepSummary.write(scenario, rows, out);
    System.out.printf(Locale.ROOT, "%nwrote %d variants under %s and %s (%.1f s wall clock, %d threads)%n",
        variants.size(), out, out.resolve("summary.md"), (System.nanoTime() - started) / 1e9, threads[0]);
    return 0;
  }

  /** Runs a robustness matrix, prints its summary and writes it into {@code out}. */
  static int runMatrix(Scenario scenario, Path out, int threads) throws Exception {
    long started = System.nanoTime();
    RobustnessMatrix matrix = new RobustnessMatrix(scenario, threads);
    System.out.printf(Locale.ROOT, "robustness matrix %s: %d workloads x %d patterns x %d schemes%n",
        scenario.name(), matrix.selectedWorkloads().size(), matrix.selectedPatterns().size(), scenario.schemes().size());
    RobustnessSummary summary = new RobustnessSummary(matrix.run());
    double wall = (System.nanoTime() - started) / 1e9;
    summary.write(scenario, out, wall, threads);
    System.out.println();
    summary.bars().forEach(System.out::println);
    System.out.println();
    System.out.printf(Locale.ROOT, "%-20s %8s %8s %8s %8s %8s %10s %10s%n", "scheme", "worst", "median",
        "in SLO", "wins", "trails", "conv_ms", "p99/SLO");
    for (RobustnessSummary.SchemeSummary s : summary.perScheme()) {
      System.out.printf(Locale.ROOT, "%-20s %8.3f %8.3f %7.0f%% %7.0f%% %7.0f%% %10s %10.2f%n", s.scheme(),
          s.worstGoodput(), s.medianGoodput(), 100 * s.withinSlo(), 100 * s.wins(), 100 * s.trails(),
          Double.isNaN(s.worstConvergenceMillis()) ? "" : s.worstConvergenceMillis() < 0 ? "never"
              : String.format(Locale.ROOT, "%.0f", s.worstConvergenceMillis()), s.medianP99Ratio());
    }
    System.out.printf(Locale.ROOT, "%nwrote %s (cells.csv, summary.md, summary.csv, goodput.png, p99.png)"
        + " (%.1f s wall clock, %d threads)%n", out, wall, threads);
    return 0;
  }

  private static void printUsage() {
    System.out.println("usage: spillway sim SCENARIO [--out DIR] [--set key=value ...] [--threads N]");
    System.out.println("       spillway sim robustness [--out DIR] [--set key=value ...]  (a scenario with matrix.* keys:"
        + " every scheme at its defaults over a matrix of workloads)");
    System.out.println("       spillway sim robustness [--out DIR] [--set key=value ...]   every scheme at its defaults over the robustness matrix");
    System.out.println();
    System.out.println("schemes: " + String.join(", ", SchemeRegistry.names()));
    System.out.println("scenario keys:");
    Scenario.KEYS.forEach((k, v) -> System.out.printf(Locale.ROOT, "  %-30s %s%n", k, v));
  }
}
