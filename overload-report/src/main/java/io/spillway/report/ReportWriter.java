package io.spillway.report;

import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import org.jfree.chart.ChartUtils;

/**
 * Turns a {@code results.json}, as written by the simulator and the real-socket harness, into PNG
 * charts and a one-page {@code report.md} that embeds them by relative link.
 *
 * <p>What is drawn depends on the records: rows without {@code t_ms} (steady runs, one per scheme
 * and demand level) give {@code goodput.png}, {@code goodput-normalized.png}, {@code p99.png} and
 * {@code drop-rate.png} against demand; rows with {@code t_ms} (a demand schedule, one per scheme
 * and time window) give {@code goodput-time.png}, {@code p99-time.png} and {@code
 * reject-delay-time.png} (unless no window records a reject delay) against time, with the demand
 * level on a right-hand axis. A {@code
 * surge-windows.csv} beside {@code results.json} (the graph harness writes one for steady runs
 * that surge) adds {@code surge-goodput-<level>x.png}, goodput against the time from each surge,
 * for each level. Charts are
 * {@value #WIDTH}×{@value #HEIGHT} pixels, one color per scheme on all of them, the SLO as a dashed
 * line on latency charts. A latency axis that spans two decades or more is logarithmic; values
 * ≤ 0 cannot be drawn on it and are left out, which the chart and report.md both say. A p99 ≤ 0,
 * the producers' "no responses", is left out of every chart and shown as a dash in every table.
 *
 * <p>Unknown JSON fields are ignored, so a writer may add fields. A missing file gives {@link
 * java.nio.file.NoSuchFileException}; bad JSON, a file without records, a required number that is
 * missing or not finite, or two rows for one scheme at one demand level (or window) give {@link
 * MalformedResultsException}, as does a {@code surge-windows.csv} that cannot be read; the
 * messages name the file and the field.
 *
 * <p><b>Thread safety.</b> {@link #write} keeps no shared state and may be called from several
 * threads at once for different output directories. Each file is written to a temporary name and
 * then renamed over the old one, so a reader never sees a half-written file; two calls writing
 * into the same directory at once leave each file from one of them, not necessarily all from the
 * same one. Charts are drawn off screen: loading this class sets {@code java.awt.headless=true}
 * unless the property is already set.
 */
public final class ReportWriter {

  /** The results file name {@link #main} looks for in each directory. */
  public static final String RESULTS_FILE = "results.json";

  /** The report's file name in the output directory. */
  public static final String REPORT_FILE = "report.md";

  /** Chart width in pixels. */
  public static final int WIDTH = ReportCharts.WIDTH;

  /** Chart height in pixels. */
  public static final int HEIGHT = ReportCharts.HEIGHT;

  static {
    if (System.getProperty("java.awt.headless") == null) {
      System.setProperty("java.awt.headless", "true");
    }
  }

  private ReportWriter() { }

  /**
   * Reads {@code resultsJson} and writes the charts and {@code report.md} into {@code outDir},
   * creating it if needed and replacing files of the same names.
   *
   * @param resultsJson a results.json file
   * @param outDir where to write; may be the directory holding {@code resultsJson}
   * @return the files written, charts first and {@code report.md} last
   * @throws java.nio.file.NoSuchFileException if {@code resultsJson} does not exist
   * @throws MalformedResultsException if it is not valid results JSON, or a {@code
   *     surge-windows.csv} beside it cannot be read
   * @throws IOException if a file cannot be read or written
   */
  public static List<Path> write(Path resultsJson, Path outDir) throws IOException {
    Results results = ResultsReader.read(resultsJson);
    Path surgeFile = resultsJson.toAbsolutePath().resolveSibling(SurgeWindows.FILE);
    SurgeWindows surges = Files.isRegularFile(surgeFile) ? SurgeWindows.read(surgeFile) : null;
    Files.createDirectories(outDir);
    SchemePalette palette = new SchemePalette(results.schemes());
    List<Figure> figures = new ReportCharts(results, palette, surges).figures();
    List<Path> written = new ArrayList<>();
    for (Figure f : figures) {
      Path file = outDir.resolve(f.fileName());
      replace(file, out -> ChartUtils.writeChartAsPNG(out, f.chart(), WIDTH, HEIGHT));
      written.add(file);
    }
    String markdown = ReportMarkdown.render(results, figures, fallbackName(resultsJson, outDir));
    Path report = outDir.resolve(REPORT_FILE);
    replace(report, out -> out.write(markdown.getBytes(StandardCharsets.UTF_8)));
    written.add(report);
    return List.copyOf(written);
  }

  /**
   * Command line: {@code spillway report DIR...}. Each argument is a directory holding {@value
   * #RESULTS_FILE} (or the results file itself); the charts and report go into that directory.
   * Every argument is tried even if an earlier one fails. Exits 0 when all succeeded, 1 when any
   * failed, 2 on a usage error.
   */
  public static void main(String[] args) {
    int status = run(Arrays.asList(args), System.out, System.err);
    if (status != 0) {
      System.exit(status);
    }
  }

  static int run(List<String> args, PrintStream out, PrintStream err) {
    if (args.isEmpty() || args.contains("-h") || args.contains("--help")) {
      PrintStream to = args.isEmpty() ? err : out;
      to.println("usage: spillway report DIR...");
      to.println("  Reads DIR/" + RESULTS_FILE + " and writes PNG charts and " + REPORT_FILE
          + " into DIR.");
      return args.isEmpty() ? 2 : 0;
    }
    int failed = 0;
    for (String arg : args) {
      Path given = Path.of(arg);
      Path results = Files.isRegularFile(given) ? given : given.resolve(RESULTS_FILE);
      Path dir = results.toAbsolutePath().getParent();
      try {
        List<Path> files = write(results, dir);
        out.printf("%s: wrote %s and %d chart(s)%n", dir, REPORT_FILE, files.size() - 1);
      } catch (IOException | RuntimeException e) {
        failed++;
        err.println("spillway report: " + message(e));
      }
    }
    return failed == 0 ? 0 : 1;
  }

  private static String message(Exception e) {
    if (e instanceof java.nio.file.NoSuchFileException n) {
      return n.getMessage();
    }
    return e.getMessage() == null ? e.toString() : e.getMessage();
  }

  private static String fallbackName(Path resultsJson, Path outDir) {
    Path dir = resultsJson.toAbsolutePath().getParent();
    Path name = dir == null ? outDir.toAbsolutePath().getFileName() : dir.getFileName();
    return name == null ? "results" : name.toString();
  }

  /** Something that writes a file's bytes. */
  @FunctionalInterface
  private interface Content {
    void writeTo(OutputStream out) throws IOException;
  }

  /** Writes {@code chart} as a PNG of the report's size at {@code png}, replacing it whole. */
  static void writePng(Path png, org.jfree.chart.JFreeChart chart) throws IOException {
    Files.createDirectories(png.toAbsolutePath().getParent());
    replace(png, out -> ChartUtils.writeChartAsPNG(out, chart, WIDTH, HEIGHT));
  }

  private static void replace(Path file, Content content) throws IOException {
    // Not Files.createTempFile: it makes the file owner-only (0600), and reports are shared.
    Path tmp = file.resolveSibling("." + file.getFileName() + "."
        + Long.toUnsignedString(ThreadLocalRandom.current().nextLong(), 36) + ".tmp");
    try {
      try (OutputStream out = Files.newOutputStream(tmp, StandardOpenOption.CREATE_NEW,
          StandardOpenOption.WRITE)) {
        content.writeTo(out);
      }
      try {
        Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE,
            StandardCopyOption.REPLACE_EXISTING);
      } catch (AtomicMoveNotSupportedException e) {
        Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING);
      }
    } finally {
      Files.deleteIfExists(tmp);
    }
  }
}
