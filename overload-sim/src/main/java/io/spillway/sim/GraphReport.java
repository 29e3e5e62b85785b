package io.spillway.sim;

import static io.spillway.sim.JsonText.num;
import static io.spillway.sim.JsonText.quote;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Prints a call-graph scenario's table and writes its files as the socket graph harness ({@code
 * GraphHarnessMain}) lays them out: {@code graph.json}, the graph's own record (each interface's
 * phases or levels with p95, shed shares, wasted compute and recovery; each service's), with
 * {@code timeseries.csv} (per window, per interface) for a schedule; and per interface {@code
 * <iface>/results.json} with its report and plots ({@link Report#write}), one row per scheme and
 * level or window, which {@code ./spillway report} renders. One results.json with a row per
 * interface would repeat scheme and level, which the report refuses.
 */
final class GraphReport {

  private GraphReport() { }

  /** Runs a graph scenario (and each variant of its sweep) from the command line. */
  static int runCommand(Scenario scenario, Path out, int threads) throws Exception {
    List<Map<String, String>> variants = scenario.sweep();
    long started = System.nanoTime();
    if (variants.isEmpty()) {
      GraphExperiment.Results results = new GraphExperiment(scenario, threads).run();
      printTable(results, System.out);
      write(results, out);
      System.out.printf(Locale.ROOT, "%nwrote %s and a results.json per interface (%s) in %s "
              + "(%.1f s wall clock, %d threads)%n", GRAPH_FILE,
          String.join(", ", written(results)), out, (System.nanoTime() - started) / 1e9, threads);
      return 0;
    }
    for (Map<String, String> variant : variants) {
      System.out.printf(Locale.ROOT, "%n=== %s%n", SweepSummary.label(variant));
      GraphExperiment.Results results = new GraphExperiment(scenario.with(variant), threads).run();
      printTable(results, System.out);
      write(results, out.resolve(SweepSummary.directory(variant)));
    }
    System.out.printf(Locale.ROOT, "%nwrote %d variants under %s (%.1f s wall clock, %d threads)%n",
        variants.size(), out, (System.nanoTime() - started) / 1e9, threads);
    return 0;
  }

  static void printTable(GraphExperiment.Results results, PrintStream out) {
    Scenario s = results.scenario();
    CallGraph g = results.graph();
    int workers = g.services().stream().mapToInt(CallGraph.Service::workers).sum();
    out.printf(Locale.ROOT, "scenario %s: %d clients, %d services (%d workers), service %s, "
            + "RTT %.1f us per hop, cost rx/tx %.2f/%.2f us%n", s.name(), s.clients(),
        g.services().size(), workers, s.service().kind().name().toLowerCase(Locale.ROOT),
        s.rttNanos() / 1e3, s.rxCostNanos() / 1e3, s.txCostNanos() / 1e3);
    for (CallGraph.Interface i : g.interfaces()) {
      out.printf(Locale.ROOT, "  %-10s depth %d, width %d, %2d nodes, SLO %8.0f us, capacity %8.0f rps (%s)%n",
          i.name(), i.depth(), i.width(), i.nodes().size(), i.sloNanos() / 1e3,
          results.capacityRps()[i.index()],
          results.capacityMeasured() ? "measured alone: no control, closed loop" : "given");
    }
    for (String skipped : results.skipped()) {
      out.printf(Locale.ROOT, "  skipped scheme '%s': not in SchemeRegistry (known: %s)%n", skipped,
          String.join(", ", SchemeRegistry.names()));
    }
    out.println();
    String header = String.format(Locale.ROOT,
        "%-14s %-10s %11s %6s %8s %8s %8s %6s %9s %9s %9s %6s %6s %6s %7s %8s",
        "scheme", "iface", "t_ms", "demand", "offered", "tput", "goodput", "gp/cap", "p50_us",
        "p95_us", "p99_us", "shed%c", "shed%f", "shed%i", "wasted%", "recov_ms");
    out.println(header);
    out.println("-".repeat(header.length()));
    for (GraphExperiment.Row r : results.rows()) {
      out.printf(Locale.ROOT,
          "%-14s %-10s %11s %6.2f %8.0f %8.0f %8.0f %6.3f %9.0f %9.0f %9.0f %6.1f %6.1f %6.1f %7.1f %8s%n",
          r.scheme(), r.iface(), String.format(Locale.ROOT, "%.0f-%.0f", r.fromMillis(), r.toMillis()),
          r.demand(), r.offeredRps(), r.throughputRps(), r.goodputRps(),
          r.goodputRps() / r.capacityRps(), r.p50Micros(), r.p95Micros(), r.p99Micros(),
          100 * r.shedClient(), 100 * r.shedFront(), 100 * r.shedInner(), 100 * r.wasted(),
          recoveryCell(r.recoveryMillis()));
    }
    out.println();
    out.println("shed%c/f/i: share of offered requests shed at the client, at the front-end, at "
        + "inner hops; wasted%: compute spent on requests that then failed; recov_ms: from a "
        + "surge (or a phase's step) until goodput stays recovered, 100 ms windows read on 2-window "
        + "spans");
    StringBuilder wall = new StringBuilder("simulation CPU time per scheme:");
    results.cpuSeconds().forEach((k, v) ->
        wall.append(String.format(Locale.ROOT, " %s %.1f s,", k, v)));
    out.println(wall.substring(0, wall.length() - 1));
  }

  /** "-" for rows without a step, "never" for goodput that did not recover. */
  static String recoveryCell(double millis) {
    if (Double.isNaN(millis)) {
      return "-";
    }
    return millis < 0 ? "never" : String.format(Locale.ROOT, "%.0f", millis);
  }

  /** The graph's own record, beside the per-interface directories; the graph harness's name. */
  static final String GRAPH_FILE = "graph.json";

  /** The interfaces that get a directory: those with a row (an idle one has none). */
  static List<String> written(GraphExperiment.Results results) {
    return results.graph().interfaces().stream()
        .filter(i -> !results.interfaces().get(i.index()).rows().isEmpty())
        .map(CallGraph.Interface::name).toList();
  }

  static void write(GraphExperiment.Results results, Path dir) throws IOException {
    Files.createDirectories(dir);
    Files.writeString(dir.resolve(GRAPH_FILE), toJson(results));
    for (CallGraph.Interface i : results.graph().interfaces()) {
      Experiment.Results own = results.interfaces().get(i.index());
      if (!own.rows().isEmpty()) {
        Report.write(own, dir.resolve(i.name()));
      }
    }
    if (!results.series().isEmpty()) {
      StringBuilder csv = new StringBuilder("scheme,interface,t_ms,demand,offered_rps,"
          + "throughput_rps,goodput_rps,p50_us,p95_us,p99_us,shed_client,shed_front,shed_inner,wasted\n");
      for (GraphExperiment.Row r : results.series()) {
        csv.append(String.format(Locale.ROOT, "%s,%s,%.0f,%.3f,%.0f,%.0f,%.0f,%.1f,%.1f,%.1f,%.5f,%.5f,%.5f,%.5f%n",
            r.scheme(), r.iface(), r.fromMillis(), r.demand(), r.offeredRps(), r.throughputRps(),
            r.goodputRps(), r.p50Micros(), r.p95Micros(), r.p99Micros(), r.shedClient(),
            r.shedFront(), r.shedInner(), r.wasted()));
      }
      Files.writeString(dir.resolve("timeseries.csv"), csv);
    }
  }

  /** The graph's record ({@value #GRAPH_FILE}); wall-clock times are left out, so that equal seeds give equal files. */
  static String toJson(GraphExperiment.Results results) {
    StringBuilder b = new StringBuilder("{\n  \"scenario\": {");
    boolean first = true;
    for (Map.Entry<String, String> e : results.scenario().effective().entrySet()) {
      b.append(first ? "\n" : ",\n").append("    ").append(quote(e.getKey())).append(": ")
          .append(quote(e.getValue()));
      first = false;
    }
    b.append("\n  },\n  \"interfaces\": [");
    CallGraph g = results.graph();
    for (CallGraph.Interface i : g.interfaces()) {
      b.append(i.index() == 0 ? "\n" : ",\n").append("    {\"interface\": ").append(quote(i.name()))
          .append(", \"depth\": ").append(i.depth()).append(", \"width\": ").append(i.width())
          .append(", \"nodes\": ").append(i.nodes().size())
          .append(", \"slo_us\": ").append(num(i.sloNanos() / 1e3))
          .append(", \"capacity_rps\": ").append(num(results.capacityRps()[i.index()])).append("}");
    }
    b.append("\n  ],\n  \"capacity_measured\": ").append(results.capacityMeasured());
    b.append(",\n  \"skipped_schemes\": [");
    for (int i = 0; i < results.skipped().size(); i++) {
      b.append(i == 0 ? "" : ", ").append(quote(results.skipped().get(i)));
    }
    b.append("],\n  \"records\": [");
    appendRows(b, results.rows());
    b.append("\n  ],\n  \"services\": [");
    List<GraphExperiment.ServiceRow> services = results.services();
    for (int i = 0; i < services.size(); i++) {
      GraphExperiment.ServiceRow r = services.get(i);
      b.append(i == 0 ? "\n" : ",\n").append("    {\"scheme\": ").append(quote(r.scheme()))
          .append(", \"from_ms\": ").append(num(r.fromMillis()))
          .append(", \"to_ms\": ").append(num(r.toMillis()))
          .append(", \"service\": ").append(quote(r.service()))
          .append(", \"received_rps\": ").append(num(r.receivedRps()))
          .append(", \"drop_rate\": ").append(num(r.dropRate()))
          .append(", \"shed_outbound_rps\": ").append(num(r.shedOutboundRps()))
          .append(", \"utilization\": ").append(num(r.utilization())).append("}");
    }
    b.append("\n  ]\n}\n");
    return b.toString();
  }

  private static void appendRows(StringBuilder b, List<GraphExperiment.Row> rows) {
    for (int i = 0; i < rows.size(); i++) {
      GraphExperiment.Row r = rows.get(i);
      b.append(i == 0 ? "\n" : ",\n").append("    {\"scheme\": ").append(quote(r.scheme()))
          .append(", \"interface\": ").append(quote(r.iface()))
          .append(", \"demand\": ").append(num(r.demand()))
          .append(", \"from_ms\": ").append(num(r.fromMillis()))
          .append(", \"to_ms\": ").append(num(r.toMillis()))
          .append(", \"capacity_rps\": ").append(num(r.capacityRps()))
          .append(", \"offered_rps\": ").append(num(r.offeredRps()))
          .append(", \"throughput_rps\": ").append(num(r.throughputRps()))
          .append(", \"goodput_rps\": ").append(num(r.goodputRps()))
          .append(", \"p50_us\": ").append(num(r.p50Micros()))
          .append(", \"p95_us\": ").append(num(r.p95Micros()))
          .append(", \"p99_us\": ").append(num(r.p99Micros()))
          .append(", \"slo_us\": ").append(num(r.sloMicros()))
          .append(", \"shed_client\": ").append(num(r.shedClient()))
          .append(", \"shed_front\": ").append(num(r.shedFront()))
          .append(", \"shed_inner\": ").append(num(r.shedInner()))
          .append(", \"wasted\": ").append(num(r.wasted()));
      if (!Double.isNaN(r.recoveryMillis())) {
        b.append(", \"recovery_ms\": ").append(num(r.recoveryMillis()));
      }
      b.append("}");
    }
  }
}
