package io.spillway.sim;

import static io.spillway.sim.JsonText.num;
import static io.spillway.sim.JsonText.quote;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** Prints the results table and writes {@code results.json} (and a CSV of any time series). */
public final class Report {

  private Report() { }

  public static void printTable(Experiment.Results results, PrintStream out) {
    Scenario s = results.scenario();
    out.printf(Locale.ROOT, "scenario %s: %d clients, %d cores, service %s, RTT %.1f us, SLO %.1f us%n",
        s.name(), s.clients(), s.cores(), s.service(), s.rttNanos() / 1e3, s.sloNanos() / 1e3);
    out.printf(Locale.ROOT, "capacity %.0f rps (%s)%n%n", results.capacityRps(),
        !results.capacityMeasured() ? "given"
            : Double.isNaN(results.capacitySpread()) ? "measured: no control, closed loop"
            : String.format(Locale.ROOT, "measured: no control, closed loop, spread %.1f%%; "
                + "'> cap' marks goodput above it by more", 100 * results.capacitySpread()));
    boolean series = !s.schedule().isEmpty();
    String header = String.format(Locale.ROOT, "%-24s %7s %8s %10s %10s %10s %7s %9s %9s %7s %9s %8s",
        "scheme", series ? "t_ms" : "", "demand", "offered", "tput", "goodput", "gp/cap",
        "p50_us", "p99_us", "drop%", "rej_us", "expired%");
    out.println(header);
    out.println("-".repeat(header.length()));
    for (ResultRecord r : results.rows()) {
      // A schedule's rows are single windows, too short to judge capacity by; its phases are.
      out.printf(Locale.ROOT, "%-24s %7s %8.2f %10.0f %10.0f %10.0f %7.3f %9.1f %9.1f %7.2f %9.1f %8.2f%s%n",
          r.scheme(), series ? String.format(Locale.ROOT, "%.0f", r.windowStartMillis()) : "",
          r.demand(), r.offeredRps(), r.throughputRps(), r.goodputRps(),
          r.goodputRps() / r.capacityRps(), r.p50Micros(), r.p99Micros(), 100 * r.dropRate(),
          r.rejectDelayMicros(), 100 * r.expiredRate(), !series && results.overCapacity(r) ? "  > cap" : "");
    }
    if (s.replicas() > 1) {
      out.println();
      out.println(s.sharedSession()
          ? s.replicas() + " replicas, one session per client for all of them, calls sent in turn "
              + "(speeds " + String.join(", ", Arrays.stream(s.replicaSpeeds())
              .mapToObj(f -> String.format(Locale.ROOT, "%.2f", f)).toList())
              + "; capacity their sum): no retry"
          : s.roundRobin()
          ? s.replicas() + " replicas, round robin (speeds " + String.join(", ", Arrays.stream(
              s.replicaSpeeds()).mapToObj(f -> String.format(Locale.ROOT, "%.2f", f)).toList())
              + "; capacity their sum): a fast reject retried once on another"
          : "two replicas (protego-nsdi23 §5.3): server 1 first, a fast reject retried once on server 2");
      out.printf(Locale.ROOT, "%-24s %8s %9s %12s %9s %9s%n", "scheme", "demand", "retried%", "rej_p99_us",
          "p99_us", "SLO_us");
      for (ResultRecord r : results.rows()) {
        out.printf(Locale.ROOT, "%-24s %8.2f %9.2f %12.1f %9.1f %9.1f%n", r.scheme(), r.demand(),
            100 * r.retryRate(), r.rejectDelayP99Micros(), r.p99Micros(), r.sloMicros());
      }
    }
    if (!results.convergence().isEmpty()) {
      out.println();
      out.printf(Locale.ROOT, "%-24s %10s %10s %12s %16s%n", "scheme", "step", "at_ms", "goodput", "converged_ms");
      for (StepConvergence c : results.convergence()) {
        out.printf(Locale.ROOT, "%-24s %4.1f->%-4.1f %10.0f %12.0f %16s%n", c.scheme(), c.fromLevel(),
            c.toLevel(), c.stepMillis(), c.convergedGoodputRps(),
            c.convergenceMillis() < 0 ? "never" : String.format(Locale.ROOT, "%.0f", c.convergenceMillis()));
      }
    }
    if (!results.phases().isEmpty()) {
      out.println();
      out.println("by phase (p50 and p99 of every response in the phase, one histogram):");
      String h = String.format(Locale.ROOT, "%-24s %13s %8s %10s %10s %7s %9s %9s %7s %8s",
          "scheme", "phase_ms", "demand", "tput", "goodput", "gp/cap", "p50_us", "p99_us", "drop%", "expired%");
      out.println(h);
      out.println("-".repeat(h.length()));
      for (ResultRecord r : results.phases()) {
        out.printf(Locale.ROOT, "%-24s %13s %8.2f %10.0f %10.0f %7.3f %9.1f %9.1f %7.2f %8.2f%s%n",
            r.scheme(), String.format(Locale.ROOT, "%.0f-%.0f", r.windowStartMillis(),
                r.windowStartMillis() + r.windowMillis()),
            r.demand(), r.throughputRps(), r.goodputRps(), r.goodputRps() / r.capacityRps(),
            r.p50Micros(), r.p99Micros(), 100 * r.dropRate(), 100 * r.expiredRate(),
            (r.p99Micros() > r.sloMicros() ? "  > SLO" : "") + (results.overCapacity(r) ? "  > cap" : ""));
      }
    }
  }

  /** Writes results.json (and timeseries.csv for a schedule), then the plots and report.md. */
  public static void write(Experiment.Results results, Path dir) throws IOException {
    Files.createDirectories(dir);
    Files.writeString(dir.resolve("results.json"), toJson(results));
    writeSeries(results, dir);
    io.spillway.report.ReportWriter.write(dir.resolve("results.json"), dir);
  }

  private static void writeSeries(Experiment.Results results, Path dir) throws IOException {
    if (!results.scenario().schedule().isEmpty()) {
      StringBuilder csv = new StringBuilder(
          "scheme,t_ms,demand,offered_rps,throughput_rps,goodput_rps,p50_us,p99_us,drop_rate,reject_delay_us,expired_rate\n");
      for (ResultRecord r : results.rows()) {
        csv.append(String.format(Locale.ROOT, "%s,%.0f,%.3f,%.0f,%.0f,%.0f,%.1f,%.1f,%.5f,%.1f,%.5f%n",
            r.scheme(), r.windowStartMillis(), r.demand(), r.offeredRps(), r.throughputRps(),
            r.goodputRps(), r.p50Micros(), r.p99Micros(), r.dropRate(), r.rejectDelayMicros(),
            r.expiredRate()));
      }
      Files.writeString(dir.resolve("timeseries.csv"), csv);
    }
  }

  public static String toJson(Experiment.Results results) {
    StringBuilder b = new StringBuilder();
    b.append("{\n  \"scenario\": {");
    boolean first = true;
    for (Map.Entry<String, String> e : results.scenario().effective().entrySet()) {
      b.append(first ? "\n" : ",\n").append("    ").append(quote(e.getKey())).append(": ")
          .append(quote(e.getValue()));
      first = false;
    }
    b.append("\n  },\n");
    b.append("  \"capacity_rps\": ").append(num(results.capacityRps())).append(",\n");
    b.append("  \"capacity_measured\": ").append(results.capacityMeasured()).append(",\n");
    if (!Double.isNaN(results.capacitySpread())) {
      b.append("  \"capacity_spread\": ").append(num(results.capacitySpread())).append(",\n");
    }
    b.append("  \"records\": [");
    appendRows(b, results.rows());
    b.append("\n  ],\n  \"convergence\": [");
    List<StepConvergence> conv = results.convergence();
    for (int i = 0; i < conv.size(); i++) {
      StepConvergence c = conv.get(i);
      b.append(i == 0 ? "\n" : ",\n").append("    {")
          .append("\"scheme\": ").append(quote(c.scheme()))
          .append(", \"from_demand\": ").append(num(c.fromLevel()))
          .append(", \"to_demand\": ").append(num(c.toLevel()))
          .append(", \"step_ms\": ").append(num(c.stepMillis()))
          .append(", \"converged_goodput_rps\": ").append(num(c.convergedGoodputRps()))
          .append(", \"convergence_ms\": ").append(num(c.convergenceMillis()))
          .append("}");
    }
    b.append(conv.isEmpty() ? "]" : "\n  ]");
    if (!results.phases().isEmpty()) {
      // One row per scheme and phase, t_ms and window_ms spanning the phase.
      b.append(",\n  \"phases\": [");
      appendRows(b, results.phases());
      b.append("\n  ]");
    }
    b.append("\n}\n");
    return b.toString();
  }

  private static void appendRows(StringBuilder b, List<ResultRecord> rows) {
    for (int i = 0; i < rows.size(); i++) {
      ResultRecord r = rows.get(i);
      b.append(i == 0 ? "\n" : ",\n").append("    {")
          .append("\"scheme\": ").append(quote(r.scheme()))
          .append(", \"clients\": ").append(r.clients())
          .append(", \"demand\": ").append(num(r.demand()))
          .append(", \"capacity_rps\": ").append(num(r.capacityRps()))
          .append(", \"offered_rps\": ").append(num(r.offeredRps()))
          .append(", \"throughput_rps\": ").append(num(r.throughputRps()))
          .append(", \"goodput_rps\": ").append(num(r.goodputRps()))
          .append(", \"p50_us\": ").append(num(r.p50Micros()))
          .append(", \"p99_us\": ").append(num(r.p99Micros()))
          .append(", \"slo_us\": ").append(num(r.sloMicros()))
          .append(", \"drop_rate\": ").append(num(r.dropRate()))
          .append(", \"reject_delay_us\": ").append(num(r.rejectDelayMicros()))
          .append(", \"expired_rate\": ").append(num(r.expiredRate()))
          .append(", \"messages_per_request\": ").append(num(r.messagesPerRequest()))
          .append(", \"retry_rate\": ").append(num(r.retryRate()))
          .append(", \"reject_delay_p99_us\": ").append(num(r.rejectDelayP99Micros()));
      if (r.windowMillis() > 0) {
        b.append(", \"t_ms\": ").append(num(r.windowStartMillis()))
            .append(", \"window_ms\": ").append(num(r.windowMillis()));
      }
      b.append("}");
    }
  }
}
