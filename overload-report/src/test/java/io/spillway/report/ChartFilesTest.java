package io.spillway.report;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.awt.Color;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.imageio.ImageIO;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.title.TextTitle;
import org.jfree.chart.title.Title;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The public chart writers other modules call: {@link MatrixChart} and {@link LineChart}. */
class ChartFilesTest {

  @TempDir Path dir;

  @Test
  void aCellWithoutAValueDoesNotBlankTheMatrix() throws Exception {
    Map<String, double[]> values = new LinkedHashMap<>();
    values.put("a", new double[] {0.5, Double.NaN, 0.9});
    values.put("b", new double[] {0.7, 0.8});
    Path png = dir.resolve("m.png");

    MatrixChart.write(png, "t", "goodput", values, 0.93, "bar", false);

    SchemePalette palette = new SchemePalette(List.of("a", "b"));
    assertTrue(pixels(png, palette.color("a")) > 20, "scheme a's points are drawn");
    assertTrue(pixels(png, palette.color("b")) > 20, "scheme b's points are drawn");
    JFreeChart chart = MatrixChart.chart("t", "goodput", values, 0.93, "bar", false);
    assertTrue(subtitles(chart).contains("1 cell(s) without a value are not drawn"),
        subtitles(chart));
  }

  @Test
  void valuesClampedToTheLogFloorAreSaidSoOnTheChart() {
    Map<String, double[]> values = new LinkedHashMap<>();
    values.put("a", new double[] {0.5, 0, 2});

    JFreeChart chart = MatrixChart.chart("t", "p99 / SLO", values, 1, "SLO", true);

    assertTrue(subtitles(chart).contains("1 value(s) ≤ 0 drawn at the axis floor"),
        subtitles(chart));
  }

  @Test
  void infiniteMatrixValueNamesItsScheme() {
    Map<String, double[]> values = Map.of("dagor", new double[] {0.5, Double.POSITIVE_INFINITY});
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> MatrixChart.write(dir.resolve("m.png"), "t", "y", values, 1, "SLO", true));
    assertTrue(e.getMessage().contains("dagor"), e.getMessage());
  }

  @Test
  void negativeLineValuesAreDrawn() throws Exception {
    Map<String, double[]> ys = Map.of("delta", new double[] {-2, -1, -3});
    Path png = dir.resolve("l.png");

    LineChart.write(png, "t", "x", "y", new double[] {1, 2, 3}, ys, Map.of());

    assertTrue(pixels(png, new SchemePalette(List.of("delta")).color("delta")) > 20,
        "the series is inside the y range");
  }

  @Test
  void infiniteLineValueNamesItsSeries() {
    Map<String, double[]> ys = Map.of("goodput", new double[] {1, Double.POSITIVE_INFINITY});
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> LineChart.write(dir.resolve("l.png"), "t", "x", "y", new double[] {1, 2}, ys,
            Map.of()));
    assertTrue(e.getMessage().contains("goodput"), e.getMessage());
  }

  private static long pixels(Path png, Color color) throws IOException {
    BufferedImage image = ImageIO.read(png.toFile());
    long n = 0;
    for (int y = 0; y < image.getHeight(); y++) {
      for (int x = 0; x < image.getWidth(); x++) {
        if ((image.getRGB(x, y) & 0xFFFFFF) == (color.getRGB() & 0xFFFFFF)) {
          n++;
        }
      }
    }
    return n;
  }

  private static String subtitles(JFreeChart chart) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < chart.getSubtitleCount(); i++) {
      Title t = chart.getSubtitle(i);
      if (t instanceof TextTitle text) {
        b.append(text.getText()).append('\n');
      }
    }
    return b.toString();
  }
}
