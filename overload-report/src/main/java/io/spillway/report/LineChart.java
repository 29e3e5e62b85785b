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
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

/**
 * A line chart of a few series over one x axis (minutes of a soak, loads of a sweep), with
 * optional dashed reference lines (bars to meet, or the edges of a band). The y axis starts at 0
 * (or below, to hold negative values) so that a flat line looks flat.
 *
 * <p>Stateless and thread-safe; each call draws its own chart.
 */
public final class LineChart {

  static {
    if (System.getProperty("java.awt.headless") == null) {
      System.setProperty("java.awt.headless", "true");
    }
  }

  private LineChart() { }

  /**
   * Draws each series of {@code ys} (name → one y per x, NaN where there is none) against {@code
   * xs} into a PNG at {@code png}.
   *
   * @param references y → label of a dashed horizontal line; may be empty
   * @throws IllegalArgumentException if a series' length differs from {@code xs}'s, or it holds
   *     an infinite value (the message names the series)
   */
  public static void write(Path png, String title, String xLabel, String yLabel, double[] xs,
      Map<String, double[]> ys, Map<Double, String> references) throws IOException {
    List<String> names = new ArrayList<>(ys.keySet());
    SchemePalette palette = new SchemePalette(names);
    XYSeriesCollection data = new XYSeriesCollection();
    double max = references.keySet().stream().mapToDouble(Double::doubleValue).max().orElse(0);
    double min = references.keySet().stream().mapToDouble(Double::doubleValue).min().orElse(0);
    for (String name : names) {
      double[] y = ys.get(name);
      if (y.length != xs.length) {
        throw new IllegalArgumentException("series " + name + " has " + y.length + " values for " + xs.length + " x");
      }
      XYSeries series = new XYSeries(name, false, true);
      for (int k = 0; k < xs.length; k++) {
        if (Double.isInfinite(y[k])) {
          throw new IllegalArgumentException("series " + name + " has an infinite value at x = "
              + xs[k]);
        }
        if (!Double.isNaN(y[k])) {
          series.add(xs[k], y[k]);
          max = Math.max(max, y[k]);
          min = Math.min(min, y[k]);
        }
      }
      data.addSeries(series);
    }
    NumberAxis x = new NumberAxis(xLabel);
    x.setAutoRangeIncludesZero(false);
    NumberAxis y = new NumberAxis(yLabel);
    // From 0, or from below the lowest value: a fixed 0 would cut negative values off unseen.
    double lo = Math.min(0, min * 1.15);
    y.setRange(lo, max > 0 ? max * 1.15 : lo < 0 ? 0 : 1);
    XYLineAndShapeRenderer renderer = new XYLineAndShapeRenderer(true, true);
    for (int i = 0; i < names.size(); i++) {
      renderer.setSeriesPaint(i, palette.color(names.get(i)));
      renderer.setSeriesShape(i, palette.shape(names.get(i)));
      renderer.setSeriesStroke(i, new BasicStroke(2f));
    }
    XYPlot plot = new XYPlot(data, x, y, renderer);
    plot.setBackgroundPaint(Color.WHITE);
    plot.setRangeGridlinePaint(new Color(0xDDDDDD));
    plot.setDomainGridlinePaint(new Color(0xDDDDDD));
    references.forEach((value, label) -> plot.addRangeMarker(MatrixChart.referenceLine(value, label)));
    JFreeChart chart = new JFreeChart(title, new Font(Font.SANS_SERIF, Font.BOLD, 16), plot, names.size() > 1);
    chart.setBackgroundPaint(Color.WHITE);
    ReportWriter.writePng(png, chart);
  }
}
