package io.spillway.sim;

import io.spillway.api.NoControl;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * The robustness matrix ({@code ./spillway sim robustness}): every scheme a scenario names, each at
 * its defaults (the registry's {@code forSlo}-style factories: the SLO and the RTT, nothing tuned),
 * over workloads none of them was tuned for. A scenario with {@code matrix.*} keys describes it; the
 * scenario's own keys (service, service_mean_us, clients, rtt_us, seed, cores, costs) are its
 * centre.
 *
 * <p>The full factorial of the axes (4 distributions × 4 means × 5 client counts × 4 RTTs × 8
 * demand patterns × seeds) is thousands of cells, hours of simulation. The matrix instead varies
 * <b>one axis at a time around the centre</b> (each value of {@code matrix.service}, {@code
 * matrix.service_mean_us}, {@code matrix.clients}, {@code matrix.rtt_us}, the rest at the centre),
 * adds a <b>grid of distribution × client count</b> ({@code matrix.grid_clients}: the shape of
 * breakwater-osdi20 Fig. 6 for each distribution of Fig. 4), repeats the centre with further
 * <b>seeds</b> ({@code matrix.seeds}), and draws {@code matrix.sample} <b>workloads at random</b>
 * from the full factorial (seeded by {@code matrix.sample_seed}), so interactions between axes are
 * sampled too. Every workload runs every demand pattern: each steady level of {@code
 * matrix.steady}, a step pattern, a ramp and an oscillation.
 *
 * <p>A cell is one workload under one pattern. Its SLO is the papers' 10 × (mean service + RTT)
 * (breakwater-osdi20 §5.1), raised to twice the p99 of {@code none} at 0.5× load where that is
 * larger (a heavy tail at half load already spends more than the rule allows). Its capacity is
 * measured as every experiment measures it ({@link Experiment#measureCapacity}). Its windows last
 * 20 ms (Breakwater Fig. 7) or, where capacity is low, as long as {@code
 * matrix.window_completions} completions at capacity take, so that a window's goodput has a
 * Poisson spread well inside the 5 % band of the convergence definition (docs/design.md
 * "Convergence time"); run lengths are counted in windows, so a slow workload runs longer in
 * virtual time but not in events.
 *
 * <p>Per cell and scheme: goodput ÷ what could be served (capacity × the mean of min(demand, 1)
 * over the measured windows: for steady overload, goodput ÷ capacity), p99 ÷ SLO, the longest
 * convergence after a step of the step pattern, the mean reject delay, and the share of requests
 * that expired in client queues. {@link RobustnessSummary} reduces them per scheme.
 *
 * <p>Runs are independent and deterministic for their seeds; every scheme sees the same arrivals
 * in a cell. {@code matrix.workloads} and {@code matrix.patterns} pick a subset of the cells by
 * label and name; a cell's seed does not depend on the subset, so its results are the full
 * matrix's. Not thread-safe: one instance per run of the matrix.
 */
public final class RobustnessMatrix {

  /** The key prefix of the matrix's description. */
  static final String PREFIX = "matrix.";

  /** The scheme {@code Spillway} hands a user who names none. */
  public static final String DEFAULT_SCHEME = "spillway";

  private final Scenario scenario;
  private final int threads;

  public RobustnessMatrix(Scenario scenario, int threads) {
    this.scenario = scenario;
    this.threads = Math.max(1, threads);
    scenario.schemes().forEach(name -> SchemeRegistry.create(name, scenario));
    workloads(); // fail on a malformed matrix before any time is spent
    patterns();
    selectedWorkloads();
    selectedPatterns();
  }

  /** Whether {@code scenario} describes a robustness matrix (sets any {@code matrix.*} key). */
  public static boolean present(Scenario scenario) {
    return Scenario.KEYS.keySet().stream().anyMatch(k -> k.startsWith(PREFIX) && scenario.isSet(k));
  }

  /**
   * One workload of the matrix.
   *
   * @param origin how it was chosen: centre, seed, axis, grid or sample
   */
  public record Workload(String origin, String service, double meanUs, int clients, double rttUs,
      long seed) {

    /** The same workload and seed, whatever the origin. */
    boolean sameAs(Workload o) {
      return service.equals(o.service) && meanUs == o.meanUs && clients == o.clients
          && rttUs == o.rttUs && seed == o.seed;
    }

    public String label() {
      return String.format(Locale.ROOT, "%s %sus c%d rtt%s s%d", service, trim(meanUs), clients,
          trim(rttUs), seed);
    }

    Map<String, String> keys() {
      Map<String, String> k = new LinkedHashMap<>();
      k.put("service", service);
      k.put("service_mean_us", trim(meanUs));
      k.put("clients", Integer.toString(clients));
      k.put("rtt_us", trim(rttUs));
      k.put("seed", Long.toString(seed));
      return k;
    }
  }

  /** The kinds of demand pattern. */
  public enum Kind { STEADY, STEP, RAMP, OSCILLATION }

  /**
   * A demand pattern, in windows.
   *
   * @param levels steady: the one level; step: each phase's level; ramp: from, to, steps;
   *     oscillation: low, high
   * @param windows steady: warm-up windows then measured ones are given by the matrix; step and
   *     oscillation: windows per phase
   */
  public record Pattern(String name, Kind kind, double[] levels, int windows) {

    /** Steady demand above capacity. */
    public boolean steadyOverload() {
      return kind == Kind.STEADY && levels[0] > 1;
    }
  }

  /**
   * One cell's result for one scheme.
   *
   * @param goodputRatio goodput ÷ (capacity × mean of min(demand, 1)) over the measured windows
   * @param p99Ratio p99 end-to-end latency ÷ SLO (0 if nothing completed)
   * @param convergenceMillis the longest convergence after a step of the pattern; -1 if goodput
   *     never settled after one; {@code NaN} for patterns without convergence steps
   * @param rejectDelayMicros mean time from a request leaving its client to its reject arriving
   * @param expiredRate requests expired in client queues ÷ requests issued
   * @param dropRate server rejects ÷ requests received there
   */
  public record CellResult(Workload workload, Pattern pattern, String scheme, double capacityRps,
      double sloMicros, double windowMillis, double goodputRatio, double p99Ratio,
      double convergenceMillis, double rejectDelayMicros, double expiredRate, double dropRate) {

    public String cell() {
      return workload.label() + " / " + pattern.name();
    }

    public boolean withinSlo() {
      return p99Ratio <= 1;
    }
  }

  /** A workload with its measured capacity, SLO and window. */
  record Prepared(Workload workload, Scenario scenario, double capacityRps, long windowNanos) { }

  /** Every workload of the matrix, in report order, without duplicates. */
  public List<Workload> workloads() {
    String service = scenario.get("service").strip();
    double mean = scenario.doubleValue("service_mean_us");
    int clients = scenario.clients();
    double rtt = scenario.doubleValue("rtt_us");
    long seed = scenario.seed();
    List<Workload> all = new ArrayList<>();
    java.util.function.Consumer<Workload> add = w -> {
      if (all.stream().noneMatch(o -> o.sameAs(w))) {
        all.add(w);
      }
    };
    add.accept(new Workload("centre", service, mean, clients, rtt, seed));
    for (String s : list("matrix.seeds")) {
      add.accept(new Workload("seed", service, mean, clients, rtt, parseLong("matrix.seeds", s)));
    }
    List<String> services = list("matrix.service");
    List<Double> means = doubles("matrix.service_mean_us");
    List<Integer> clientCounts = ints("matrix.clients");
    List<Double> rtts = doubles("matrix.rtt_us");
    services.forEach(v -> add.accept(new Workload("axis", v, mean, clients, rtt, seed)));
    means.forEach(v -> add.accept(new Workload("axis", service, v, clients, rtt, seed)));
    clientCounts.forEach(v -> add.accept(new Workload("axis", service, mean, v, rtt, seed)));
    rtts.forEach(v -> add.accept(new Workload("axis", service, mean, clients, v, seed)));
    for (String s : services.isEmpty() ? List.of(service) : services) {
      for (int c : ints("matrix.grid_clients")) {
        add.accept(new Workload("grid", s, mean, c, rtt, seed));
      }
    }
    int sample = scenario.isSet("matrix.sample") ? (int) parseLong("matrix.sample", scenario.get("matrix.sample")) : 0;
    long sampleSeed = scenario.isSet("matrix.sample_seed") ? parseLong("matrix.sample_seed", scenario.get("matrix.sample_seed")) : 1;
    SplittableRandom random = new SplittableRandom(sampleSeed);
    List<String> sv = withCentre(services, service);
    List<Double> mv = withCentre(means, mean);
    List<Integer> cv = withCentre(clientCounts, clients);
    List<Double> rv = withCentre(rtts, rtt);
    int added = 0;
    for (int attempt = 0; added < sample && attempt < 100 * (sample + 1); attempt++) {
      Workload w = new Workload("sample", sv.get(random.nextInt(sv.size())), mv.get(random.nextInt(mv.size())),
          cv.get(random.nextInt(cv.size())), rv.get(random.nextInt(rv.size())), seed + 1000 + added);
      boolean seen = all.stream().anyMatch(o -> o.service().equals(w.service()) && o.meanUs() == w.meanUs()
          && o.clients() == w.clients() && o.rttUs() == w.rttUs());
      if (!seen) {
        all.add(w);
        added++;
      }
    }
    all.forEach(w -> scenario.with(w.keys())); // validates every workload's values
    return List.copyOf(all);
  }

  /** Every demand pattern each workload runs. */
  public List<Pattern> patterns() {
    List<Pattern> patterns = new ArrayList<>();
    for (double level : doubles("matrix.steady")) {
      if (!(level > 0)) {
        throw Scenario.invalid("matrix.steady", "levels must be positive");
      }
      patterns.add(new Pattern("steady " + trim(level) + "x", Kind.STEADY, new double[] {level}, 0));
    }
    List<Double> step = doubles("matrix.step");
    if (!step.isEmpty()) {
      if (step.size() < 2) {
        throw Scenario.invalid("matrix.step", "give at least two levels");
      }
      int n = intOr("matrix.step_windows", 12);
      patterns.add(new Pattern("step " + String.join("-", step.stream().map(RobustnessMatrix::trim).toList()),
          Kind.STEP, step.stream().mapToDouble(Double::doubleValue).toArray(), n));
    }
    List<Double> ramp = doubles("matrix.ramp");
    if (!ramp.isEmpty()) {
      if (ramp.size() != 3 || ramp.get(2) < 2) {
        throw Scenario.invalid("matrix.ramp", "expected 'from, to, steps' with at least two steps");
      }
      patterns.add(new Pattern("ramp " + trim(ramp.get(0)) + "-" + trim(ramp.get(1)) + "x", Kind.RAMP,
          new double[] {ramp.get(0), ramp.get(1), ramp.get(2)}, 2));
    }
    List<Double> osc = doubles("matrix.oscillation");
    if (!osc.isEmpty()) {
      if (osc.size() != 3 || osc.get(2) < 1) {
        throw Scenario.invalid("matrix.oscillation", "expected 'low, high, windows'");
      }
      patterns.add(new Pattern("oscillation " + trim(osc.get(0)) + "/" + trim(osc.get(1)) + "x",
          Kind.OSCILLATION, new double[] {osc.get(0), osc.get(1)}, (int) Math.round(osc.get(2))));
    }
    if (patterns.isEmpty()) {
      throw Scenario.invalid("matrix.steady", "the matrix needs at least one demand pattern");
    }
    return patterns;
  }

  /**
   * The workloads {@link #run} runs: {@link #workloads()}, or those {@code matrix.workloads} names
   * by label. A subset to iterate on; each cell's seed is its own, so its results are those of the
   * full matrix.
   */
  public List<Workload> selectedWorkloads() {
    List<Workload> all = workloads();
    return selected("matrix.workloads", all.stream().map(Workload::label).toList()).stream().map(all::get).toList();
  }

  /** The indices into {@link #patterns()} that {@link #run} runs: all, or those {@code matrix.patterns} names. */
  List<Integer> selectedPatterns() {
    return selected("matrix.patterns", patterns().stream().map(Pattern::name).toList());
  }

  /**
   * The indices of {@code names} that {@code key} selects: every one if it is empty, else those it
   * lists.
   *
   * @throws IllegalArgumentException naming {@code key} if it lists a name that is not there
   */
  private List<Integer> selected(String key, List<String> names) {
    List<String> wanted = selection(key);
    for (String name : wanted) {
      if (!names.contains(name)) {
        throw Scenario.invalid(key, "no '" + name + "' in the matrix");
      }
    }
    List<Integer> indices = new ArrayList<>();
    for (int i = 0; i < names.size(); i++) {
      if (wanted.isEmpty() || wanted.contains(names.get(i))) {
        indices.add(i);
      }
    }
    return indices;
  }

  /** Runs every selected cell with every scheme; results in the order of workloads, patterns, schemes. */
  public List<CellResult> run() throws InterruptedException {
    List<Workload> workloads = selectedWorkloads();
    List<Pattern> patterns = patterns();
    List<Integer> patternIndices = selectedPatterns();
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<Prepared>> prepared = new ArrayList<>();
      for (Workload w : workloads) {
        prepared.add(pool.submit(() -> prepare(w)));
      }
      List<Prepared> ready = new ArrayList<>();
      Experiment.collect(prepared, ready);
      List<Future<CellResult>> runs = new ArrayList<>();
      for (Prepared p : ready) {
        for (int i : patternIndices) {
          Pattern pattern = patterns.get(i);
          long seed = p.scenario().seed() * 1_000_003L + i; // the index in the full list: a subset keeps the seeds
          for (String name : scenario.schemes()) {
            runs.add(pool.submit(() -> runCell(p, pattern, name, seed)));
          }
        }
      }
      List<CellResult> results = new ArrayList<>();
      Experiment.collect(runs, results);
      return results;
    } finally {
      pool.shutdownNow();
    }
  }

  /** Measures the workload's capacity, picks its window and sets its SLO. */
  Prepared prepare(Workload w) {
    double baseSloUs = 10 * (w.meanUs() + w.rttUs());
    Scenario s = scenario.with(w.keys()).with(Map.of("slo_us", trim(baseSloUs)));
    double capacity = Experiment.measureCapacity(s);
    int completions = intOr("matrix.window_completions", 5000);
    long window = Math.max(20_000_000L, roundUpMillis(completions / capacity * 1e9));
    // SLO rule: 2 x p99 of no control at half load, where a heavy tail makes that exceed the rule.
    Recorder half = new Recorder(window);
    long warm = 5 * window;
    long end = warm + 10 * window;
    new Simulation(s, NoControl.INSTANCE, List.of(new Scenario.DemandStep(0.5, 0)), capacity, 0, end,
        half, s.seed() * 1_000_003L - 1).run();
    double p99Us = half.sum(warm, end).percentileMicros(99);
    double sloUs = Math.max(baseSloUs, 2 * p99Us);
    Scenario cell = s.with(Map.of("slo_us", trim(Math.ceil(sloUs * 10) / 10),
        "window_ms", trim(window / 1e6)));
    return new Prepared(w, cell, capacity, window);
  }

  /** One scheme in one cell. */
  CellResult runCell(Prepared p, Pattern pattern, String name, long seed) {
    Scenario s = p.scenario();
    long w = p.windowNanos();
    List<Scenario.DemandStep> steps = new ArrayList<>();
    List<Integer> convergenceSteps = new ArrayList<>();
    long from;
    long end;
    switch (pattern.kind()) {
      case STEADY -> {
        int warm = intOr("matrix.warmup_windows", 8);
        steps.add(new Scenario.DemandStep(pattern.levels()[0], 0));
        from = warm * w;
        end = from + intOr("matrix.measure_windows", 10) * w;
      }
      case STEP -> {
        int n = pattern.windows();
        for (int k = 0; k < pattern.levels().length; k++) {
          steps.add(new Scenario.DemandStep(pattern.levels()[k], k * n * w));
          if (k > 0) {
            convergenceSteps.add(k);
          }
        }
        from = (n / 2) * w; // the first half of the first phase warms up
        end = pattern.levels().length * n * w;
      }
      case RAMP -> {
        int count = (int) Math.round(pattern.levels()[2]);
        double lo = pattern.levels()[0];
        double hi = pattern.levels()[1];
        for (int k = 0; k < count; k++) {
          steps.add(new Scenario.DemandStep(lo + (hi - lo) * k / (count - 1), k * 2 * w));
        }
        from = 2 * w;
        end = (2L * count + 4) * w;
      }
      case OSCILLATION -> {
        int n = pattern.windows();
        for (int k = 0; k < 8; k++) {
          steps.add(new Scenario.DemandStep(pattern.levels()[k % 2], k * n * w));
        }
        from = n * w;
        end = 8L * n * w;
      }
      default -> throw new IllegalStateException(pattern.kind().toString());
    }
    Recorder recorder = new Recorder(w);
    new Simulation(s, SchemeRegistry.create(name, s), steps, p.capacityRps(), 0, end, recorder, seed,
        SchemeRegistry.usesAsqm(name)).run();
    Tally t = recorder.sum(from, end);
    double attainable = 0;
    int windows = 0;
    for (long start = from; start + w <= end; start += w) {
      attainable += Math.min(1, recorder.demandAt(start));
      windows++;
    }
    double seconds = (end - from) / 1e9;
    double served = p.capacityRps() * attainable / windows;
    double goodputRatio = t.good / seconds / served;
    double slo = s.sloNanos() / 1000.0;
    double convergence = Double.NaN;
    for (int k : convergenceSteps) {
      long stepStart = steps.get(k).startNanos();
      long stepEnd = k + 1 < steps.size() ? steps.get(k + 1).startNanos() : end;
      int first = (int) (stepStart / w);
      int last = (int) (stepEnd / w);
      double[] goodput = new double[last - first];
      for (int i = first; i < last; i++) {
        goodput[i - first] = recorder.window(i).good / (w / 1e9);
      }
      double c = StepConvergence.of(name, steps.get(k - 1).level(), steps.get(k).level(),
          stepStart / 1e6, goodput, w / 1e6).convergenceMillis();
      convergence = Double.isNaN(convergence) ? c : (c < 0 || convergence < 0 ? -1 : Math.max(convergence, c));
    }
    return new CellResult(p.workload(), pattern, name, p.capacityRps(), slo, w / 1e6, goodputRatio,
        t.percentileMicros(99) / slo, convergence, t.meanRejectDelayMicros(),
        Tally.ratio(t.expired, t.offered), t.dropRate());
  }

  private List<String> list(String key) {
    String v = scenario.get(key);
    if (v == null || v.isBlank()) {
      return List.of();
    }
    return java.util.Arrays.stream(v.split(",")).map(String::strip).filter(x -> !x.isEmpty()).toList();
  }

  /** A list separated by ';' (labels and pattern names hold commas and spaces). */
  private List<String> selection(String key) {
    String v = scenario.get(key);
    if (v == null || v.isBlank()) {
      return List.of();
    }
    return java.util.Arrays.stream(v.split(";")).map(String::strip).filter(x -> !x.isEmpty()).toList();
  }

  private List<Double> doubles(String key) {
    List<Double> out = new ArrayList<>();
    for (String s : list(key)) {
      try {
        out.add(Double.parseDouble(s));
      } catch (NumberFormatException e) {
        throw Scenario.invalid(key, "expected numbers, got '" + s + "'");
      }
    }
    return out;
  }

  private List<Integer> ints(String key) {
    return list(key).stream().map(s -> (int) parseLong(key, s)).toList();
  }

  private int intOr(String key, int fallback) {
    if (!scenario.isSet(key)) {
      return fallback;
    }
    long v = parseLong(key, scenario.get(key));
    if (v < 1 || v > 1_000_000) {
      throw Scenario.invalid(key, "expected 1 to 1000000, got " + v);
    }
    return (int) v;
  }

  private static long parseLong(String key, String text) {
    try {
      return Long.parseLong(text.strip());
    } catch (NumberFormatException e) {
      throw Scenario.invalid(key, "expected a whole number, got '" + text + "'");
    }
  }

  private static <T> List<T> withCentre(List<T> axis, T centre) {
    List<T> values = new ArrayList<>(axis);
    if (!values.contains(centre)) {
      values.add(centre);
    }
    return values;
  }

  private static long roundUpMillis(double nanos) {
    return (long) Math.ceil(nanos / 1e6) * 1_000_000L;
  }

  static String trim(double v) {
    return v == Math.rint(v) && Math.abs(v) < 1e15 ? Long.toString((long) v)
        : String.format(Locale.ROOT, "%s", v);
  }
}
