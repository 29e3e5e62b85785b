package io.spillway.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.awt.image.BufferedImage;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A steady run's {@code surge-windows.csv}, read and drawn beside its results. */
class SurgeWindowsTest {

  private static final String HEADER =
      "scheme,demand,t_ms,offered_rps,refused_rps,sent_rps,dropped_rps,completed_rps,goodput_rps,p50_us,p99_us,epoch_ms\n";

  @TempDir Path dir;

  private Path steadyResults() {
    return Fixtures.results(dir, "{\"scenario\": {\"name\": \"hotel-surge-split\"}, \"capacity_rps\": 1000, "
        + "\"records\": [" + Fixtures.record("dagor", 2, 600, 50, "") + ", "
        + Fixtures.record("rajomon", 2, 900, 40, "") + ", " + Fixtures.record("rajomon", 3, 850, 45, "") + "]}");
  }

  private static String rows(String scheme, double demand, double... goodput) {
    StringBuilder b = new StringBuilder();
    for (int k = 0; k < goodput.length; k++) {
      b.append(String.format(java.util.Locale.ROOT, "%s,%.2f,%d,2000,0,2000,0,%.0f,%.0f,1000.0,2000.0,%d%n",
          scheme, demand, (k - 2) * 100, goodput[k], goodput[k], 1_000_000 + k * 100));
    }
    return b.toString();
  }

  @Test
  void readsTheColumnsAChartNeedsWhateverTheirOrder() throws Exception {
    Path file = Files.writeString(dir.resolve(SurgeWindows.FILE),
        "goodput_rps,t_ms,extra,scheme,demand\n800,-100,x,rajomon,2.00\n\n900,0,y,dagor,3.00\n");
    SurgeWindows w = SurgeWindows.read(file);
    assertEquals(List.of(new SurgeWindows.Row("rajomon", 2, -100, 800), new SurgeWindows.Row("dagor", 3, 0, 900)),
        w.rows());
    assertEquals(List.of(2.0, 3.0), w.levels());
  }

  @Test
  void aReportBesideSurgeWindowsDrawsOneChartPerLevel() throws Exception {
    Path results = steadyResults();
    Files.writeString(dir.resolve(SurgeWindows.FILE), HEADER
        + rows("dagor", 2, 700, 720, 100, 300, 600, 610)
        + rows("rajomon", 2, 700, 720, 880, 900, 910, 890)
        + rows("rajomon", 3, 700, 720, 850, 860, 840, 850));

    List<Path> files = ReportWriter.write(results, dir);

    List<String> names = files.stream().map(f -> f.getFileName().toString()).toList();
    assertEquals(List.of("goodput.png", "goodput-normalized.png", "p99.png", "drop-rate.png",
        "surge-goodput-2x.png", "surge-goodput-3x.png", "report.md"), names);
    for (String png : List.of("surge-goodput-2x.png", "surge-goodput-3x.png")) {
      BufferedImage image = ImageIO.read(dir.resolve(png).toFile());
      assertEquals(ReportWriter.WIDTH, image.getWidth());
    }
    String md = Files.readString(dir.resolve("report.md"));
    assertTrue(md.contains("### Goodput after the surge to 2×"), md);
    assertTrue(md.contains("](surge-goodput-3x.png)"), md);
  }

  @Test
  void withoutSurgeWindowsThereIsNoSurgeChart() throws Exception {
    List<Path> files = ReportWriter.write(steadyResults(), dir);
    assertTrue(files.stream().noneMatch(f -> f.getFileName().toString().startsWith("surge-")), files.toString());
  }

  @Test
  void aMalformedFileIsReportedByNameAndLine() throws Exception {
    Path results = steadyResults();
    Path file = dir.resolve(SurgeWindows.FILE);

    Files.writeString(file, "scheme,demand,t_ms\nrajomon,2,0\n");
    MalformedResultsException e = assertThrows(MalformedResultsException.class, () -> ReportWriter.write(results, dir));
    assertEquals(file, e.file());
    assertTrue(e.getMessage().contains("no column goodput_rps"), e.getMessage());

    Files.writeString(file, HEADER + rows("rajomon", 2, 700) + "rajomon,2.00,-100,1\n");
    e = assertThrows(MalformedResultsException.class, () -> ReportWriter.write(results, dir));
    assertTrue(e.getMessage().contains("line 3 has 4 fields, the header 12"), e.getMessage());

    Files.writeString(file, HEADER + rows("rajomon", 2, 700).replace(",700,700,", ",700,seven,"));
    e = assertThrows(MalformedResultsException.class, () -> ReportWriter.write(results, dir));
    assertTrue(e.getMessage().contains("line 2: "), e.getMessage());

    Files.writeString(file, "");
    e = assertThrows(MalformedResultsException.class, () -> ReportWriter.write(results, dir));
    assertTrue(e.getMessage().contains("empty"), e.getMessage());
  }
}
