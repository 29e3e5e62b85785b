package io.spillway.report;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Paint;
import java.awt.Shape;
import java.awt.Stroke;
import java.awt.geom.AffineTransform;
import java.awt.geom.Line2D;
import java.awt.geom.Rectangle2D;
import java.text.DecimalFormat;
import java.text.DecimalFormatSymbols;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.LegendItem;
import org.jfree.chart.LegendItemCollection;
import org.jfree.chart.axis.LogAxis;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.axis.NumberTickUnit;
import org.jfree.chart.axis.ValueAxis;
import org.jfree.chart.plot.DatasetRenderingOrder;
import org.jfree.chart.plot.SeriesRenderingOrder;
import org.jfree.chart.plot.ValueMarker;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.chart.renderer.xy.XYStepAreaRenderer;
import org.jfree.chart.title.LegendTitle;
import org.jfree.chart.title.TextTitle;
import org.jfree.chart.ui.RectangleAnchor;
import org.jfree.chart.ui.RectangleEdge;
import org.jfree.chart.ui.RectangleInsets;
import org.jfree.chart.ui.TextAnchor;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

/**
 * Builds the charts of one report from {@link Results}: for steady rows goodput, goodput ÷
 * capacity, p99 and drop rate against demand; for time-window rows goodput, p99 and reject delay
 * against time, with the demand level as a shaded step on a right-hand axis; and, when the run
 * kept {@link SurgeWindows}, goodput against the time from each surge (rajomon-nsdi25 Fig. 6).
 *
 * <p>Conventions shared by every chart: one color and marker per scheme ({@link SchemePalette});
 * the SLO as a dashed line on latency charts; a latency or delay axis turns logarithmic when its
 * values span {@link #LOG_SPAN}× or more, and then values ≤ 0 are left out. A p99 ≤ 0 is how the
 * producers write "no responses" (an empty histogram has no percentiles), so it is left out of
 * the p99 charts on a linear axis too: drawn at 0 it would read as the best latency of all. Each
 * chart notes how many points it left out. Missing values (NaN) leave a gap rather than a line
 * across it.
 *
 * <p>Not thread-safe: JFreeChart objects are mutable. Use one instance per report on one thread.
 */
final class ReportCharts {

  static final int WIDTH = 900;
  static final int HEIGHT = 550;

  /** A value axis turns logarithmic when max ÷ min (of the positive values) reaches this. */
  static final double LOG_SPAN = 100;

  private static final Font TITLE_FONT = new Font(Font.SANS_SERIF, Font.BOLD, 18);
  private static final Font SUBTITLE_FONT = new Font(Font.SANS_SERIF, Font.PLAIN, 13);
  private static final Font LABEL_FONT = new Font(Font.SANS_SERIF, Font.PLAIN, 14);
  private static final Font TICK_FONT = new Font(Font.SANS_SERIF, Font.PLAIN, 12);
  private static final Font LEGEND_FONT = new Font(Font.SANS_SERIF, Font.PLAIN, 13);
  private static final Font NOTE_FONT = new Font(Font.SANS_SERIF, Font.ITALIC, 12);

  private static final Color GRID = new Color(0xDDDDDD);
  private static final Color MINOR_GRID = new Color(0xF0F0F0);
  private static final Color LABEL_BACKGROUND = new Color(255, 255, 255, 210);
  private static final Color REFERENCE = new Color(0x555555);
  private static final Color DEMAND_FILL = new Color(0x80, 0x80, 0x80, 45);
  private static final Color DEMAND_EDGE = new Color(0x999999);

  private static final Stroke SLO_STROKE = new BasicStroke(2f, BasicStroke.CAP_BUTT,
      BasicStroke.JOIN_MITER, 10f, new float[] {9f, 6f}, 0f);
  private static final Stroke REFERENCE_STROKE = new BasicStroke(1.5f, BasicStroke.CAP_ROUND,
      BasicStroke.JOIN_ROUND, 10f, new float[] {1f, 4f}, 0f);

  private final Results results;
  private final SchemePalette palette;
  private final double slo;
  private final String context;
  private final SurgeWindows surges;

  ReportCharts(Results results, SchemePalette palette) {
    this(results, palette, null);
  }

  /** @param surges the windows around each surge, or null if the run kept none */
  ReportCharts(Results results, SchemePalette palette, SurgeWindows surges) {
    this.results = results;
    this.palette = palette;
    this.slo = results.sloMicros();
    this.context = context(results);
    this.surges = surges;
  }

  /** Every chart the results support, steady charts first. */
  List<Figure> figures() {
    List<Figure> out = new ArrayList<>();
    if (!results.steadyRows().isEmpty()) {
      out.addAll(steadyFigures());
    }
    if (!results.windowRows().isEmpty()) {
      out.addAll(windowFigures());
    }
    if (surges != null && !surges.rows().isEmpty()) {
      out.addAll(surgeFigures());
    }
    return out;
  }

  // ---- the windows around each surge of a steady run (surge-windows.csv) ----

  /** One chart per surge level: {@code surge-goodput-2x.png} for the surge to 2×. */
  List<Figure> surgeFigures() {
    List<Figure> out = new ArrayList<>();
    double capacity = results.steadyRows().isEmpty() ? Double.NaN : capacity(results.steadyRows());
    for (double level : surges.levels()) {
      String name = ReportMarkdown.plain(level);
      LineChart goodput = new LineChart("surge-goodput-" + name + "x.png",
          "Goodput after the surge to " + name + "×", "time from the surge (ms, window start)",
          "goodput (k requests/s within SLO)", true);
      goodput.markerScale = 0.6;
      for (SurgeWindows.Row r : surges.rows()) {
        if (r.demand() == level) {
          if (!goodput.series.containsKey(r.scheme())) {
            goodput.series.put(r.scheme(), new XYSeries(r.scheme(), true, true));
          }
          goodput.add(r.scheme(), r.tMillis(), r.goodputRps() / 1e3);
        }
      }
      if (capacity > 0) {
        goodput.reference(capacity / 1e3, String.format(Locale.ROOT, "capacity %,.0f rps", capacity));
      }
      out.add(goodput.build("Goodput in each window from before the surge to " + name
          + "× until the level ends (" + SurgeWindows.FILE + "), the windows the recovery time is "
          + "read from; the surge starts at 0."));
    }
    return out;
  }

  // ---- steady runs: one point per scheme and demand level ----

  List<Figure> steadyFigures() {
    Map<String, List<Results.Row>> byScheme = byScheme(results.steadyRows());
    List<Figure> out = new ArrayList<>();

    LineChart goodput = new LineChart("goodput.png", "Goodput vs demand",
        "demand (× capacity)", "goodput (k requests/s within SLO)", true);
    byScheme.forEach((s, rows) -> rows.forEach(
        r -> goodput.add(s, r.demand(), r.goodputRps() / 1e3)));
    double capacity = capacity(results.steadyRows());
    if (capacity > 0) {
      goodput.reference(capacity / 1e3, String.format(Locale.ROOT, "capacity %,.0f rps", capacity));
    }
    out.add(goodput.build("Goodput (responses within the SLO per second) at each demand level."));

    LineChart normalized = new LineChart("goodput-normalized.png", "Goodput ÷ capacity vs demand",
        "demand (× capacity)", "goodput ÷ capacity", true);
    byScheme.forEach((s, rows) -> rows.forEach(r -> {
      double c = rowCapacity(r);
      normalized.add(s, r.demand(), c > 0 ? r.goodputRps() / c : Double.NaN);
    }));
    XYSeries ideal = new XYSeries("ideal: min(demand, 1)", true, false);
    double lo = results.steadyRows().stream().mapToDouble(Results.Row::demand).min().orElse(0);
    double hi = results.steadyRows().stream().mapToDouble(Results.Row::demand).max().orElse(1);
    ideal.add(lo, Math.min(lo, 1));
    if (lo < 1 && hi > 1) {
      ideal.add(1, 1);
    }
    if (hi > lo) { // a single demand level has a single point
      ideal.add(hi, Math.min(hi, 1));
    }
    normalized.extra = ideal;
    out.add(normalized.build("Goodput as a fraction of capacity; dotted: min(demand, 1), what "
        + "capacity allows."));

    LineChart p99 = new LineChart("p99.png", "p99 latency vs demand", "demand (× capacity)",
        "p99 latency (µs, end to end)", true);
    byScheme.forEach((s, rows) -> rows.forEach(r -> p99.add(s, r.demand(), r.p99Micros())));
    p99.logAllowed = true;
    p99.nonPositiveIsMissing = true;
    p99.nonPositiveNote = "%d point(s) with p99 ≤ 0 (no responses) are not drawn";
    p99.slo();
    out.add(p99.build("99th-percentile end-to-end latency (client queueing included); dashed: "
        + "the SLO."));

    LineChart drops = new LineChart("drop-rate.png", "Drop rate vs demand", "demand (× capacity)",
        "drop rate (% of requests received)", true);
    byScheme.forEach((s, rows) -> rows.forEach(
        r -> drops.add(s, r.demand(), 100 * r.dropRate())));
    out.add(drops.build("Requests rejected at the server ÷ requests it received."));
    return out;
  }

  // ---- scheduled runs: one point per scheme and time window ----

  List<Figure> windowFigures() {
    List<Results.Row> windows = results.windowRows();
    Map<String, List<Results.Row>> byScheme = byScheme(windows);
    XYSeries demand = demandSteps(byScheme.values().iterator().next());
    String xLabel = "time (ms, window start)";
    List<Figure> out = new ArrayList<>();

    LineChart goodput = new LineChart("goodput-time.png", "Goodput over time", xLabel,
        "goodput (k requests/s within SLO)", false);
    byScheme.forEach((s, rows) -> rows.forEach(
        r -> goodput.add(s, r.windowStartMillis(), r.goodputRps() / 1e3)));
    double capacity = capacity(windows);
    if (capacity > 0) {
      goodput.reference(capacity / 1e3, String.format(Locale.ROOT, "capacity %,.0f rps", capacity));
    }
    goodput.demand = demand;
    out.add(goodput.build("Goodput per window; shaded: the demand level (right axis)."));

    LineChart p99 = new LineChart("p99-time.png", "p99 latency over time", xLabel,
        "p99 latency (µs, end to end)", false);
    byScheme.forEach((s, rows) -> rows.forEach(
        r -> p99.add(s, r.windowStartMillis(), r.p99Micros())));
    p99.logAllowed = true;
    p99.nonPositiveIsMissing = true;
    p99.nonPositiveNote = "%d window(s) with p99 ≤ 0 (no responses) are not drawn";
    p99.slo();
    p99.demand = demand;
    out.add(p99.build("99th-percentile latency of each window; dashed: the SLO; shaded: the "
        + "demand level (right axis)."));

    // A file that records no reject delay in any window (the call-graph simulator keeps none) gets
    // no chart: drawn empty, it would say every scheme "never rejected" beside their drop rates.
    if (windows.stream().allMatch(r -> Double.isNaN(r.rejectDelayMicros()))) {
      return out;
    }
    // Rejects come in bursts, often single windows: markers keep those visible.
    LineChart rejects = new LineChart("reject-delay-time.png", "Mean reject delay over time",
        xLabel, "mean reject delay (µs)", true);
    rejects.markerScale = 0.6;
    List<String> neverRejected = new ArrayList<>();
    int[] quiet = {0};
    byScheme.forEach((s, rows) -> {
      boolean any = false;
      for (Results.Row r : rows) {
        // 0 means "no rejects in this window", not an instant reject: leave a gap.
        boolean has = r.rejectDelayMicros() > 0;
        any |= has;
        if (!has) {
          quiet[0]++;
        }
        rejects.add(s, r.windowStartMillis(), has ? r.rejectDelayMicros() : Double.NaN);
      }
      if (!any) {
        neverRejected.add(s);
      }
    });
    rejects.logAllowed = true;
    rejects.missingNote = null;
    if (quiet[0] > 0) {
      rejects.notes.add(String.format(Locale.ROOT,
          "%d window(s) without rejects are not drawn", quiet[0]));
    }
    if (!neverRejected.isEmpty()) {
      rejects.notes.add("never rejected: " + String.join(", ",
          neverRejected.stream().map(n -> "\"" + n + "\"").toList()));
    }
    rejects.demand = demand;
    out.add(rejects.build("Mean time from a request leaving the client to its reject arriving, "
        + "per window; shaded: the demand level (right axis)."));
    return out;
  }

  /** The demand schedule as steps: each window's level from its start to the next window. */
  static XYSeries demandSteps(List<Results.Row> windows) {
    XYSeries steps = new XYSeries("demand (× capacity, right axis)", true, true);
    List<Results.Row> sorted = windows.stream()
        .sorted(Comparator.comparingDouble(Results.Row::windowStartMillis)).toList();
    for (Results.Row r : sorted) {
      steps.add(r.windowStartMillis(), r.demand());
    }
    Results.Row last = sorted.get(sorted.size() - 1);
    double width = Double.isFinite(last.windowMillis()) && last.windowMillis() > 0
        ? last.windowMillis() : 0;
    if (width > 0) {
      steps.add(last.windowStartMillis() + width, last.demand());
    }
    return steps;
  }

  /** Rows grouped by scheme, in order of first appearance. */
  static Map<String, List<Results.Row>> byScheme(List<Results.Row> rows) {
    Map<String, List<Results.Row>> out = new LinkedHashMap<>();
    for (Results.Row r : rows) {
      out.computeIfAbsent(r.scheme(), k -> new ArrayList<>()).add(r);
    }
    return out;
  }

  private double rowCapacity(Results.Row r) {
    return r.capacityRps() > 0 ? r.capacityRps() : results.capacityRps();
  }

  private double capacity(List<Results.Row> rows) {
    if (results.capacityRps() > 0) {
      return results.capacityRps();
    }
    return rows.stream().mapToDouble(Results.Row::capacityRps).filter(c -> c > 0).findFirst()
        .orElse(Double.NaN);
  }

  private static String context(Results r) {
    List<String> parts = new ArrayList<>();
    parts.add(r.name("results"));
    String clients = r.scenario().get("clients");
    if (clients != null && !clients.isBlank()) {
      double c = Results.parseOrNaN(clients);
      parts.add(Double.isNaN(c) ? clients + " clients"
          : String.format(Locale.ROOT, "%,.0f clients", c));
    }
    String window = r.scenario().get("window_ms");
    if (!r.windowRows().isEmpty()) {
      double w = r.windowRows().get(0).windowMillis();
      if (Double.isNaN(w)) {
        w = Results.parseOrNaN(window);
      }
      if (!Double.isNaN(w)) {
        parts.add(String.format(Locale.ROOT, "%s ms windows", ReportMarkdown.plain(w)));
      }
    }
    double slo = r.sloMicros();
    if (!Double.isNaN(slo)) {
      parts.add("SLO " + ReportMarkdown.plain(slo) + " µs");
    }
    return String.join("  ·  ", parts);
  }

  /** One line chart, filled in by the methods above, then {@link #build}. */
  private final class LineChart {
    final String file;
    final String title;
    final String xLabel;
    final String yLabel;
    final boolean markers;
    final Map<String, XYSeries> series = new LinkedHashMap<>();
    final List<String> notes = new ArrayList<>();
    boolean logAllowed;
    /** Values ≤ 0 mean "no value" (a p99 without responses), on a linear axis too. */
    boolean nonPositiveIsMissing;
    double markerScale = 1;
    boolean withSlo;
    double referenceValue = Double.NaN;
    String referenceLabel;
    XYSeries extra;
    XYSeries demand;
    String nonPositiveNote = "%d point(s) ≤ 0 are not drawn";
    String missingNote = "%d point(s) without a value are not drawn";

    LineChart(String file, String title, String xLabel, String yLabel, boolean markers) {
      this.file = file;
      this.title = title;
      this.xLabel = xLabel;
      this.yLabel = yLabel;
      this.markers = markers;
      for (String s : results.schemes()) {
        series.put(s, new XYSeries(s, true, true));
      }
    }

    void add(String scheme, double x, double y) {
      series.get(scheme).add(x, Double.isFinite(y) ? Double.valueOf(y) : null);
    }

    void slo() {
      withSlo = Double.isFinite(slo) && slo > 0;
    }

    void reference(double value, String label) {
      referenceValue = value;
      referenceLabel = label;
    }

    Figure build(String caption) {
      // Drop schemes with no rows of this kind (a file may mix steady and window rows).
      series.values().removeIf(s -> s.getItemCount() == 0);
      List<Double> values = new ArrayList<>();
      int missing = 0;
      for (XYSeries s : series.values()) {
        for (int i = 0; i < s.getItemCount(); i++) {
          Number y = s.getY(i);
          if (y == null) {
            missing++;
          } else {
            values.add(y.doubleValue());
          }
        }
      }
      List<Double> scale = new ArrayList<>(values);
      if (withSlo) {
        scale.add(slo);
      }
      if (Double.isFinite(referenceValue)) {
        scale.add(referenceValue);
      }
      if (extra != null) {
        for (int i = 0; i < extra.getItemCount(); i++) {
          scale.add(extra.getY(i).doubleValue());
        }
      }
      boolean log = logAllowed && spansDecades(scale);
      if (log || nonPositiveIsMissing) {
        int dropped = 0;
        for (XYSeries s : series.values()) {
          for (int i = 0; i < s.getItemCount(); i++) {
            Number y = s.getY(i);
            if (y != null && y.doubleValue() <= 0) {
              s.updateByIndex(i, null);
              dropped++;
            }
          }
        }
        if (dropped > 0) {
          notes.add((log ? "log axis: " : "")
              + String.format(Locale.ROOT, nonPositiveNote, dropped));
        }
      }
      ValueAxis yAxis = log ? logAxis(yLabel, scale) : linearAxis(yLabel, scale);
      if (missing > 0 && missingNote != null) {
        notes.add(String.format(Locale.ROOT, missingNote, missing));
      }

      XYSeriesCollection data = new XYSeriesCollection();
      XYLineAndShapeRenderer renderer = new XYLineAndShapeRenderer(true, markers);
      int index = 0;
      for (Map.Entry<String, XYSeries> e : series.entrySet()) {
        data.addSeries(e.getValue());
        // Schemes that behave alike draw on top of each other: each later series is drawn
        // thinner and with a smaller marker, on top, so the earlier ones still show around it.
        float width = markers
            ? Math.max(1.6f, 3.6f - 0.6f * index) : Math.max(1.1f, 2.3f - 0.4f * index);
        double size = markerScale * Math.max(0.55, 1.3 - 0.18 * index);
        renderer.setSeriesPaint(index, palette.color(e.getKey()));
        renderer.setSeriesShape(index, AffineTransform.getScaleInstance(size, size)
            .createTransformedShape(palette.shape(e.getKey())));
        renderer.setSeriesStroke(index, new BasicStroke(width, BasicStroke.CAP_ROUND,
            BasicStroke.JOIN_ROUND));
        index++;
      }
      if (extra != null) {
        data.addSeries(extra);
        renderer.setSeriesPaint(index, REFERENCE);
        renderer.setSeriesStroke(index, REFERENCE_STROKE);
        renderer.setSeriesShapesVisible(index, false);
      }

      NumberAxis xAxis = new NumberAxis(xLabel);
      xAxis.setAutoRangeIncludesZero(false);
      xAxis.setStandardTickUnits(NumberAxis.createStandardTickUnits(Locale.ROOT));
      style(xAxis);

      XYPlot plot = new XYPlot(data, xAxis, yAxis, renderer);
      plot.setSeriesRenderingOrder(SeriesRenderingOrder.FORWARD);
      if (log) {
        plot.setRangeMinorGridlinesVisible(true);
        plot.setRangeMinorGridlinePaint(MINOR_GRID);
        plot.setRangeMinorGridlineStroke(new BasicStroke(0.5f));
      }
      plot.setBackgroundPaint(Color.WHITE);
      plot.setDomainGridlinePaint(GRID);
      plot.setRangeGridlinePaint(GRID);
      plot.setOutlinePaint(Color.GRAY);
      plot.setAxisOffset(RectangleInsets.ZERO_INSETS);

      if (demand != null) {
        double top = 0;
        for (int i = 0; i < demand.getItemCount(); i++) {
          top = Math.max(top, demand.getY(i).doubleValue());
        }
        NumberAxis demandAxis = new NumberAxis("demand (× capacity)");
        demandAxis.setRange(0, top > 0 ? top * 1.25 : 1);
        style(demandAxis);
        demandAxis.setLabelPaint(REFERENCE);
        XYStepAreaRenderer area = new XYStepAreaRenderer(XYStepAreaRenderer.AREA);
        area.setSeriesPaint(0, DEMAND_FILL);
        area.setOutline(true);
        area.setSeriesOutlinePaint(0, DEMAND_EDGE);
        area.setSeriesOutlineStroke(0, new BasicStroke(1.2f));
        area.setRangeBase(0);
        plot.setRangeAxis(1, demandAxis);
        plot.setDataset(1, new XYSeriesCollection(demand));
        plot.mapDatasetToRangeAxis(1, 1);
        plot.setRenderer(1, area);
        plot.setDatasetRenderingOrder(DatasetRenderingOrder.REVERSE);
      }

      LegendItemCollection legend = new LegendItemCollection();
      legend.addAll(renderer.getLegendItems());
      if (demand != null) {
        legend.add(new LegendItem(demand.getKey().toString(), null, null, null,
            new Rectangle2D.Double(-6, -5, 12, 10), DEMAND_FILL, new BasicStroke(1.2f),
            DEMAND_EDGE));
      }
      if (withSlo) {
        String label = "SLO " + ReportMarkdown.plain(slo) + " µs";
        plot.addRangeMarker(labelledMarker(slo, SLO_STROKE, label));
        legend.add(lineItem(label, SLO_STROKE, REFERENCE));
      }
      if (Double.isFinite(referenceValue)) {
        plot.addRangeMarker(labelledMarker(referenceValue, REFERENCE_STROKE, referenceLabel));
      }
      plot.setFixedLegendItems(legend);

      JFreeChart chart = new JFreeChart(title, TITLE_FONT, plot, true);
      chart.setBackgroundPaint(Color.WHITE);
      chart.setPadding(new RectangleInsets(4, 8, 4, 12));
      LegendTitle legendTitle = chart.getLegend();
      legendTitle.setItemFont(LEGEND_FONT);
      legendTitle.setFrame(org.jfree.chart.block.BlockBorder.NONE);
      legendTitle.setPosition(RectangleEdge.BOTTOM);
      TextTitle sub = new TextTitle(context, SUBTITLE_FONT);
      sub.setPaint(REFERENCE);
      chart.addSubtitle(0, sub);
      if (!notes.isEmpty()) {
        TextTitle note = new TextTitle("Note: " + String.join("; ", notes) + ".", NOTE_FONT);
        note.setPaint(REFERENCE);
        note.setPosition(RectangleEdge.BOTTOM);
        note.setPadding(new RectangleInsets(4, 0, 0, 0));
        chart.addSubtitle(note);
      }
      return new Figure(file, caption, chart, notes);
    }
  }

  /** Whether the positive values span {@link #LOG_SPAN}× or more. */
  static boolean spansDecades(List<Double> values) {
    double min = Double.POSITIVE_INFINITY;
    double max = 0;
    for (double v : values) {
      if (v > 0 && Double.isFinite(v)) {
        min = Math.min(min, v);
        max = Math.max(max, v);
      }
    }
    return max > 0 && max / min >= LOG_SPAN;
  }

  private static ValueAxis logAxis(String label, List<Double> values) {
    double min = values.stream().filter(v -> v > 0).mapToDouble(Double::doubleValue).min()
        .orElse(1);
    double max = values.stream().filter(v -> v > 0).mapToDouble(Double::doubleValue).max()
        .orElse(10);
    LogAxis axis = new LogAxis(label);
    axis.setBase(10);
    // One labelled tick per decade; 9 minor steps put the minor ticks at 2×, 3×, ... 9×.
    axis.setTickUnit(new NumberTickUnit(1, format("#,##0.###"), 9), false, false);
    axis.setAutoTickUnitSelection(false);
    axis.setNumberFormatOverride(format("#,##0.###"));
    axis.setMinorTickMarksVisible(true);
    // Down to a whole decade, so the lowest values have a labelled tick beneath them.
    axis.setRange(Math.pow(10, Math.floor(Math.log10(min / 1.2))), max * 1.6);
    style(axis);
    return axis;
  }

  private static ValueAxis linearAxis(String label, List<Double> values) {
    double min = values.stream().mapToDouble(Double::doubleValue).min().orElse(0);
    double max = values.stream().mapToDouble(Double::doubleValue).max().orElse(1);
    double lo = Math.min(0, min);
    double hi = max > lo ? max + 0.08 * (max - lo) : lo + 1;
    NumberAxis axis = new NumberAxis(label);
    axis.setRange(lo, hi);
    axis.setStandardTickUnits(NumberAxis.createStandardTickUnits(Locale.ROOT));
    style(axis);
    return axis;
  }

  private static void style(ValueAxis axis) {
    axis.setLabelFont(LABEL_FONT);
    axis.setTickLabelFont(TICK_FONT);
    axis.setLabelPaint(Color.DARK_GRAY);
    axis.setTickLabelPaint(Color.DARK_GRAY);
  }

  private static LegendItem lineItem(String label, Stroke stroke, Paint paint) {
    Shape line = new Line2D.Double(-12, 0, 12, 0);
    return new LegendItem(label, null, null, null, line, stroke, paint);
  }

  private static DecimalFormat format(String pattern) {
    return new DecimalFormat(pattern, DecimalFormatSymbols.getInstance(Locale.ROOT));
  }

  /** A horizontal reference line with its label above it, left-aligned (the SLO, a capacity). */
  private static ValueMarker labelledMarker(double value, java.awt.Stroke stroke, String label) {
    ValueMarker marker = new ValueMarker(value, REFERENCE, stroke);
    marker.setLabel(label);
    marker.setLabelFont(TICK_FONT);
    marker.setLabelPaint(REFERENCE);
    marker.setLabelAnchor(RectangleAnchor.TOP_LEFT);
    marker.setLabelTextAnchor(TextAnchor.BOTTOM_LEFT);
    marker.setLabelOffset(new RectangleInsets(2, 6, 2, 6));
    marker.setLabelBackgroundColor(LABEL_BACKGROUND);
    return marker;
  }
}
