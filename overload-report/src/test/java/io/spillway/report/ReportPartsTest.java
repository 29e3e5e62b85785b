package io.spillway.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.awt.Color;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.jfree.data.xy.XYSeries;
import org.junit.jupiter.api.Test;

/** The pure pieces: phases, number formats, log-axis choice, demand steps, colors. */
class ReportPartsTest {

  private static Results.Row window(String scheme, double t, double demand, double goodput,
      double p99, double rejectDelay) {
    return new Results.Row(scheme, 10, demand, 1000, demand * 1000, goodput, goodput, 5, p99, 25,
        0.1, rejectDelay, 0, 2, t, 20);
  }

  @Test
  void phasesSplitWhereDemandChangesPerScheme() {
    List<Results.Row> rows = List.of(
        window("a", 40, 1.5, 50, 5, 0),
        window("a", 0, 0.5, 100, 10, 0),
        window("a", 20, 0.5, 300, 30, 7),
        window("b", 0, 0.5, 200, 20, 0),
        window("a", 60, 1.5, 70, 0, 3));

    List<ReportMarkdown.Phase> phases = ReportMarkdown.phases(rows);

    assertEquals(3, phases.size());
    ReportMarkdown.Phase a1 = phases.get(0);
    assertEquals("a", a1.scheme());
    assertEquals(0.5, a1.demand());
    assertEquals(0, a1.startMillis());
    assertEquals(40, a1.endMillis());
    assertEquals(200, a1.mean(Results.Row::goodputRps));
    assertEquals(20, a1.medianP99(), "median of 10 and 30");
    assertEquals(30, a1.maxP99());
    assertEquals(1, a1.windowsOver(25));
    assertEquals(7, a1.meanRejectDelay(), "windows without rejects are left out");
    ReportMarkdown.Phase a2 = phases.get(1);
    assertEquals(1.5, a2.demand());
    assertEquals(40, a2.startMillis());
    assertEquals(80, a2.endMillis());
    assertEquals(5, a2.medianP99(), "a p99 of 0 (no responses) is not a latency");
    assertEquals("b", phases.get(2).scheme());
  }

  @Test
  void aPhasesP99IsThatOfTheFilesPhaseRowSpanningIt() {
    // The generator switched one window after the step at 40 ms: the windows' phase is 60-100,
    // the file's phase row 40-100.
    List<Results.Row> windows = List.of(
        window("a", 0, 0.5, 100, 10, 0), window("a", 20, 0.5, 100, 10, 0),
        window("a", 40, 0.5, 100, 10, 0), window("a", 60, 1.5, 50, 5, 0),
        window("a", 80, 1.5, 50, 900, 0), window("b", 0, 0.5, 100, 10, 0));
    List<Results.Row> phaseRows = List.of(
        phase("a", 0, 40, 0.5, 11), phase("a", 40, 60, 1.5, 777), phase("b", 0, 40, 0.5, 12));
    Results r = new Results(java.util.Map.of(), 1000, true, windows, List.of(), phaseRows);

    List<ReportMarkdown.Phase> phases = ReportMarkdown.phases(windows);

    assertEquals(11, ReportMarkdown.phaseP99(r, phases.get(0)));
    assertEquals(777, ReportMarkdown.phaseP99(r, phases.get(1)),
        "not the median (452.5) or the worst (900) of the windows' p99s");
    assertEquals(12, ReportMarkdown.phaseP99(r, phases.get(2)), "matched by scheme");
    Results older = new Results(java.util.Map.of(), 1000, true, windows, List.of(), List.of());
    assertTrue(Double.isNaN(ReportMarkdown.phaseP99(older, phases.get(0))),
        "a file without phase rows has no phase p99");
  }

  private static Results.Row phase(String scheme, double from, double length, double demand,
      double p99) {
    return new Results.Row(scheme, 10, demand, 1000, demand * 1000, 100, 100, 5, p99, 25, 0, 0,
        0, 2, from, length);
  }

  @Test
  void numbersFormatWithoutLocaleSurprises() {
    assertEquals("200", ReportMarkdown.plain(200.0));
    assertEquals("0.5", ReportMarkdown.plain(0.5));
    assertEquals("12.25", ReportMarkdown.plain(12.25));
    assertEquals("–", ReportMarkdown.plain(Double.NaN));
    assertEquals("1,234,568", ReportMarkdown.grouped(1_234_567.6));
    assertEquals("1,234.57", ReportMarkdown.fixed(1234.567, 2));
    assertEquals("–", ReportMarkdown.fixed(Double.NaN, 1));
  }

  @Test
  void escapeKeepsTableCellsIntact() {
    assertEquals("a\\|b c", ReportMarkdown.escape("a|b\nc"));
    assertEquals("x\\_y \\*z\\*", ReportMarkdown.escape("x_y *z*"));
  }

  @Test
  void logAxisOnlyWhenValuesSpanTwoDecades() {
    assertTrue(ReportCharts.spansDecades(List.of(50.0, 5000.0)));
    assertFalse(ReportCharts.spansDecades(List.of(50.0, 4999.0)));
    assertFalse(ReportCharts.spansDecades(List.of(0.0, 5.0, 400.0)), "zero is not a decade");
    assertTrue(ReportCharts.spansDecades(List.of(0.0, 2.0, 400.0)));
    assertFalse(ReportCharts.spansDecades(List.of()));
  }

  @Test
  void demandStepsEndWhereTheLastWindowEnds() {
    XYSeries steps = ReportCharts.demandSteps(List.of(
        window("a", 20, 0.9, 1, 1, 0), window("a", 0, 0.5, 1, 1, 0)));

    assertEquals(3, steps.getItemCount());
    assertEquals(0.0, steps.getX(0).doubleValue());
    assertEquals(0.5, steps.getY(0).doubleValue());
    assertEquals(20.0, steps.getX(1).doubleValue());
    assertEquals(0.9, steps.getY(1).doubleValue());
    assertEquals(40.0, steps.getX(2).doubleValue());
    assertEquals(0.9, steps.getY(2).doubleValue());
  }

  @Test
  void knownSchemesKeepTheirColorWhateverElseIsInTheReport() {
    SchemePalette few = new SchemePalette(List.of("breakwater"));
    SchemePalette many = new SchemePalette(List.of("zeta", "none", "alpha", "breakwater"));

    assertEquals(few.color("breakwater"), many.color("breakwater"));
    assertEquals(Color.BLACK.getRGB(), many.color("none").getRGB());
  }

  @Test
  void unknownSchemesGetDistinctColors() {
    List<String> names = List.of("none", "breakwater", "s1", "s2", "s3", "s4", "s5", "s6", "s7",
        "s8", "s9", "s10");
    SchemePalette palette = new SchemePalette(names);
    Set<Color> seen = new HashSet<>();
    for (String n : names) {
      assertTrue(seen.add(palette.color(n)), "color reused for " + n);
    }
    assertNotEquals(palette.shape("none"), null);
  }
  @Test
  void worstP99OfAPhaseWithoutResponsesIsNoValue() {
    ReportMarkdown.Phase empty = ReportMarkdown.phases(List.of(
        window("a", 0, 2, 0, 0, 0), window("a", 20, 2, 0, 0, 0))).get(0);

    assertTrue(Double.isNaN(empty.maxP99()), "a p99 of 0 is no responses, not 0 µs: "
        + empty.maxP99());
  }

  @Test
  void p99WithoutResponsesIsLeftOutOfLinearLatencyCharts() {
    // p99 50..150 with the SLO at 25 stays linear; the window without responses has p99 0.
    List<Results.Row> rows = List.of(window("a", 0, 1, 100, 50, 0), window("a", 20, 1, 0, 0, 0),
        window("a", 40, 1, 100, 150, 0));
    Results r = new Results(java.util.Map.of(), 1000, true, rows, List.of(), List.of());
    Figure p99 = new ReportCharts(r, new SchemePalette(r.schemes())).windowFigures().stream()
        .filter(f -> f.fileName().equals("p99-time.png")).findFirst().orElseThrow();

    org.jfree.chart.plot.XYPlot plot = p99.chart().getXYPlot();
    assertFalse(plot.getRangeAxis() instanceof org.jfree.chart.axis.LogAxis);
    assertEquals(null, plot.getDataset().getY(0, 1), "drawn at 0 µs as if it were a latency");
    assertTrue(p99.notes().contains("1 window(s) with p99 ≤ 0 (no responses) are not drawn"),
        p99.notes().toString());
  }

  @Test
  void everySchemeTheProjectShipsKeepsItsColorAcrossReports() {
    // The names SchemeRegistry (overload-sim) and the harnesses run; utune and mutune are one.
    List<String> shipped = List.of("none", "spillway", "breakwater", "breakwater-credit",
        "breakwater-credit-spec", "protego", "protego-ac", "protego-asqm", "codel", "window",
        "seda", "dagor", "netflix-gradient2", "netflix-vegas", "netflix-aimd", "rajomon",
        "sentinel", "utune");
    SchemePalette all = new SchemePalette(shipped);
    Set<Color> seen = new HashSet<>();
    for (String s : shipped) {
      assertEquals(all.color(s), new SchemePalette(List.of(s)).color(s), s + " alone");
      assertEquals(all.color(s), new SchemePalette(List.of("x", s, "y")).color(s),
          s + " with others");
      assertTrue(seen.add(all.color(s)), "color reused for " + s);
    }
    assertNotEquals(new SchemePalette(List.of("spillway")).color("spillway"),
        new SchemePalette(List.of("breakwater")).color("breakwater"));
  }
}
