package io.spillway.report;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * The rows of a {@code surge-windows.csv}, as the graph harness writes it beside a steady run's
 * {@code results.json}: per scheme and surge level, goodput in fixed windows from shortly before
 * the step to the end of the level, the windows its recovery time is read from (rajomon-nsdi25
 * §5.4, Fig. 6). Only the columns a chart needs are kept: {@code scheme}, {@code demand}, {@code
 * t_ms} (from the step) and {@code goodput_rps}; others, and their order, are the writer's.
 *
 * <p>Immutable; safe to share between threads.
 */
record SurgeWindows(Path file, List<Row> rows) {

  /** The file's name beside {@code results.json}. */
  static final String FILE = "surge-windows.csv";

  /** One window. */
  record Row(String scheme, double demand, double tMillis, double goodputRps) { }

  SurgeWindows {
    rows = List.copyOf(rows);
  }

  /**
   * Reads {@code file}.
   *
   * @throws MalformedResultsException if a needed column is missing, a row has fewer fields than
   *     the header, or a number does not parse; the message names the file and line
   */
  static SurgeWindows read(Path file) throws IOException {
    List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
    if (lines.isEmpty()) {
      throw new MalformedResultsException(file, "empty, no header", null);
    }
    List<String> header = Arrays.asList(lines.get(0).strip().split(",", -1));
    int scheme = column(file, header, "scheme");
    int demand = column(file, header, "demand");
    int t = column(file, header, "t_ms");
    int goodput = column(file, header, "goodput_rps");
    List<Row> rows = new ArrayList<>();
    for (int n = 1; n < lines.size(); n++) {
      String line = lines.get(n).strip();
      if (line.isEmpty()) {
        continue;
      }
      String[] f = line.split(",", -1);
      if (f.length < header.size()) {
        throw new MalformedResultsException(file, String.format(Locale.ROOT,
            "line %d has %d fields, the header %d", n + 1, f.length, header.size()), null);
      }
      try {
        rows.add(new Row(f[scheme], Double.parseDouble(f[demand]), Double.parseDouble(f[t]),
            Double.parseDouble(f[goodput])));
      } catch (NumberFormatException e) {
        throw new MalformedResultsException(file, "line " + (n + 1) + ": " + e.getMessage(), e);
      }
    }
    return new SurgeWindows(file, rows);
  }

  private static int column(Path file, List<String> header, String name) throws MalformedResultsException {
    int i = header.indexOf(name);
    if (i < 0) {
      throw new MalformedResultsException(file, "no column " + name + " in the header", null);
    }
    return i;
  }

  /** The surge levels, in order of first appearance. */
  List<Double> levels() {
    return rows.stream().map(Row::demand).distinct().toList();
  }
}
