package io.spillway.sim;

import io.spillway.sim.RobustnessMatrix.CellResult;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * A robustness matrix reduced per scheme, the bars checked, and the files a run leaves:
 * {@code cells.csv} (one row per cell and scheme), {@code summary.md}, {@code summary.csv} and two
 * plots, goodput ÷ capacity and p99 ÷ SLO of every cell by scheme.
 *
 * <p>A scheme <em>wins</em> a cell when no scheme's goodput ratio is more than one point of
 * capacity above its own (a tie within the run-to-run spread of a seed counts for both); it
 * <em>trails</em> when the best is more than two points above it.
 *
 * <p>Immutable and thread-safe.
 */
public final class RobustnessSummary {

  /** How far below the cell's best a scheme may be and still win it. */
  static final double WIN_MARGIN = 0.01;
  /** How far below the cell's best a scheme trails. */
  static final double TRAIL_MARGIN = 0.02;
  /** The goodput bar for steady overload (issue's acceptance: 0.93 × capacity). */
  static final double GOODPUT_BAR = 0.93;
  /** The convergence bar after a step. */
  static final double CONVERGENCE_BAR_MILLIS = 50;

  /**
   * One scheme over the matrix.
   *
   * @param worstGoodput lowest goodput ratio of any cell, {@link #worstCell} naming it
   * @param withinSlo share of cells whose p99 is within the SLO
   * @param wins share of cells it wins; {@link #trails} share it trails by more than two points
   * @param largestTrail the most the cell's best was above it, in fractions of capacity
   * @param worstConvergenceMillis longest convergence after a step, -1 if some step never settled,
   *     {@code NaN} if the matrix had no step pattern
   * @param medianRejectDelayMicros median over cells with rejects of the mean reject delay
   */
  public record SchemeSummary(String scheme, int cells, double worstGoodput, String worstCell,
      double medianGoodput, double withinSlo, double wins, double trails, double largestTrail,
      String largestTrailCell, double worstConvergenceMillis, double medianRejectDelayMicros,
      double medianP99Ratio) { }

  private final List<CellResult> results;
  private final List<String> schemes;
  private final Map<String, Double> best = new LinkedHashMap<>();

  public RobustnessSummary(List<CellResult> results) {
    this.results = List.copyOf(results);
    this.schemes = results.stream().map(CellResult::scheme).distinct().toList();
    for (CellResult r : results) {
      best.merge(r.cell(), r.goodputRatio(), Math::max);
    }
  }

  public List<CellResult> results() {
    return results;
  }

  /** The best goodput ratio any scheme reached in {@code cell}. */
  public double best(String cell) {
    return best.get(cell);
  }

  public boolean wins(CellResult r) {
    return r.goodputRatio() >= best(r.cell()) - WIN_MARGIN;
  }

  public boolean trails(CellResult r) {
    return r.goodputRatio() < best(r.cell()) - TRAIL_MARGIN;
  }

  /** The results of one scheme. */
  public List<CellResult> of(String scheme) {
    return results.stream().filter(r -> r.scheme().equals(scheme)).toList();
  }

  public List<SchemeSummary> perScheme() {
    List<SchemeSummary> out = new ArrayList<>();
    for (String s : schemes) {
      List<CellResult> rows = of(s);
      CellResult worst = rows.stream().min(Comparator.comparingDouble(CellResult::goodputRatio)).orElseThrow();
      CellResult trail = rows.stream().max(Comparator.comparingDouble(r -> best(r.cell()) - r.goodputRatio())).orElseThrow();
      double convergence = Double.NaN;
      for (CellResult r : rows) {
        double c = r.convergenceMillis();
        if (!Double.isNaN(c)) {
          convergence = Double.isNaN(convergence) ? c : (c < 0 || convergence < 0 ? -1 : Math.max(c, convergence));
        }
      }
      out.add(new SchemeSummary(s, rows.size(), worst.goodputRatio(), worst.cell(),
          median(rows.stream().map(CellResult::goodputRatio).toList()),
          share(rows, CellResult::withinSlo), share(rows, this::wins), share(rows, this::trails),
          Math.max(0, best(trail.cell()) - trail.goodputRatio()), trail.cell(), convergence,
          median(rows.stream().filter(r -> r.rejectDelayMicros() > 0).map(CellResult::rejectDelayMicros).toList()),
          median(rows.stream().map(CellResult::p99Ratio).toList())));
    }
    return out;
  }

  /** The scheme with the highest share of cells won (ties: the higher median goodput). */
  public String bestScheme() {
    return perScheme().stream()
        .max(Comparator.comparingDouble(SchemeSummary::wins).thenComparingDouble(SchemeSummary::medianGoodput))
        .orElseThrow().scheme();
  }

  /** The bars, one line each, with the measurements behind them. */
  public List<String> bars() {
    List<String> bars = new ArrayList<>();
    String d = RobustnessMatrix.DEFAULT_SCHEME;
    List<CellResult> def = of(d);
    if (!def.isEmpty()) {
      List<CellResult> steady = def.stream().filter(r -> r.pattern().steadyOverload()
          && r.pattern().levels()[0] <= 3).toList();
      long low = steady.stream().filter(r -> r.goodputRatio() < GOODPUT_BAR).count();
      long over = steady.stream().filter(r -> !r.withinSlo()).count();
      double min = steady.stream().mapToDouble(CellResult::goodputRatio).min().orElse(Double.NaN);
      bars.add(String.format(Locale.ROOT, "%s: default scheme >= %.2f x capacity with p99 within the SLO in every"
          + " steady-overload cell up to 3x: %s (%d cells; lowest %.3f; %d below %.2f; %d over the SLO)",
          met(low == 0 && over == 0 && !steady.isEmpty()), GOODPUT_BAR, d, steady.size(), min, low, GOODPUT_BAR, over));
      List<CellResult> stepped = def.stream().filter(r -> !Double.isNaN(r.convergenceMillis())).toList();
      long slow = stepped.stream().filter(r -> r.convergenceMillis() < 0
          || r.convergenceMillis() > CONVERGENCE_BAR_MILLIS).count();
      double worst = stepped.stream().mapToDouble(r -> r.convergenceMillis() < 0 ? Double.POSITIVE_INFINITY
          : r.convergenceMillis()).max().orElse(Double.NaN);
      bars.add(String.format(Locale.ROOT, "%s: default scheme settles within %.0f ms after every step: %s (%d step"
          + " cells; %d settle later or never; longest %s)", met(slow == 0 && !stepped.isEmpty()),
          CONVERGENCE_BAR_MILLIS, d, stepped.size(), slow, Double.isInfinite(worst) ? "never" : fmt(worst) + " ms"));
      SchemeSummary ds = perScheme().stream().filter(s -> s.scheme().equals(d)).findFirst().orElseThrow();
      bars.add(String.format(Locale.ROOT, "%s: default scheme wins >= 90%% of cells and trails none by > 2 points:"
          + " %s wins %.1f%%, trails %.1f%% (largest gap %.1f points, %s); best over the matrix: %s",
          met(ds.wins() >= 0.9 && ds.trails() == 0), d, 100 * ds.wins(), 100 * ds.trails(),
          100 * ds.largestTrail(), ds.largestTrailCell(), bestScheme()));
    }
    List<CellResult> bw = of("breakwater").stream().filter(r -> r.pattern().steadyOverload()
        && r.workload().clients() >= 100 && r.workload().clients() <= 10_000).toList();
    if (!bw.isEmpty()) {
      Map<String, List<CellResult>> byService = new LinkedHashMap<>();
      bw.forEach(r -> byService.computeIfAbsent(r.workload().service(), k -> new ArrayList<>()).add(r));
      StringBuilder detail = new StringBuilder();
      boolean all = true;
      for (var e : byService.entrySet()) {
        double min = e.getValue().stream().mapToDouble(CellResult::goodputRatio).min().orElse(Double.NaN);
        long over = e.getValue().stream().filter(r -> !r.withinSlo()).count();
        all &= min >= GOODPUT_BAR && over == 0;
        detail.append(String.format(Locale.ROOT, "; %s: %d cells, lowest %.3f, %d over the SLO",
            e.getKey(), e.getValue().size(), min, over));
      }
      bars.add(String.format(Locale.ROOT, "%s: breakwater at defaults >= %.2f within the SLO, 100 to 10,000 clients,"
          + " each distribution (steady overload)%s", met(all), GOODPUT_BAR, detail));
    }
    return bars;
  }

  /** Writes cells.csv, summary.csv, summary.md and the plots into {@code dir}. */
  public void write(Scenario scenario, Path dir, double wallSeconds, int threads) throws IOException {
    Files.createDirectories(dir);
    StringBuilder csv = new StringBuilder("origin,workload,pattern,scheme,service,service_mean_us,clients,rtt_us,seed,"
        + "capacity_rps,slo_us,window_ms,goodput_ratio,p99_over_slo,convergence_ms,reject_delay_us,expired_rate,drop_rate,"
        + "cell_best,wins,trails\n");
    for (CellResult r : results) {
      var w = r.workload();
      csv.append(String.format(Locale.ROOT, "%s,\"%s\",\"%s\",%s,%s,%s,%d,%s,%d,%.0f,%.1f,%.0f,%.4f,%.4f,%s,%.1f,%s,%s,%.4f,%b,%b%n",
          w.origin(), w.label(), r.pattern().name(), r.scheme(), w.service(), RobustnessMatrix.trim(w.meanUs()),
          w.clients(), RobustnessMatrix.trim(w.rttUs()), w.seed(), r.capacityRps(), r.sloMicros(), r.windowMillis(),
          r.goodputRatio(), r.p99Ratio(), Double.isNaN(r.convergenceMillis()) ? "" : fmt(r.convergenceMillis()),
          r.rejectDelayMicros(), share(r.expiredRate()), share(r.dropRate()), best(r.cell()), wins(r),
          trails(r)));
    }
    Files.writeString(dir.resolve("cells.csv"), csv);
    StringBuilder sum = new StringBuilder("scheme,cells,worst_goodput,worst_cell,median_goodput,within_slo,wins,trails,"
        + "largest_trail,worst_convergence_ms,median_reject_delay_us,median_p99_over_slo\n");
    for (SchemeSummary s : perScheme()) {
      sum.append(String.format(Locale.ROOT, "%s,%d,%.4f,\"%s\",%.4f,%.4f,%.4f,%.4f,%.4f,%s,%.1f,%.3f%n", s.scheme(),
          s.cells(), s.worstGoodput(), s.worstCell(), s.medianGoodput(), s.withinSlo(), s.wins(), s.trails(),
          s.largestTrail(), convergence(s.worstConvergenceMillis()), s.medianRejectDelayMicros(), s.medianP99Ratio()));
    }
    Files.writeString(dir.resolve("summary.csv"), sum);
    Files.writeString(dir.resolve("summary.md"), markdown(scenario, wallSeconds, threads));
    Map<String, double[]> goodput = new LinkedHashMap<>();
    Map<String, double[]> p99 = new LinkedHashMap<>();
    for (String s : schemes) {
      goodput.put(s, of(s).stream().mapToDouble(CellResult::goodputRatio).toArray());
      p99.put(s, of(s).stream().mapToDouble(CellResult::p99Ratio).toArray());
    }
    int cells = best.size();
    io.spillway.report.MatrixChart.write(dir.resolve("goodput.png"),
        "Goodput / capacity at defaults, " + cells + " cells", "goodput / what could be served", goodput,
        GOODPUT_BAR, "0.93", false);
    io.spillway.report.MatrixChart.write(dir.resolve("p99.png"),
        "p99 / SLO at defaults, " + cells + " cells", "p99 / SLO (log)", p99, 1.0, "SLO", true);
  }

  String markdown(Scenario scenario, double wallSeconds, int threads) {
    StringBuilder md = new StringBuilder();
    md.append("# ").append(scenario.name()).append(": every scheme at its defaults\n\n");
    if (!scenario.description().isBlank()) {
      md.append(scenario.description()).append("\n\n");
    }
    md.append(String.format(Locale.ROOT, "%d cells (%d workloads x %d patterns), %d schemes; %.0f s wall clock on %d threads.%n%n",
        best.size(), results.stream().map(r -> r.workload()).distinct().count(),
        results.stream().map(r -> r.pattern().name()).distinct().count(), schemes.size(), wallSeconds, threads));
    md.append("## Bars\n\n");
    bars().forEach(b -> md.append("- ").append(b).append('\n'));
    md.append("\n## Per scheme\n\n");
    md.append("| scheme | worst goodput | worst cell | median goodput | within SLO | wins | trails >2 pts | largest gap | worst convergence (ms) | median p99/SLO | median reject delay (us) |\n");
    md.append("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (SchemeSummary s : perScheme()) {
      md.append(String.format(Locale.ROOT, "| %s | %.3f | %s | %.3f | %.0f%% | %.0f%% | %.0f%% | %.1f | %s | %.2f | %.1f |%n",
          s.scheme(), s.worstGoodput(), s.worstCell(), s.medianGoodput(), 100 * s.withinSlo(), 100 * s.wins(),
          100 * s.trails(), 100 * s.largestTrail(), convergence(s.worstConvergenceMillis()), s.medianP99Ratio(),
          s.medianRejectDelayMicros()));
    }
    md.append("\n## Cells: goodput / capacity (p99 / SLO)\n\n");
    md.append("| workload | pattern | SLO (us) |");
    schemes.forEach(s -> md.append(' ').append(s).append(" |"));
    md.append("\n| --- | --- | ---: |");
    schemes.forEach(s -> md.append(" ---: |"));
    md.append('\n');
    Map<String, List<CellResult>> byCell = new LinkedHashMap<>();
    results.forEach(r -> byCell.computeIfAbsent(r.cell(), k -> new ArrayList<>()).add(r));
    for (List<CellResult> row : byCell.values()) {
      CellResult first = row.getFirst();
      md.append(String.format(Locale.ROOT, "| %s | %s | %.0f |", first.workload().label(), first.pattern().name(),
          first.sloMicros()));
      for (CellResult r : row) {
        md.append(String.format(Locale.ROOT, " %s%.3f (%.2f)%s |", wins(r) ? "**" : "", r.goodputRatio(), r.p99Ratio(),
            wins(r) ? "**" : ""));
      }
      md.append('\n');
    }
    md.append("\nBold: the cell's winners (within one point of its best goodput).\n");
    return md.toString();
  }

  private static String convergence(double millis) {
    return Double.isNaN(millis) ? "" : millis < 0 ? "never" : fmt(millis);
  }

  /** A share with five decimals; empty, as a convergence that has none, for a share over nothing. */
  private static String share(double v) {
    return Double.isNaN(v) ? "" : String.format(Locale.ROOT, "%.5f", v);
  }

  private static String fmt(double v) {
    return String.format(Locale.ROOT, "%.0f", v);
  }

  private static String met(boolean met) {
    return met ? "MET" : "NOT MET";
  }

  private static double share(List<CellResult> rows, java.util.function.Predicate<CellResult> p) {
    return rows.isEmpty() ? 0 : (double) rows.stream().filter(p).count() / rows.size();
  }

  static double median(List<Double> values) {
    if (values.isEmpty()) {
      return Double.NaN;
    }
    List<Double> sorted = values.stream().sorted().toList();
    int n = sorted.size();
    return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
  }
}
