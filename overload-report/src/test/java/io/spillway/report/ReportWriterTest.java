package io.spillway.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ReportWriterTest {

  @TempDir Path dir;

  @Test
  void steadyRunsGiveFourChartsAndAReport() throws Exception {
    Path results = Fixtures.results(Fixtures.STEADY, dir);

    List<Path> files = ReportWriter.write(results, dir);

    assertEquals(List.of("goodput.png", "goodput-normalized.png", "p99.png", "drop-rate.png",
        "report.md"), names(files));
    files.stream().filter(f -> f.toString().endsWith(".png")).forEach(ReportWriterTest::assertPng);
    String md = Files.readString(dir.resolve("report.md"));
    assertTrue(md.startsWith("# breakwater-synthetic\n\nBreakwater vs no control, exponential "
        + "10 us service, 1,000 clients, 0.5x to 2x\n"), md);
    assertContains(md, "| clients | 1,000 |");
    assertContains(md, "| cores | 10 |");
    assertContains(md, "| service | exp, mean 10 µs |");
    assertContains(md, "| RTT | 10 µs |");
    assertContains(md, "| SLO | 200 µs |");
    assertContains(md, "| capacity | 851,248 rps (measured: highest throughput with no control) |");
    assertContains(md, "| none | 0.50 | 425,067 | 425,069 | 425,069 | 0.499 | 18.8 | 57.7 | "
        + "0.00 | – | 0.00 | 2.00 |");
    assertContains(md, "| none | 2.00 | 1,702,968 | 772,825 | 0 | 0.000 | 683,672.0 | "
        + "1,084,230.0 | 0.00 | – | 0.00 | 1.45 |");
    assertContains(md, "| breakwater | 1.00 | 851,557 | 827,977 | 826,091 | 0.970 | 59.3 | "
        + "167.0 | 0.04 | 13.3 | 2.72 | 1.97 |");
    assertEquals(24, md.lines().filter(l -> l.matches("\\| [a-z-]+ \\| \\d\\.\\d\\d \\|.*"))
        .count(), "one table row per record");
    for (String png : List.of("goodput.png", "goodput-normalized.png", "p99.png",
        "drop-rate.png")) {
      assertContains(md, "](" + png + ")");
    }
    assertFalse(md.contains("Convergence"), "no convergence table without convergence rows");
  }

  @Test
  void timeSeriesGiveThreeChartsPhasesAndConvergence() throws Exception {
    Path results = Fixtures.results(Fixtures.SPIKE, dir);

    List<Path> files = ReportWriter.write(results, dir);

    assertEquals(List.of("goodput-time.png", "p99-time.png", "reject-delay-time.png",
        "report.md"), names(files));
    files.stream().filter(f -> f.toString().endsWith(".png")).forEach(ReportWriterTest::assertPng);
    String md = Files.readString(dir.resolve("report.md"));
    assertContains(md, "| demand schedule | 0.5@0, 0.9@1000, 1.4@2000, 0.9@3000, 0.5@4000 ");
    assertContains(md, "140 windows in all");
    assertContains(md, "| none | 900–1000 | 0.50 | 5 |");
    assertContains(md, "| none | 1000–2000 | 0.90 | 50 |");
    assertContains(md, "| breakwater | 2000–2300 | 1.40 | 15 |");
    assertContains(md, "| none | 0.90 → 0.50 | 4000 | 328,598 | never |");
    assertContains(md, "| breakwater | 0.90 → 1.40 | 2000 | 817,882 | 20 |");
    assertContains(md, "](reject-delay-time.png)");
    assertContains(md, "> Note: ");
    assertContains(md, "never rejected: \"none\"");
  }

  /**
   * Windows that record no reject delay at all (the call-graph simulator keeps none for an
   * interface: null, or the field left out) get no reject-delay chart. Drawn empty, its note would
   * say every scheme was "never rejected" beside a drop column full of rejects.
   */
  @Test
  void windowsWithoutRejectDelaysGetNoRejectDelayChart() throws Exception {
    StringBuilder rows = new StringBuilder();
    for (int t = 0; t < 100; t += 20) {
      rows.append(t == 0 ? "" : ", ").append(String.format(java.util.Locale.ROOT,
          "{\"scheme\": \"dagor\", \"demand\": 2, \"capacity_rps\": 1000, "
              + "\"goodput_rps\": 900, \"p99_us\": 50, \"drop_rate\": 0.4%s, \"t_ms\": %d, "
              + "\"window_ms\": 20}", t < 40 ? ", \"reject_delay_us\": null" : "", t));
    }
    Path results = Fixtures.results(dir, "{\"scenario\": {\"name\": \"graph-q\", "
        + "\"slo_us\": \"100\"}, \"capacity_rps\": 1000, \"records\": [" + rows + "]}");

    List<Path> files = ReportWriter.write(results, dir);

    assertEquals(List.of("goodput-time.png", "p99-time.png", "report.md"), names(files));
    String md = Files.readString(dir.resolve("report.md"));
    assertFalse(md.contains("never rejected"), md);
    assertContains(md, "| 40.00 | – |");
  }

  @Test
  void nonPositiveValuesOnALogAxisAreLeftOutAndSaidSo() throws Exception {
    String json = "{\"scenario\": {\"name\": \"zeros\", \"slo_us\": \"100\"}, "
        + "\"capacity_rps\": 1000, \"capacity_measured\": true, \"records\": ["
        + Fixtures.record("none", 0.5, 500, 20, "") + ", "
        + Fixtures.record("none", 1.0, 0, 0, "") + ", "
        + Fixtures.record("none", 2.0, 0, 900_000, "") + "]}";
    Path results = Fixtures.results(dir, json);

    ReportWriter.write(results, dir);

    String md = Files.readString(dir.resolve("report.md"));
    assertContains(md, "log axis: 1 point(s) with p99 ≤ 0 (no responses) are not drawn");
    assertPng(dir.resolve("p99.png"));
  }

  @Test
  void writesIntoAnotherDirectoryAndCreatesIt() throws Exception {
    Path results = Fixtures.results(Fixtures.STEADY, dir.resolve("in"));
    Path out = dir.resolve("out/nested");

    List<Path> files = ReportWriter.write(results, out);

    assertEquals(5, files.size());
    for (Path f : files) {
      assertEquals(out, f.getParent());
      assertTrue(Files.size(f) > 0, f.toString());
    }
  }

  @Test
  void rewritingReplacesFilesAndLeavesNoTemporaries() throws Exception {
    Path results = Fixtures.results(Fixtures.STEADY, dir);
    Files.writeString(dir.resolve("report.md"), "stale");

    ReportWriter.write(results, dir);
    ReportWriter.write(results, dir);

    assertTrue(Files.readString(dir.resolve("report.md")).startsWith("# breakwater-synthetic"));
    try (Stream<Path> listing = Files.list(dir)) {
      assertEquals(List.of(), listing.map(p -> p.getFileName().toString())
          .filter(n -> n.endsWith(".tmp")).toList());
    }
  }

  @Test
  void concurrentCallsForDifferentDirectoriesDoNotInterfere() throws Exception {
    Path steady = Fixtures.results(Fixtures.STEADY, dir.resolve("steady"));
    Path spike = Fixtures.results(Fixtures.SPIKE, dir.resolve("spike"));
    try (ExecutorService pool = Executors.newFixedThreadPool(2)) {
      Future<List<Path>> a = pool.submit(() -> ReportWriter.write(steady, steady.getParent()));
      Future<List<Path>> b = pool.submit(() -> ReportWriter.write(spike, spike.getParent()));
      assertEquals(5, a.get().size());
      assertEquals(4, b.get().size());
    }
    assertContains(Files.readString(dir.resolve("steady/report.md")), "# breakwater-synthetic");
    assertContains(Files.readString(dir.resolve("spike/report.md")), "# breakwater-spike");
  }

  @Test
  void writeReportsAMissingFile() {
    Path missing = dir.resolve("results.json");
    NoSuchFileException e = assertThrows(NoSuchFileException.class,
        () -> ReportWriter.write(missing, dir));
    assertTrue(e.getMessage().contains(missing.toString()), e.getMessage());
  }

  @Test
  void commandLineWritesEachDirectoryAndReportsFailures() throws Exception {
    Path good = dir.resolve("good");
    Fixtures.results(Fixtures.STEADY, good);
    Path bad = dir.resolve("bad");
    Fixtures.results(bad, "{not json");
    Path empty = dir.resolve("empty");
    Files.createDirectories(empty);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();

    int status = ReportWriter.run(List.of(good.toString(), bad.toString(), empty.toString()),
        print(out), print(err));

    assertEquals(1, status);
    assertTrue(Files.size(good.resolve("report.md")) > 0);
    String errors = err.toString(StandardCharsets.UTF_8);
    assertContains(errors, "malformed results file " + bad.resolve("results.json"));
    assertContains(errors, empty.resolve("results.json") + ": results file not found");
    assertContains(out.toString(StandardCharsets.UTF_8), "wrote report.md and 4 chart(s)");
  }

  @Test
  void commandLineAcceptsTheResultsFileItself() throws Exception {
    Path results = Fixtures.results(Fixtures.SPIKE, dir);
    ByteArrayOutputStream out = new ByteArrayOutputStream();

    int status = ReportWriter.run(List.of(results.toString()), print(out), print(out));

    assertEquals(0, status);
    assertTrue(Files.exists(dir.resolve("p99-time.png")));
  }

  @Test
  void commandLineWithoutArgumentsPrintsUsage() {
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    assertEquals(2, ReportWriter.run(List.of(), print(new ByteArrayOutputStream()), print(err)));
    assertContains(err.toString(StandardCharsets.UTF_8), "usage: spillway report DIR...");
  }

  @Test
  void latenciesOfRowsWithoutResponsesAreDashesNotZero() throws Exception {
    // Producers write p50 = p99 = 0 when nothing completed (HdrHistogram has no values then).
    String json = "{\"scenario\": {\"name\": \"shed\", \"slo_us\": \"100\"}, "
        + "\"capacity_rps\": 1000, \"records\": ["
        + Fixtures.record("a", 0.5, 500, 40, "") + ", "
        + Fixtures.record("a", 2.0, 0, 0, "").replace("\"p50_us\": 10", "\"p50_us\": 0")
            .replace("\"throughput_rps\": 0.0", "\"throughput_rps\": 0") + "]}";
    ReportWriter.write(Fixtures.results(dir, json), dir);

    String md = Files.readString(dir.resolve("report.md"));
    assertContains(md, "| a | 2.00 | 2,000 | 0 | 0 | 0.000 | – | – | 10.00 |");
  }

  @Test
  void phaseTableTakesRatiosFromThePhaseRowsAndShowsNoResponsesAsDashes() throws Exception {
    // Two windows at 0.5x: the first received 10 requests and dropped none, the second received
    // 1,000 and dropped half. The phase drops 500 of 1,010 (49.5 %), not the windows' mean 25 %.
    String json = "{\"scenario\": {\"name\": \"phases\", \"slo_us\": \"100\"}, "
        + "\"capacity_rps\": 1000, \"records\": ["
        + window("a", 0, 20, 0.5, 500, 40, 0.0, 0.0) + ", "
        + window("a", 20, 20, 0.5, 500, 60, 0.5, 0.02) + ", "
        + window("a", 40, 20, 2.0, 0, 0, 0, 0) + ", " + window("a", 60, 20, 2.0, 0, 0, 0, 0)
        + "], \"phases\": [" + window("a", 0, 40, 0.5, 500, 55, 0.495, 0.0198) + ", "
        + window("a", 40, 40, 2.0, 0, 0, 0, 0) + "]}";
    ReportWriter.write(Fixtures.results(dir, json), dir);

    String md = Files.readString(dir.resolve("report.md"));
    assertContains(md,
        "| a | 0–40 | 0.50 | 2 | 500 | 0.500 | 55.0 | 50.0 | 60.0 | 0 | 49.50 | 5.0 | 1.98 |");
    assertContains(md,
        "| a | 40–80 | 2.00 | 2 | 0 | 0.000 | – | – | – | 0 | 0.00 | – | 0.00 |");
  }

  private static String window(String scheme, double t, double length, double demand,
      double goodput, double p99, double dropRate, double expiredRate) {
    return Fixtures.record(scheme, demand, goodput, p99,
            ", \"t_ms\": " + t + ", \"window_ms\": " + length)
        .replace("\"drop_rate\": 0.1", "\"drop_rate\": " + dropRate)
        .replace("\"expired_rate\": 0", "\"expired_rate\": " + expiredRate)
        .replace("\"reject_delay_us\": 5", "\"reject_delay_us\": " + (dropRate > 0 ? 5 : 0))
        .replace("\"p50_us\": 10", "\"p50_us\": " + (p99 > 0 ? 10 : 0));
  }

  @Test
  void convergenceTableStatesTheWindowsItWasReadFrom() throws Exception {
    String json = "{\"scenario\": {\"name\": \"w\", \"window_ms\": \"100\"}, "
        + "\"capacity_rps\": 1000, \"records\": ["
        + window("a", 0, 100, 0.5, 500, 40, 0, 0) + ", "
        + window("a", 100, 100, 2.0, 900, 60, 0, 0) + "], \"convergence\": [{\"scheme\": \"a\", "
        + "\"from_demand\": 0.5, \"to_demand\": 2, "
        + "\"step_ms\": 100, \"converged_goodput_rps\": 900, \"convergence_ms\": 0}]}";
    ReportWriter.write(Fixtures.results(dir, json), dir);

    String md = Files.readString(dir.resolve("report.md"));
    assertFalse(md.contains("20 ms windows, as Breakwater"), md);
    assertContains(md, "(100 ms windows;");
  }

  private static void assertPng(Path file) {
    try {
      assertTrue(Files.size(file) > 10_000, file + " is suspiciously small");
      BufferedImage image = ImageIO.read(file.toFile());
      assertNotNull(image, file + " is not a readable image");
      assertEquals(ReportWriter.WIDTH, image.getWidth());
      assertEquals(ReportWriter.HEIGHT, image.getHeight());
    } catch (IOException e) {
      throw new AssertionError(file.toString(), e);
    }
  }

  private static void assertContains(String text, String expected) {
    assertTrue(text.contains(expected), () -> "expected <" + expected + "> in:\n" + text);
  }

  private static List<String> names(List<Path> files) {
    return files.stream().map(p -> p.getFileName().toString()).toList();
  }

  private static PrintStream print(ByteArrayOutputStream sink) {
    return new PrintStream(sink, true, StandardCharsets.UTF_8);
  }
}
