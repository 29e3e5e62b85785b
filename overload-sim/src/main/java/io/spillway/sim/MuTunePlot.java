package io.spillway.sim;

import java.awt.BasicStroke;
import java.awt.Color;
import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jfree.chart.ChartFactory;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.LogAxis;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

/**
 * µTune's Fig. 8 view: the 99th-percentile latency of each configuration against offered load, both
 * axes logarithmic, µTune drawn thick in black. Used by the simulator and the socket experiment. And
 * the composition's view: goodput ÷ capacity against demand behind an admission scheme.
 */
public final class MuTunePlot {

  private MuTunePlot() { }

  /** A load point of one configuration. */
  public record Point(String config, double rps, double p99us) { }

  /** Plots the simulator's sweep rows. */
  static void p99VersusLoad(List<MuTuneExperiment.Row> rows, String title, Path png) throws IOException {
    plot(rows.stream().map(r -> new Point(r.config(), r.offeredRps(), r.p99us())).toList(), title, png);
  }

  /**
   * Goodput ÷ capacity against demand (× capacity) for the rows of one admission phase, linear axes,
   * one line per configuration, µTune thick in black.
   */
  static void goodputVersusDemand(List<MuTuneExperiment.Row> rows, double capacity, String title, Path png)
      throws IOException {
    Map<String, XYSeries> series = new LinkedHashMap<>();
    for (MuTuneExperiment.Row r : rows) {
      series.computeIfAbsent(r.config(), c -> new XYSeries(c.equals("mutune") ? "µTune" : c))
          .add(r.offeredRps() / capacity, r.goodRps() / capacity);
    }
    XYSeriesCollection data = new XYSeriesCollection();
    series.values().forEach(data::addSeries);
    JFreeChart chart = ChartFactory.createXYLineChart(title, "demand (× capacity)", "goodput ÷ capacity", data,
        PlotOrientation.VERTICAL, true, false, false);
    XYPlot plot = chart.getXYPlot();
    NumberAxis y = (NumberAxis) plot.getRangeAxis();
    y.setRange(0, 1.1);
    style(plot, series.keySet());
    ChartUtils.saveChartAsPNG(png.toFile(), chart, 900, 560);
  }

  private static void style(XYPlot plot, java.util.Set<String> configs) {
    plot.setBackgroundPaint(Color.WHITE);
    plot.setDomainGridlinePaint(Color.LIGHT_GRAY);
    plot.setRangeGridlinePaint(Color.LIGHT_GRAY);
    XYLineAndShapeRenderer r = new XYLineAndShapeRenderer(true, true);
    Color[] palette = {new Color(0x1f77b4), new Color(0xff7f0e), new Color(0x2ca02c), new Color(0xd62728),
        new Color(0x9467bd), new Color(0x8c564b)};
    int i = 0;
    for (String config : configs) {
      int s = i++;
      boolean mu = config.equals("mutune");
      r.setSeriesPaint(s, mu ? Color.BLACK : palette[s % palette.length]);
      r.setSeriesStroke(s, new BasicStroke(mu ? 3.5f : 1.8f));
    }
    plot.setRenderer(r);
  }

  /** Writes {@code png}: one line per configuration, in the order first seen. */
  public static void plot(List<Point> points, String title, Path png) throws IOException {
    Map<String, XYSeries> series = new LinkedHashMap<>();
    for (Point p : points) {
      if (p.p99us() > 0 && !Double.isNaN(p.p99us())) {
        series.computeIfAbsent(p.config(), c -> new XYSeries(c.equals("mutune") ? "µTune" : c)).add(p.rps(), p.p99us());
      }
    }
    XYSeriesCollection data = new XYSeriesCollection();
    series.values().forEach(data::addSeries);
    JFreeChart chart = ChartFactory.createXYLineChart(title, "offered load (requests/s)", "p99 latency (us)", data,
        PlotOrientation.VERTICAL, true, false, false);
    XYPlot plot = chart.getXYPlot();
    LogAxis x = new LogAxis("offered load (requests/s)");
    LogAxis y = new LogAxis("p99 latency (us)");
    plot.setDomainAxis(x);
    plot.setRangeAxis(y);
    style(plot, series.keySet());
    ChartUtils.saveChartAsPNG(png.toFile(), chart, 900, 560);
  }
}
