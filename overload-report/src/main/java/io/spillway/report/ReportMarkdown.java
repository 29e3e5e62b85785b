package io.spillway.report;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Renders the one-page {@code report.md}: title and description, key parameters, the results
 * table, the convergence table when there is one, and the charts by relative link.
 *
 * <p>Time-series runs have hundreds of windows, too many for one page, so their table has one row
 * per scheme and phase of the demand schedule. Goodput there is the mean over the phase's windows
 * (equal-length windows, so that is the phase's rate). The phase's p99, drop rate, reject delay and
 * expired rate are those of the file's phase row, counted over every request of the phase: a mean
 * of per-window ratios is not the phase's ratio when windows receive different numbers of
 * requests. A file without phase rows gets means over the windows instead, and the table says so.
 * Latency is also given as the median and the worst of the per-window p99s, because percentiles
 * cannot be averaged (DESIGN.md, "Measures").
 *
 * <p>A latency of 0 is how the producers write "no responses" (an empty histogram has no
 * percentiles), so latencies ≤ 0 are shown as a dash, never as 0 µs.
 *
 * <p>Stateless; safe to use from any thread.
 */
final class ReportMarkdown {

  static final String DASH = "–";

  /** Scenario keys shown in the parameter table; the rest go in a collapsed list. */
  private static final Set<String> SHOWN = Set.of("name", "description", "clients", "cores",
      "service", "service_mean_us", "rtt_us", "slo_us", "capacity_rps", "demand", "schedule",
      "schemes", "duration_ms", "warmup_ms", "window_ms", "seed");

  private ReportMarkdown() { }

  static String render(Results r, List<Figure> figures, String fallbackName) {
    Map<String, String> s = r.scenario();
    StringBuilder b = new StringBuilder();
    b.append("# ").append(escape(r.name(fallbackName))).append("\n\n");
    String description = s.get("description");
    if (description != null && !description.isBlank()) {
      b.append(escape(description.strip())).append("\n\n");
    }

    b.append("## Parameters\n\n| parameter | value |\n| --- | --- |\n");
    row(b, "clients", integer(s.get("clients")));
    row(b, "cores", integer(s.get("cores")));
    row(b, "service", service(s));
    row(b, "RTT", micros(s.get("rtt_us")));
    row(b, "SLO", Double.isNaN(r.sloMicros()) ? DASH : plain(r.sloMicros()) + " µs");
    row(b, "capacity", capacity(r));
    String schedule = s.get("schedule");
    if (schedule != null && !schedule.isBlank()) {
      row(b, "demand schedule", escape(schedule) + " (level × capacity @ ms)");
    } else if (s.get("demand") != null) {
      row(b, "demand", escape(s.get("demand")) + " × capacity");
    }
    row(b, "schemes", escape(String.join(", ", r.schemes())));
    if (s.containsKey("duration_ms")) {
      String d = milliseconds(s.get("duration_ms"));
      if (s.containsKey("warmup_ms")) {
        d += " measured, after " + milliseconds(s.get("warmup_ms")) + " warm-up";
      }
      row(b, "duration", d);
    }
    if (s.containsKey("seed")) {
      row(b, "seed", escape(s.get("seed")));
    }
    List<String> others = s.keySet().stream().filter(k -> !SHOWN.contains(k)).sorted().toList();
    if (!others.isEmpty()) {
      b.append("\n<details><summary>other scenario keys</summary>\n\n");
      for (String k : others) {
        b.append("- `").append(k).append("` = `").append(s.get(k).replace("`", "'"))
            .append("`\n");
      }
      b.append("\n</details>\n");
    }

    if (!r.steadyRows().isEmpty()) {
      steadyTable(b, r);
    }
    if (!r.windowRows().isEmpty()) {
      phaseTable(b, r);
    }
    if (!r.convergence().isEmpty()) {
      convergenceTable(b, r);
    }

    if (!figures.isEmpty()) {
      b.append("\n## Plots\n");
      for (Figure f : figures) {
        String title = f.chart().getTitle() == null ? f.fileName() : f.chart().getTitle().getText();
        b.append("\n### ").append(escape(title)).append("\n\n");
        b.append(escape(f.caption())).append("\n\n");
        b.append("![").append(escape(title)).append("](").append(f.fileName()).append(")\n");
        for (String note : f.notes()) {
          b.append("\n> Note: ").append(escape(note)).append(".\n");
        }
      }
    }
    return b.toString();
  }

  private static void steadyTable(StringBuilder b, Results r) {
    b.append("\n## Results\n\n");
    b.append("One row per scheme and demand level. Goodput counts responses within the SLO; "
        + "latency is end to end, client queueing included; drop rate is server rejects ÷ "
        + "requests received there; expired are requests that timed out in client queues.\n\n");
    b.append("| scheme | demand (× cap) | offered (rps) | throughput (rps) | goodput (rps) "
        + "| goodput ÷ cap | p50 (µs) | p99 (µs) | drop (%) | reject delay (µs) | expired (%) "
        + "| msgs / req |\n");
    b.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
        + "| ---: |\n");
    for (Results.Row row : r.steadyRows()) {
      double cap = row.capacityRps() > 0 ? row.capacityRps() : r.capacityRps();
      b.append("| ").append(escape(row.scheme()))
          .append(" | ").append(fixed(row.demand(), 2))
          .append(" | ").append(grouped(row.offeredRps()))
          .append(" | ").append(grouped(row.throughputRps()))
          .append(" | ").append(grouped(row.goodputRps()))
          .append(" | ").append(cap > 0 ? fixed(row.goodputRps() / cap, 3) : DASH)
          .append(" | ").append(latency(row.p50Micros()))
          .append(" | ").append(latency(row.p99Micros()))
          .append(" | ").append(fixed(100 * row.dropRate(), 2))
          .append(" | ").append(row.rejectDelayMicros() > 0 ? fixed(row.rejectDelayMicros(), 1)
              : DASH)
          .append(" | ").append(fixed(100 * row.expiredRate(), 2))
          .append(" | ").append(fixed(row.messagesPerRequest(), 2))
          .append(" |\n");
    }
  }

  /**
   * A stretch of consecutive windows of one scheme at one demand level.
   *
   * @param scheme the scheme
   * @param demand the level, × capacity
   * @param windows the windows, in time order
   */
  record Phase(String scheme, double demand, List<Results.Row> windows) {

    double startMillis() {
      return windows.get(0).windowStartMillis();
    }

    double endMillis() {
      Results.Row last = windows.get(windows.size() - 1);
      double w = Double.isNaN(last.windowMillis()) ? 0 : last.windowMillis();
      return last.windowStartMillis() + w;
    }

    double mean(java.util.function.ToDoubleFunction<Results.Row> f) {
      return windows.stream().mapToDouble(f).filter(Double::isFinite).average()
          .orElse(Double.NaN);
    }

    /** Median of the per-window p99s (windows without a p99 left out). */
    double medianP99() {
      double[] v = windows.stream().mapToDouble(Results.Row::p99Micros)
          .filter(x -> Double.isFinite(x) && x > 0).sorted().toArray();
      if (v.length == 0) {
        return Double.NaN;
      }
      return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }

    /** Worst of the per-window p99s (windows without a p99 left out, as in the median). */
    double maxP99() {
      return windows.stream().mapToDouble(Results.Row::p99Micros)
          .filter(x -> Double.isFinite(x) && x > 0).max().orElse(Double.NaN);
    }

    long windowsOver(double sloMicros) {
      return windows.stream().filter(w -> w.p99Micros() > sloMicros).count();
    }

    /** Mean reject delay over the windows that had rejects. */
    double meanRejectDelay() {
      return windows.stream().mapToDouble(Results.Row::rejectDelayMicros).filter(x -> x > 0)
          .average().orElse(Double.NaN);
    }
  }

  /** Splits each scheme's windows, in time order, wherever the demand level changes. */
  static List<Phase> phases(List<Results.Row> windows) {
    Map<String, List<Results.Row>> byScheme = new LinkedHashMap<>();
    for (Results.Row w : windows) {
      byScheme.computeIfAbsent(w.scheme(), k -> new ArrayList<>()).add(w);
    }
    List<Phase> out = new ArrayList<>();
    byScheme.forEach((scheme, rows) -> {
      List<Results.Row> sorted = rows.stream()
          .sorted(Comparator.comparingDouble(Results.Row::windowStartMillis)).toList();
      List<Results.Row> current = new ArrayList<>();
      for (Results.Row w : sorted) {
        if (!current.isEmpty() && Double.compare(current.get(0).demand(), w.demand()) != 0) {
          out.add(new Phase(scheme, current.get(0).demand(), List.copyOf(current)));
          current.clear();
        }
        current.add(w);
      }
      if (!current.isEmpty()) {
        out.add(new Phase(scheme, current.get(0).demand(), List.copyOf(current)));
      }
    });
    return out;
  }

  private static void phaseTable(StringBuilder b, Results r) {
    List<Results.Row> windows = r.windowRows();
    double slo = r.sloMicros();
    List<Phase> phases = phases(windows);
    boolean allPhaseRows = phases.stream().allMatch(p -> phaseRow(r, p) != null);
    b.append("\n## Results by phase of the demand schedule\n\n");
    b.append(String.format(Locale.ROOT, "%d windows in all (`t_ms` rows of results.json). Per "
        + "scheme and phase: goodput is the mean over the phase's windows; ", windows.size()));
    if (allPhaseRows) {
      b.append("p99 (phase), drop, reject delay and expired are those of every request in the "
          + "phase (its `phases` row of results.json: one histogram, ratios of the phase's "
          + "totals); ");
    } else {
      b.append("where results.json has a `phases` row for the phase, p99 (phase), drop, reject "
          + "delay and expired are those of every request in it (one histogram, ratios of the "
          + "phase's totals); where it has none, p99 (phase) is a dash, drop and expired are "
          + "means of the per-window ratios and reject delay the mean over windows that had "
          + "rejects; ");
    }
    b.append("p99 median and worst are those of the per-window p99s (percentiles are not "
        + "averaged); a dash for latency means no responses.\n\n");
    b.append("| scheme | phase (ms) | demand (× cap) | windows | goodput (rps) | goodput ÷ cap "
        + "| p99 (phase, µs) | p99 median (µs) | p99 worst (µs) | windows p99 > SLO | drop (%) "
        + "| reject delay (µs) | expired (%) |\n");
    b.append("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
        + "| ---: |\n");
    for (Phase p : phases) {
      double cap = p.windows().get(0).capacityRps() > 0 ? p.windows().get(0).capacityRps()
          : r.capacityRps();
      double goodput = p.mean(Results.Row::goodputRps);
      Results.Row whole = phaseRow(r, p);
      double drop = whole != null ? whole.dropRate() : p.mean(Results.Row::dropRate);
      double expired = whole != null ? whole.expiredRate() : p.mean(Results.Row::expiredRate);
      double rejectDelay = whole != null ? whole.rejectDelayMicros() : p.meanRejectDelay();
      b.append("| ").append(escape(p.scheme()))
          .append(" | ").append(plain(p.startMillis())).append("–").append(plain(p.endMillis()))
          .append(" | ").append(fixed(p.demand(), 2))
          .append(" | ").append(p.windows().size())
          .append(" | ").append(grouped(goodput))
          .append(" | ").append(cap > 0 ? fixed(goodput / cap, 3) : DASH)
          .append(" | ").append(latency(phaseP99(r, p)))
          .append(" | ").append(latency(p.medianP99()))
          .append(" | ").append(latency(p.maxP99()))
          .append(" | ").append(Double.isNaN(slo) ? DASH : Long.toString(p.windowsOver(slo)))
          .append(" | ").append(fixed(100 * drop, 2))
          .append(" | ").append(rejectDelay > 0 ? fixed(rejectDelay, 1) : DASH)
          .append(" | ").append(fixed(100 * expired, 2))
          .append(" |\n");
    }
  }

  /**
   * The p99 of every response in {@code p}, from its {@link #phaseRow}; NaN when the file has none.
   */
  static double phaseP99(Results r, Phase p) {
    Results.Row row = phaseRow(r, p);
    return row == null ? Double.NaN : row.p99Micros();
  }

  /**
   * The file's phase row for {@code p}: the one of the same scheme whose span holds the middle of
   * {@code p} (a phase's windows start where the generator switched, one window after its step at
   * most); null when the file has no such row.
   */
  static Results.Row phaseRow(Results r, Phase p) {
    double middle = (p.startMillis() + p.endMillis()) / 2;
    for (Results.Row row : r.phases()) {
      if (row.scheme().equals(p.scheme()) && row.windowStartMillis() <= middle
          && middle < row.windowStartMillis() + row.windowMillis()) {
        return row;
      }
    }
    return null;
  }

  private static void convergenceTable(StringBuilder b, Results r) {
    // The producers read convergence from the run's own windows, whose length is the scenario's
    // window_ms; DESIGN.md's measure uses 20 ms, so another length is said, not relabelled.
    double w = r.windowRows().isEmpty() ? Double.NaN : r.windowRows().get(0).windowMillis();
    if (!(w > 0)) {
      w = Results.parseOrNaN(r.scenario().get("window_ms"));
    }
    String windows = w == 20 ? "20 ms windows, as Breakwater Fig. 7"
        : w > 0 ? plain(w) + " ms windows; DESIGN.md's convergence time uses 20 ms, as Breakwater "
            + "Fig. 7"
        : "the run's windows; DESIGN.md's convergence time uses 20 ms, as Breakwater Fig. 7";
    b.append("\n## Convergence after each demand step\n\n");
    b.append("Time from the step until goodput stays within 5 % of its converged value ("
        + windows + "); \"never\" if it did not settle.\n\n");
    b.append("| scheme | step (× cap) | at (ms) | converged goodput (rps) | convergence (ms) |\n");
    b.append("| --- | --- | ---: | ---: | ---: |\n");
    for (Results.Convergence c : r.convergence()) {
      b.append("| ").append(escape(c.scheme()))
          .append(" | ").append(fixed(c.fromDemand(), 2)).append(" → ")
          .append(fixed(c.toDemand(), 2))
          .append(" | ").append(plain(c.stepMillis()))
          .append(" | ").append(grouped(c.convergedGoodputRps()))
          .append(" | ").append(Double.isNaN(c.convergenceMillis()) ? DASH
              : c.convergenceMillis() < 0 ? "never" : plain(c.convergenceMillis()))
          .append(" |\n");
    }
  }

  private static void row(StringBuilder b, String name, String value) {
    b.append("| ").append(name).append(" | ").append(value).append(" |\n");
  }

  private static String capacity(Results r) {
    double c = r.capacityRps();
    if (!(c > 0)) {
      c = r.records().stream().mapToDouble(Results.Row::capacityRps).filter(x -> x > 0)
          .findFirst().orElse(Double.NaN);
    }
    if (Double.isNaN(c)) {
      return DASH;
    }
    return grouped(c) + " rps (" + (r.capacityMeasured()
        ? "measured: highest throughput with no control"
        : "given, not measured in this run") + ")";
  }

  private static String service(Map<String, String> s) {
    String kind = s.get("service");
    String mean = s.get("service_mean_us");
    if (kind == null && mean == null) {
      return DASH;
    }
    String k = kind == null ? "" : escape(kind);
    if (mean == null) {
      return k;
    }
    String m = "mean " + micros(mean);
    return k.isEmpty() ? m : k + ", " + m;
  }

  private static String micros(String value) {
    if (value == null || value.isBlank()) {
      return DASH;
    }
    double v = Results.parseOrNaN(value);
    return Double.isNaN(v) ? escape(value) : plain(v) + " µs";
  }

  private static String milliseconds(String value) {
    if (value == null || value.isBlank()) {
      return DASH;
    }
    double v = Results.parseOrNaN(value);
    return Double.isNaN(v) ? escape(value) : String.format(Locale.ROOT, "%,.0f ms", v);
  }

  private static String integer(String value) {
    if (value == null || value.isBlank()) {
      return DASH;
    }
    double v = Results.parseOrNaN(value);
    return Double.isNaN(v) ? escape(value) : grouped(v);
  }

  /** A latency in µs, one decimal; a dash for NaN and for ≤ 0, the producers' "no responses". */
  static String latency(double micros) {
    return micros > 0 ? fixed(micros, 1) : DASH;
  }

  /** {@code 851,248}; a dash for NaN. */
  static String grouped(double v) {
    return Double.isFinite(v) ? String.format(Locale.ROOT, "%,.0f", v) : DASH;
  }

  /** Fixed decimals; a dash for NaN. */
  static String fixed(double v, int decimals) {
    return Double.isFinite(v) ? String.format(Locale.ROOT, "%,." + decimals + "f", v) : DASH;
  }

  /** The shortest plain form: {@code 200}, {@code 0.5}, {@code 12.25}. */
  static String plain(double v) {
    if (!Double.isFinite(v)) {
      return DASH;
    }
    if (v == Math.rint(v) && Math.abs(v) < 1e15) {
      return Long.toString((long) v);
    }
    return new BigDecimal(Double.toString(v)).stripTrailingZeros().toPlainString();
  }

  /** Keeps text from breaking a table row or being read as markup. */
  static String escape(String s) {
    StringBuilder b = new StringBuilder(s.length());
    for (char c : s.toCharArray()) {
      switch (c) {
        case '|', '*', '_', '`', '[', ']', '<', '>', '\\' -> b.append('\\').append(c);
        case '\n', '\r' -> b.append(' ');
        default -> b.append(c);
      }
    }
    return b.toString();
  }
}
