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
 * The figures of a soak ({@code ./spillway harness SCENARIO --soak MINUTES}), drawn from its
 * {@code soak.csv}: the server's heap after GC per minute (mean and highest of that minute's
 * collections), which is flat when nothing leaks, and goodput ÷ capacity per minute. The soak
 * writes them itself; {@code main} redraws them from a CSV.
 *
 * <p>Usage: {@code SoakChart SOAK_CSV CAPACITY_RPS}; the PNGs go beside the CSV.
 */
public final class SoakChart {

  private SoakChart() { }

  public static void main(String[] args) throws IOException {
    if (args.length != 2) {
      System.err.println("usage: SoakChart SOAK_CSV CAPACITY_RPS");
      System.exit(2);
    }
    Path csv = Path.of(args[0]);
    write(csv, csv.toAbsolutePath().getParent(), Double.parseDouble(args[1]));
  }

  /** Writes {@code soak-heap.png} and {@code soak-goodput.png} into {@code dir}. */
  public static void write(Path csv, Path dir, double capacityRps) throws IOException {
    List<String> lines = Files.readAllLines(csv);
    List<String> header = Arrays.asList(lines.getFirst().split(","));
    int minute = column(header, "minute");
    int goodput = column(header, "goodput_rps");
    int heapMean = column(header, "heap_after_gc_mean_mb");
    int heapMax = column(header, "heap_after_gc_max_mb");
    int n = lines.size() - 1;
    double[] xs = new double[n];
    double[] mean = new double[n];
    double[] max = new double[n];
    double[] share = new double[n];
    for (int i = 0; i < n; i++) {
      String[] f = lines.get(i + 1).split(",");
      xs[i] = Double.parseDouble(f[minute]);
      // a minute without a collection has no heap-after-GC reading (written as 0)
      mean[i] = zeroAsMissing(Double.parseDouble(f[heapMean]));
      max[i] = zeroAsMissing(Double.parseDouble(f[heapMax]));
      share[i] = Double.parseDouble(f[goodput]) / capacityRps;
    }
    Map<String, double[]> heap = new LinkedHashMap<>();
    heap.put("mean of the minute's collections", mean);
    heap.put("highest", max);
    LineChart.write(dir.resolve("soak-heap.png"), "Server heap after each GC, per minute of the soak",
        "minute", "heap after GC (MB)", xs, heap, Map.of());
    LineChart.write(dir.resolve("soak-goodput.png"), "Goodput per minute of the soak",
        "minute", "goodput ÷ capacity", xs, Map.of("goodput", share), Map.of(1.0, "capacity"));
  }

  private static int column(List<String> header, String name) {
    int i = header.indexOf(name);
    if (i < 0) {
      throw new IllegalArgumentException("soak CSV has no column " + name + ": " + header);
    }
    return i;
  }

  private static double zeroAsMissing(double v) {
    return v > 0 ? v : Double.NaN;
  }
}
