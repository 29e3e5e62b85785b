package io.spillway.harness;

import io.spillway.report.LineChart;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Draws columns of a CSV as lines against one of its columns ({@link LineChart}), for the shell
 * scripts that summarise repeated harness runs (integration-tests/bench/demo-ten.sh).
 *
 * <p>Usage: {@code CsvChart CSV PNG TITLE X_COLUMN Y_LABEL Y_COLUMN[,Y_COLUMN...] [VALUE=LABEL ...]},
 * each {@code VALUE=LABEL} a dashed reference line. An empty cell is drawn as no point.
 */
public final class CsvChart {

  private CsvChart() { }

  public static void main(String[] args) throws IOException {
    if (args.length < 6) {
      System.err.println("usage: CsvChart CSV PNG TITLE X_COLUMN Y_LABEL Y_COLUMN[,Y_COLUMN...] [VALUE=LABEL ...]");
      System.exit(2);
    }
    List<String> lines = Files.readAllLines(Path.of(args[0])).stream().filter(l -> !l.isBlank()).toList();
    List<String> header = Arrays.asList(lines.getFirst().split(",", -1));
    int x = column(header, args[3]);
    double[] xs = lines.stream().skip(1).mapToDouble(l -> Double.parseDouble(l.split(",", -1)[x])).toArray();
    Map<String, double[]> ys = new LinkedHashMap<>();
    for (String name : args[5].split(",")) {
      int c = column(header, name);
      ys.put(name, lines.stream().skip(1).mapToDouble(l -> {
        String cell = l.split(",", -1)[c].strip();
        return cell.isEmpty() ? Double.NaN : Double.parseDouble(cell);
      }).toArray());
    }
    Map<Double, String> references = new LinkedHashMap<>();
    for (String ref : Arrays.asList(args).subList(6, args.length)) {
      int eq = ref.indexOf('=');
      if (eq <= 0) {
        throw new IllegalArgumentException("a reference line is VALUE=LABEL, got '" + ref + "'");
      }
      references.put(Double.parseDouble(ref.substring(0, eq)), ref.substring(eq + 1));
    }
    LineChart.write(Path.of(args[1]), args[2], args[3], args[4], xs, ys, references);
  }

  private static int column(List<String> header, String name) {
    int i = header.indexOf(name);
    if (i < 0) {
      throw new IllegalArgumentException("no column " + name + " in " + header);
    }
    return i;
  }
}
