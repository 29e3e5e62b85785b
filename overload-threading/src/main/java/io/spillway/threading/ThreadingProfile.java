package io.spillway.threading;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;

/**
 * µTune's trained model of tail latency (mutune-osdi18 §4, "Training phase"): for each threading
 * model, the 99th-percentile latency measured at a series of offered loads, every repetition of
 * each measurement kept, and a piecewise-linear interpolation that predicts the tail at any load.
 *
 * <p>Three curves per model, each taken point by point over the repetitions at a load ({@link
 * Curve}): the median, the fastest run (lowest p99) and the slowest (highest p99). The paper
 * averages five 30 s measurements per point (§5) and predicts from that one curve; here the spread
 * between fastest and slowest is kept as well, because on a small virtual machine host stalls move
 * one model's p99 at one load by 1.2–5× from run to run, and the policy ({@link ThreadingPolicy})
 * needs to know which differences between models such noise can explain. The median rather than
 * the mean, so that one stalled run does not drag the curve.
 *
 * <p>Each curve is made non-decreasing in load by isotonic regression (pool-adjacent-violators: a
 * run of loads whose values fall is replaced by their mean, repeated until nothing falls): the tail
 * latency of a fixed model cannot truly fall as its load rises, so a fall is noise, and left in it
 * makes two models' curves cross back and forth where they only wobble. The mean is weighted by
 * the load: every load is measured for the same time, so a point's p99 comes from a number of
 * requests proportional to its load, and an empirical quantile's variance falls as one over that
 * number; a p99 of a few hundred requests at the lowest load, far above the points after it, then
 * moves their pooled value little instead of as much as each of them.
 *
 * <p>Between two trained loads the prediction is the straight line through them; below the lowest
 * it is the lowest load's tail; above the highest it continues the last segment's slope (never
 * falling), so a model trained up to its saturation keeps predicting a growing tail past it
 * instead of a flat one it cannot deliver; there the three curves' continuations are kept in
 * order (fastest ≤ median ≤ slowest), as the repetitions they come from are.
 *
 * <p>Written and read as CSV, {@code model,rps,rep,p99_us}, one row per repetition (what {@code
 * ./spillway mutune train} writes; see {@code docs/results/mutune.md}); a file without the {@code
 * rep} column, {@code model,rps,p99_us}, reads as one repetition per row.
 *
 * <p>Immutable and thread-safe once built.
 */
public final class ThreadingProfile {

  /** Which of a model's curves a prediction reads. */
  public enum Curve {
    /** The median of the repetitions at each load. */
    MEDIAN,
    /** The lowest p99 among the repetitions at each load: the model on its best run. */
    FASTEST,
    /** The highest p99 among the repetitions at each load: the model on its worst run. */
    SLOWEST
  }

  private final Map<ThreadingModel, Trained> models;

  /** One model's measurements and its three fitted curves over the same ascending loads. */
  private record Trained(double[] loads, double[][] reps, Map<Curve, double[]> fitted) { }

  private ThreadingProfile(Map<ThreadingModel, Trained> models) {
    this.models = models;
  }

  /** A builder; add each measured repetition. */
  public static Builder builder() {
    return new Builder();
  }

  /** The models this profile was trained on, in the order they were first added. */
  public Set<ThreadingModel> models() {
    return Collections.unmodifiableSet(models.keySet());
  }

  /** The loads {@code model} was trained at, ascending. */
  public double[] loads(ThreadingModel model) {
    return trained(model).loads.clone();
  }

  /** The p99s measured for {@code model} at the trained load {@code rps}, in nanoseconds, in the order added. */
  public double[] repetitions(ThreadingModel model, double rps) {
    Trained t = trained(model);
    int i = Arrays.binarySearch(t.loads, rps);
    if (i < 0) {
      throw new IllegalArgumentException(model + " was not trained at " + rps + " rps; loads: "
          + Arrays.toString(t.loads));
    }
    return t.reps[i].clone();
  }

  /**
   * The predicted 99th-percentile latency of {@code model} at {@code rps} on its median curve, in
   * nanoseconds.
   *
   * @throws IllegalArgumentException if the profile has no points for {@code model}
   */
  public double predictNanos(ThreadingModel model, double rps) {
    return predictNanos(model, rps, Curve.MEDIAN);
  }

  /**
   * The predicted 99th-percentile latency of {@code model} at {@code rps} on {@code curve}, in
   * nanoseconds.
   *
   * @throws IllegalArgumentException if the profile has no points for {@code model}
   */
  public double predictNanos(ThreadingModel model, double rps, Curve curve) {
    Objects.requireNonNull(curve, "curve");
    Trained t = trained(model);
    double fastest = interpolate(t.loads, t.fitted.get(Curve.FASTEST), rps);
    double median = interpolate(t.loads, t.fitted.get(Curve.MEDIAN), rps);
    double slowest = interpolate(t.loads, t.fitted.get(Curve.SLOWEST), rps);
    // Up to the highest trained load the three are ordered already (each fit is monotone in its
    // input, and the input is ordered point by point). Past it each continues its own last slope,
    // and a fastest curve that rises more steeply than the slowest overtakes it; the policy then
    // reads one model's runs as both faster and slower than another's and moves back and forth
    // at a steady load. Kept ordered: the fastest of the three continuations is the fastest run.
    return switch (curve) {
      case FASTEST -> Math.min(fastest, Math.min(median, slowest));
      case SLOWEST -> Math.max(fastest, Math.max(median, slowest));
      case MEDIAN -> Math.max(Math.min(fastest, slowest), Math.min(median, Math.max(fastest, slowest)));
    };
  }

  /** The model whose median curve is lowest at {@code rps} (ties: the first trained). */
  public ThreadingModel best(double rps) {
    return best(rps, Curve.MEDIAN);
  }

  /** The model whose {@code curve} is lowest at {@code rps} (ties: the first trained). */
  public ThreadingModel best(double rps, Curve curve) {
    return bestExcept(rps, curve, null);
  }

  /**
   * The model other than {@code excluded} whose {@code curve} is lowest at {@code rps} (ties: the
   * first trained); null if there is none. {@code excluded} may be null.
   */
  ThreadingModel bestExcept(double rps, Curve curve, ThreadingModel excluded) {
    ThreadingModel best = null;
    double bestNanos = Double.POSITIVE_INFINITY;
    for (ThreadingModel m : models.keySet()) {
      if (m.equals(excluded)) {
        continue;
      }
      double p = predictNanos(m, rps, curve);
      if (p < bestNanos) {
        best = m;
        bestNanos = p;
      }
    }
    return best;
  }

  /**
   * Whether {@code candidate}'s slowest curve is predicted no higher than {@code current}'s fastest
   * at every load from {@code low} to {@code high}. Up to the highest trained load each curve is
   * straight between trained loads, so their difference is too, and it is enough to compare them
   * at the two ends and at every load either model was trained at in between; past it a slowest
   * curve can only bend up and a fastest only down ({@link #predictNanos}), so the difference is
   * still largest at an end of each piece.
   */
  boolean noSlowerAcross(ThreadingModel candidate, ThreadingModel current, double low, double high) {
    return noSlowerAt(candidate, current, low) && noSlowerAt(candidate, current, high)
        && noSlowerAtLoadsWithin(trained(candidate).loads, candidate, current, low, high)
        && noSlowerAtLoadsWithin(trained(current).loads, candidate, current, low, high);
  }

  private boolean noSlowerAtLoadsWithin(double[] loads, ThreadingModel candidate, ThreadingModel current,
      double low, double high) {
    for (double l : loads) {
      if (l > low && l < high && !noSlowerAt(candidate, current, l)) {
        return false;
      }
    }
    return true;
  }

  private boolean noSlowerAt(ThreadingModel candidate, ThreadingModel current, double rps) {
    return predictNanos(candidate, rps, Curve.SLOWEST) <= predictNanos(current, rps, Curve.FASTEST);
  }

  private Trained trained(ThreadingModel model) {
    Trained t = models.get(model);
    if (t == null) {
      throw new IllegalArgumentException("no training points for " + model + "; trained: " + models.keySet());
    }
    return t;
  }

  private static double interpolate(double[] x, double[] y, double rps) {
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

  /** {@link #isotonic(double[], double[])} with every point weighted alike. */
  static double[] isotonic(double[] y) {
    double[] ones = new double[y.length];
    Arrays.fill(ones, 1);
    return isotonic(y, ones);
  }

  /**
   * The non-decreasing sequence closest to {@code y} in squared error weighted by {@code w} (each
   * weight positive): pool-adjacent-violators. Blocks of equal fitted value are kept as (weighted
   * sum, weight, points); a new point starts a block, and while a block's weighted mean is below
   * the one before it the two merge.
   */
  static double[] isotonic(double[] y, double[] w) {
    int n = y.length;
    double[] sum = new double[n];
    double[] weight = new double[n];
    int[] points = new int[n];
    int blocks = 0;
    for (int k = 0; k < n; k++) {
      sum[blocks] = y[k] * w[k];
      weight[blocks] = w[k];
      points[blocks] = 1;
      blocks++;
      while (blocks > 1 && sum[blocks - 2] * weight[blocks - 1] > sum[blocks - 1] * weight[blocks - 2]) {
        sum[blocks - 2] += sum[blocks - 1];
        weight[blocks - 2] += weight[blocks - 1];
        points[blocks - 2] += points[blocks - 1];
        blocks--;
      }
    }
    double[] fit = new double[n];
    int i = 0;
    for (int b = 0; b < blocks; b++) {
      Arrays.fill(fit, i, i + points[b], sum[b] / weight[b]);
      i += points[b];
    }
    return fit;
  }

  private static double median(double[] sorted) {
    int n = sorted.length;
    return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  }

  /** Writes the profile as CSV ({@code model,rps,rep,p99_us}), every repetition as measured. */
  public void write(Path file) throws IOException {
    StringBuilder out = new StringBuilder("model,rps,rep,p99_us\n");
    for (Map.Entry<ThreadingModel, Trained> e : models.entrySet()) {
      Trained t = e.getValue();
      for (int i = 0; i < t.loads.length; i++) {
        for (int r = 0; r < t.reps[i].length; r++) {
          out.append(String.format(Locale.ROOT, "%s,%.1f,%d,%.1f%n", e.getKey().name(), t.loads[i], r,
              t.reps[i][r] / 1e3));
        }
      }
    }
    Files.writeString(file, out, StandardCharsets.UTF_8);
  }

  /**
   * Reads a profile {@link #write} wrote, or one in the single-run form {@code model,rps,p99_us}.
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
      if (line.isEmpty() || line.startsWith("#") || line.startsWith("model")) {
        continue;
      }
      String[] f = line.split(",");
      try {
        if (f.length != 3 && f.length != 4) {
          throw new IllegalArgumentException("expected model,rps,rep,p99_us or model,rps,p99_us");
        }
        if (f.length == 4 && Integer.parseInt(f[2].strip()) < 0) {
          throw new IllegalArgumentException("a repetition is numbered from 0");
        }
        b.add(ThreadingModel.parse(f[0]), Double.parseDouble(f[1].strip()),
            Double.parseDouble(f[f.length - 1].strip()) * 1e3);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(file + ":" + (i + 1) + ": " + e.getMessage() + ": '" + line + "'", e);
      }
    }
    return b.build();
  }

  /** Collects measured repetitions. Not thread-safe. */
  public static final class Builder {
    private final Map<ThreadingModel, Map<Double, List<Double>>> points = new LinkedHashMap<>();

    private Builder() { }

    /**
     * Adds one repetition: {@code model} at {@code rps} offered had this 99th percentile. Each call
     * at a load already added is another repetition there.
     *
     * @throws IllegalArgumentException if a value is negative or not finite
     */
    public Builder add(ThreadingModel model, double rps, double p99Nanos) {
      Objects.requireNonNull(model, "model");
      if (!(rps >= 0) || !(p99Nanos >= 0) || Double.isInfinite(rps) || Double.isInfinite(p99Nanos)) {
        throw new IllegalArgumentException("rps and p99 must be finite and >= 0: " + rps + ", " + p99Nanos);
      }
      points.computeIfAbsent(model, m -> new TreeMap<>()).computeIfAbsent(rps + 0.0, l -> new ArrayList<>())
          .add(p99Nanos);
      return this;
    }

    /**
     * The profile: per model and load the median, lowest and highest of the repetitions, each
     * curve then fitted non-decreasing in load, each load weighted by its rate.
     *
     * @throws IllegalArgumentException if no point was added
     */
    public ThreadingProfile build() {
      if (points.isEmpty()) {
        throw new IllegalArgumentException("a threading profile needs at least one measured point");
      }
      Map<ThreadingModel, Trained> models = new LinkedHashMap<>();
      for (Map.Entry<ThreadingModel, Map<Double, List<Double>>> e : points.entrySet()) {
        int n = e.getValue().size();
        double[] loads = new double[n];
        double[][] reps = new double[n][];
        double[] median = new double[n];
        double[] fastest = new double[n];
        double[] slowest = new double[n];
        int i = 0;
        for (Map.Entry<Double, List<Double>> l : e.getValue().entrySet()) {
          loads[i] = l.getKey();
          reps[i] = l.getValue().stream().mapToDouble(Double::doubleValue).toArray();
          double[] sorted = reps[i].clone();
          Arrays.sort(sorted);
          median[i] = median(sorted);
          fastest[i] = sorted[0];
          slowest[i] = sorted[sorted.length - 1];
          i++;
        }
        // the requests behind each point's p99 (see the class comment); a load of 0 counts as 1 rps
        double[] weights = Arrays.stream(loads).map(l -> Math.max(1, l)).toArray();
        Map<Curve, double[]> fitted = new java.util.EnumMap<>(Curve.class);
        fitted.put(Curve.MEDIAN, isotonic(median, weights));
        fitted.put(Curve.FASTEST, isotonic(fastest, weights));
        fitted.put(Curve.SLOWEST, isotonic(slowest, weights));
        models.put(e.getKey(), new Trained(loads, reps, fitted));
      }
      return new ThreadingProfile(models);
    }
  }
}
