package io.spillway.report;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.LogAxis;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.axis.SymbolAxis;
import org.jfree.chart.axis.ValueAxis;
import org.jfree.chart.plot.ValueMarker;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.chart.title.TextTitle;
import org.jfree.chart.ui.RectangleAnchor;
import org.jfree.chart.ui.RectangleEdge;
import org.jfree.chart.ui.TextAnchor;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

/**
 * A strip chart of one measure over many cells: a column per scheme, a point per cell, spread
 * sideways by a fixed pattern so that equal values stay visible, and one dashed reference line (a
 * bar to meet). The robustness matrix draws its goodput and p99 ÷ SLO with it. Values at or below
 * zero on a log axis are drawn at the axis floor, and NaN values (cells without one) are left out;
 * a note under the chart says how many of each, since a point on the floor would otherwise read
 * as the lowest value of all.
 *
 * <p>Stateless and thread-safe; each call draws its own chart.
 */
public final class MatrixChart {

  static {
    if (System.getProperty("java.awt.headless") == null) {
      System.setProperty("java.awt.headless", "true");
    }
  }

  private static final double LOG_FLOOR = 0.01;

  private MatrixChart() { }

  /** A dashed horizontal line at {@code y}, labelled at its left end (a bar to meet). */
  static ValueMarker referenceLine(double y, String label) {
    ValueMarker marker = new ValueMarker(y, new Color(0x555555), new BasicStroke(1.5f,
        BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, new float[] {6f, 4f}, 0f));
    marker.setLabel(label);
    marker.setLabelAnchor(RectangleAnchor.TOP_LEFT);
    marker.setLabelTextAnchor(TextAnchor.BOTTOM_LEFT);
    return marker;
  }

  /**
   * Draws {@code values} (scheme → one value per cell, in report order) into a PNG at {@code png}.
   *
   * @param reference the y of the reference line, labelled {@code referenceLabel}
   * @param log whether the y axis is logarithmic
   * @throws IllegalArgumentException if a value is infinite (the message names its scheme)
   */
  public static void write(Path png, String title, String yLabel, Map<String, double[]> values,
      double reference, String referenceLabel, boolean log) throws IOException {
    ReportWriter.writePng(png, chart(title, yLabel, values, reference, referenceLabel, log));
  }

  /** The chart {@link #write} draws. */
  static JFreeChart chart(String title, String yLabel, Map<String, double[]> values,
      double reference, String referenceLabel, boolean log) {
    List<String> schemes = new ArrayList<>(values.keySet());
    SchemePalette palette = new SchemePalette(schemes);
    XYSeriesCollection data = new XYSeriesCollection();
    double max = reference;
    double min = reference;
    int missing = 0;
    int floored = 0;
    for (int i = 0; i < schemes.size(); i++) {
      XYSeries series = new XYSeries(schemes.get(i), false, true);
      double[] v = values.get(schemes.get(i));
      for (int k = 0; k < v.length; k++) {
        // A NaN would make the axis range NaN and blank every scheme's points, not just this one.
        if (Double.isNaN(v[k])) {
          missing++;
          continue;
        }
        if (Double.isInfinite(v[k])) {
          throw new IllegalArgumentException("scheme " + schemes.get(i) + " has an infinite value "
              + "in cell " + k + " of " + v.length);
        }
        if (log && v[k] <= 0) {
          floored++;
        }
        double y = log ? Math.max(LOG_FLOOR, v[k]) : v[k];
        // A fixed sideways spread in [-0.3, 0.3]: the golden-ratio sequence fills it evenly.
        double dx = ((k * 0.6180339887) % 1.0 - 0.5) * 0.6;
        series.add(i + dx, y);
        max = Math.max(max, y);
        min = Math.min(min, y);
      }
      data.addSeries(series);
    }
    SymbolAxis x = new SymbolAxis("scheme", schemes.toArray(String[]::new));
    x.setTickLabelFont(new Font(Font.SANS_SERIF, Font.PLAIN, 11));
    x.setVerticalTickLabels(true);
    x.setRange(-0.6, schemes.size() - 0.4);
    x.setGridBandsVisible(false);
    ValueAxis y;
    if (log) {
      LogAxis axis = new LogAxis(yLabel);
      axis.setRange(Math.max(LOG_FLOOR, min / 1.5), Math.max(max * 1.5, reference * 2));
      y = axis;
    } else {
      NumberAxis axis = new NumberAxis(yLabel);
      axis.setRange(Math.min(0, min), Math.max(1.05, max * 1.05));
      y = axis;
    }
    XYLineAndShapeRenderer renderer = new XYLineAndShapeRenderer(false, true);
    for (int i = 0; i < schemes.size(); i++) {
      renderer.setSeriesPaint(i, palette.color(schemes.get(i)));
      renderer.setSeriesShape(i, palette.shape(schemes.get(i)));
    }
    XYPlot plot = new XYPlot(data, x, y, renderer);
    plot.setBackgroundPaint(Color.WHITE);
    plot.setRangeGridlinePaint(new Color(0xDDDDDD));
    plot.setDomainGridlinesVisible(false);
    plot.addRangeMarker(referenceLine(reference, referenceLabel));
    JFreeChart chart = new JFreeChart(title, new Font(Font.SANS_SERIF, Font.BOLD, 18), plot, false);
    chart.setBackgroundPaint(Color.WHITE);
    List<String> notes = new ArrayList<>();
    if (floored > 0) {
      notes.add(floored + " value(s) ≤ 0 drawn at the axis floor (" + LOG_FLOOR + "), not measured "
          + "there");
    }
    if (missing > 0) {
      notes.add(missing + " cell(s) without a value are not drawn");
    }
    if (!notes.isEmpty()) {
      TextTitle note = new TextTitle("Note: " + String.join("; ", notes) + ".",
          new Font(Font.SANS_SERIF, Font.ITALIC, 12));
      note.setPaint(new Color(0x555555));
      note.setPosition(RectangleEdge.BOTTOM);
      chart.addSubtitle(note);
    }
    return chart;
  }
}
