package io.spillway.threading;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * µTune's trained model of tail latency (mutune-osdi18 §4, "Training phase"): for each threading
 * model, the 99th-percentile latency measured at a series of offered loads, and a piecewise-linear
 * interpolation between them that predicts the tail at any load. The adaptation picks the model
 * this predicts lowest for the load it estimates.
 *
 * <p>Between two trained loads the prediction is the straight line through them; below the lowest
 * it is the lowest load's tail; above the highest it continues the last segment's slope (never
 * falling), so a model trained up to its saturation keeps predicting a growing tail past it
 * instead of a flat one it cannot deliver.
 *
 * <p>Written and read as CSV, {@code model,rps,p99_us} (what {@code ./spillway mutune train}
 * writes; see {@code docs/results/mutune.md}).
 *
 * <p>Immutable and thread-safe once built.
 */
public final class ThreadingProfile {

  private final Map<ThreadingModel, double[][]> curves; // model -> {rps[], p99Nanos[]}, rps ascending

  private ThreadingProfile(Map<ThreadingModel, double[][]> curves) {
    this.curves = curves;
  }

  /** A builder; add each measured point. */
  public static Builder builder() {
    return new Builder();
  }

  /** The models this profile was trained on, in the order they were first added. */
  public Set<ThreadingModel> models() {
    return Collections.unmodifiableSet(curves.keySet());
  }

  /**
   * The predicted 99th-percentile latency of {@code model} at {@code rps}, in nanoseconds.
   *
   * @throws IllegalArgumentException if the profile has no points for {@code model}
   */
  public double predictNanos(ThreadingModel model, double rps) {
    double[][] c = curves.get(model);
    if (c == null) {
      throw new IllegalArgumentException("no training points for " + model + "; trained: " + curves.keySet());
    }
    double[] x = c[0];
    double[] y = c[1];
    int n = x.length;
    if (n == 1 || rps <= x[0]) {
      return y[0];
    }
    for (int i = 1; i < n; i++) {
      if (rps <= x[i]) {
        return y[i - 1] + (y[i] - y[i - 1]) * (rps - x[i - 1]) / (x[i] - x[i - 1]);
      }
    }
    double slope = Math.max(0, (y[n - 1] - y[n - 2]) / (x[n - 1] - x[n - 2]));
    return y[n - 1] + slope * (rps - x[n - 1]);
  }

  /** The model predicted lowest at {@code rps} (ties: the first trained). */
  public ThreadingModel best(double rps) {
    ThreadingModel best = null;
    double bestNanos = Double.POSITIVE_INFINITY;
    for (ThreadingModel m : curves.keySet()) {
      double p = predictNanos(m, rps);
      if (p < bestNanos) {
        best = m;
        bestNanos = p;
      }
    }
    return best;
  }

  /** Writes the profile as CSV ({@code model,rps,p99_us}). */
  public void write(Path file) throws IOException {
    StringBuilder out = new StringBuilder("model,rps,p99_us\n");
    for (Map.Entry<ThreadingModel, double[][]> e : curves.entrySet()) {
      double[][] c = e.getValue();
      for (int i = 0; i < c[0].length; i++) {
        out.append(String.format(Locale.ROOT, "%s,%.1f,%.1f%n", e.getKey().name(), c[0][i], c[1][i] / 1e3));
      }
    }
    Files.writeString(file, out, StandardCharsets.UTF_8);
  }

  /**
   * Reads a profile {@link #write} wrote.
   *
   * @throws IllegalArgumentException naming the file and line of a malformed row
   * @throws UncheckedIOException if the file cannot be read
   */
  public static ThreadingProfile read(Path file) {
    List<String> lines;
    try {
      lines = Files.readAllLines(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read threading profile " + file, e);
    }
    Builder b = builder();
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i).strip();
      if (line.isEmpty() || line.startsWith("#") || (i == 0 && line.startsWith("model"))) {
        continue;
      }
      String[] f = line.split(",");
      try {
        if (f.length != 3) {
          throw new IllegalArgumentException("expected model,rps,p99_us");
        }
        b.add(ThreadingModel.parse(f[0]), Double.parseDouble(f[1].strip()),
            Double.parseDouble(f[2].strip()) * 1e3);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(file + ":" + (i + 1) + ": " + e.getMessage() + ": '" + line + "'", e);
      }
    }
    return b.build();
  }

  /** Collects measured points. Not thread-safe. */
  public static final class Builder {
    private final Map<ThreadingModel, List<double[]>> points = new LinkedHashMap<>();

    private Builder() { }

    /**
     * Adds one measurement: {@code model} at {@code rps} offered had this 99th percentile.
     *
     * @throws IllegalArgumentException if a value is negative or not finite
     */
    public Builder add(ThreadingModel model, double rps, double p99Nanos) {
      Objects.requireNonNull(model, "model");
      if (!(rps >= 0) || !(p99Nanos >= 0) || Double.isInfinite(rps) || Double.isInfinite(p99Nanos)) {
        throw new IllegalArgumentException("rps and p99 must be finite and >= 0: " + rps + ", " + p99Nanos);
      }
      points.computeIfAbsent(model, m -> new ArrayList<>()).add(new double[] {rps, p99Nanos});
      return this;
    }

    /**
     * The profile; points at the same load are averaged (µTune averages five measurements, §5).
     *
     * @throws IllegalArgumentException if no point was added
     */
    public ThreadingProfile build() {
      if (points.isEmpty()) {
        throw new IllegalArgumentException("a threading profile needs at least one measured point");
      }
      Map<ThreadingModel, double[][]> curves = new LinkedHashMap<>();
      for (Map.Entry<ThreadingModel, List<double[]>> e : points.entrySet()) {
        Map<Double, double[]> byLoad = new java.util.TreeMap<>();
        for (double[] p : e.getValue()) {
          double[] sum = byLoad.computeIfAbsent(p[0], k -> new double[2]);
          sum[0] += p[1];
          sum[1]++;
        }
        double[] x = new double[byLoad.size()];
        double[] y = new double[byLoad.size()];
        int i = 0;
        for (Map.Entry<Double, double[]> l : byLoad.entrySet()) {
          x[i] = l.getKey();
          y[i++] = l.getValue()[0] / l.getValue()[1];
        }
        curves.put(e.getKey(), new double[][] {x, y});
      }
      return new ThreadingProfile(curves);
    }
  }
}
