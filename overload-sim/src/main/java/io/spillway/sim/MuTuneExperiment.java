package io.spillway.sim;

import io.spillway.threading.ThreadingAdaptation;
import io.spillway.threading.ThreadingModel;
import io.spillway.threading.ThreadingProfile;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * µTune's experiments in the simulator ({@code ./spillway sim mutune-*}; mutune-osdi18 §4, §7): train
 * each static model across loads into a {@link ThreadingProfile} as µTune's offline phase does, then
 * sweep other loads with every static model and the adaptive mid-tier, and run the load patterns the
 * scenario gives: steps ({@code mutune.schedule}) and spikes ({@code mutune.spikes}). The mid-tier is {@link MuTuneSimulation}'s.
 *
 * <p>With {@code mutune.admission} (schemes, e.g. {@code breakwater, spillway}), the same mid-tier
 * then runs behind each scheme's real gates ({@link MuTuneSimulation.Admission}; the scenario's
 * {@code clients} sessions): µTune under admission control, docs/design.md, "Threading models
 * (µTune)". The SLO is the scenario's {@code slo_us} if it sets one, else Breakwater's rule
 * (breakwater-osdi20 §5.1): 10 × (mean service time + RTT), read as 10 × the lowest mean latency of a
 * static model at the lowest sweep load (the mid-tier's time per request with its leaf waits, plus the
 * client's RTT). Capacity is first measured as the highest throughput any static model reaches with
 * no control, read at each of {@code capacity_loads} (requests per second) or, by default, from the
 * highest sweep load up in steps of 10 % until the model no longer keeps up; then every static model
 * and µTune run at each of {@code admission_demands} (multiples of that capacity), and, if given,
 * through {@code admission_schedule} ({@code demand@ms, ...}, demands as multiples of capacity).
 *
 * <p>Keys ({@code mutune.} prefix): {@code models} (e.g. {@code IP, IB, DP20, DB50}),
 * {@code train_loads} and {@code loads} (requests per second), {@code schedule} ({@code rps@ms, ...}),
 * {@code fanout}, {@code leaf_us}, {@code leaf_service}, {@code leaf_cores}, {@code handoff_us}, {@code wake_fast_us},
 * {@code wake_slow_us}, {@code preempt_us}; the scenario's {@code cores}, {@code service},
 * {@code service_mean_us}, {@code cost_rx_us}, {@code cost_tx_us}, {@code rtt_us},
 * {@code warmup_ms}, {@code duration_ms} and {@code seed} keep their meaning.
 */
public final class MuTuneExperiment {

  private static final Set<String> KEYS = Set.of("models", "train_loads", "loads", "schedule", "spikes", "fanout", "leaf_us",
      "leaf_service",
      "leaf_cores", "handoff_us", "wake_fast_us", "wake_slow_us", "preempt_us", "admission", "admission_demands",
      "admission_schedule", "capacity_loads");

  /** The tail recorded for a saturated point: 10 s, past any SLO. */
  private static final double SATURATED_US = 1e7;

  private final Scenario scenario;
  private final Map<String, String> keys;
  private final MuTuneSimulation.Costs costs;

  /**
   * @throws IllegalArgumentException naming a missing or malformed {@code mutune.*} key
   */
  public MuTuneExperiment(Scenario scenario) {
    this.scenario = scenario;
    this.keys = scenario.muTuneKeys();
    for (String k : keys.keySet()) {
      if (!KEYS.contains(k)) {
        throw new IllegalArgumentException("unknown scenario key 'mutune." + k + "'; known: mutune." + String.join(
            ", mutune.", KEYS));
      }
    }
    this.costs = new MuTuneSimulation.Costs(scenario.service(), scenario.rxCostNanos(), scenario.txCostNanos(),
        micros("handoff_us", "2"), micros("wake_fast_us", "5"), micros("wake_slow_us", "40"),
        micros("preempt_us", "750"), (int) number("fanout", "4"),
        ServiceTime.parse(keys.getOrDefault("leaf_service", "exp").strip(), micros("leaf_us", "100")),
        (int) number("leaf_cores", "1"), scenario.rttNanos(), scenario.cores());
    models();
    loads("loads", "");
    loads("train_loads", keys.getOrDefault("loads", ""));
    for (LoadPattern pattern : LOAD_PATTERNS) {
      steps(pattern.key(), "rps@ms");
    }
    if (keys.containsKey("admission")) {
      for (String scheme : admissionSchemes()) {
        SchemeRegistry.create(scheme, scenario); // names the known schemes if not one
      }
      loads("admission_demands", "1, 2, 3");
      capacityLoads();
      steps("admission_schedule", "demand@ms");
    }
  }

  private double number(String key, String fallback) {
    String v = keys.getOrDefault(key, fallback);
    try {
      double d = Double.parseDouble(v.strip());
      if (!(d >= 0) || Double.isInfinite(d)) {
        throw new NumberFormatException();
      }
      return d;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("mutune." + key + ": expected a number >= 0, got '" + v + "'");
    }
  }

  private long micros(String key, String fallback) {
    return Math.round(number(key, fallback) * 1_000);
  }

  List<ThreadingModel> models() {
    List<ThreadingModel> models = new ArrayList<>();
    for (String m : keys.getOrDefault("models", "IP, IB, DP16, DB16").split(",")) {
      try {
        models.add(ThreadingModel.parse(m));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("mutune.models: " + e.getMessage(), e);
      }
    }
    return models;
  }

  List<Double> loads(String key, String fallback) {
    String v = keys.getOrDefault(key, fallback);
    if (v.isBlank()) {
      throw new IllegalArgumentException("mutune." + key + ": give loads in requests per second, e.g. 100, 1000");
    }
    List<Double> loads = new ArrayList<>();
    for (String l : v.split(",")) {
      try {
        double d = Double.parseDouble(l.strip());
        if (!(d > 0)) {
          throw new NumberFormatException();
        }
        loads.add(d);
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("mutune." + key + ": expected positive numbers, got '" + l.strip() + "'");
      }
    }
    return loads;
  }

  /**
   * A load pattern the scenario may give, {@code mutune.KEY = rps@ms, ...} (first at 0), run by
   * every configuration as rows of {@code phase} and reported under {@code title}.
   */
  private record LoadPattern(String phase, String key, String title) { }

  /**
   * Steps up and down, and short bursts over a light base: mutune-osdi18 §6.2's load patterns.
   */
  private static final List<LoadPattern> LOAD_PATTERNS = List.of(
      new LoadPattern("steps", "schedule", "Load steps"), new LoadPattern("spikes", "spikes", "Load spikes"));

  List<String> admissionSchemes() {
    List<String> schemes = new ArrayList<>();
    for (String scheme : keys.get("admission").split(",")) {
      if (!scheme.isBlank()) {
        schemes.add(scheme.strip());
      }
    }
    if (schemes.isEmpty()) {
      throw new IllegalArgumentException("mutune.admission: give one or more schemes, e.g. breakwater");
    }
    return schemes;
  }

  /** The offered loads capacity is read at, if the scenario gives them ({@code capacity_loads}), else empty. */
  List<Double> capacityLoads() {
    return keys.containsKey("capacity_loads") ? loads("capacity_loads", "") : List.of();
  }

  private List<Scenario.DemandStep> steps(String key, String form) {
    String v = keys.getOrDefault(key, "");
    List<Scenario.DemandStep> steps = new ArrayList<>();
    if (v.isBlank()) {
      return steps;
    }
    for (String item : v.split(",")) {
      String[] p = item.strip().split("@");
      try {
        steps.add(new Scenario.DemandStep(Double.parseDouble(p[0].strip()),
            Math.round(Double.parseDouble(p[1].strip()) * 1_000_000)));
      } catch (RuntimeException e) {
        throw new IllegalArgumentException("mutune." + key + ": expected '" + form + ", ...', got '" + item.strip()
            + "'");
      }
    }
    if (steps.get(0).startNanos() != 0) {
      throw new IllegalArgumentException("mutune." + key + ": the first step starts at 0 ms");
    }
    return steps;
  }

  /**
   * One measured row. {@code achievedRps} counts the responses to requests that arrived after the
   * warm-up, {@code servedRps} and {@code goodRps} the responses (within the SLO, for goodput) that
   * reached clients after it; {@code rejected} and {@code expired} are shares of the requests offered
   * after it, refused by the server and expired in client queues. {@code goodHighRps} is the goodput
   * over the steps of a schedule whose demand is at least 1 (capacity or more), or NaN; {@code
   * leafWaitUs} the mean wait of a leaf request for a leaf core.
   */
  public record Row(String phase, String config, double offeredRps, double achievedRps, double p50us, double p99us,
      double p999us, double busyCores, long switches, String finalModel, double meanUs, double servedRps,
      double goodRps, double rejected, double expired, double goodHighRps, double leafWaitUs) {
    String csv() {
      return String.format(Locale.ROOT,
          "%s,%s,%.0f,%.0f,%.1f,%.1f,%.1f,%.2f,%d,%s,%.1f,%.0f,%.0f,%.4f,%.4f,%.0f,%.1f", phase, config, offeredRps,
          achievedRps, p50us, p99us, p999us, busyCores, switches, finalModel, meanUs, servedRps, goodRps, rejected,
          expired, goodHighRps, leafWaitUs);
    }
  }

  static final String CSV_HEADER = "phase,config,offered_rps,achieved_rps,p50_us,p99_us,p999_us,busy_cores,"
      + "switches,final_model,mean_us,served_rps,good_rps,rejected,expired,good_high_rps,leaf_wait_us";

  /** Trains, sweeps and steps; returns every row. */
  public List<Row> run() {
    List<Row> rows = new ArrayList<>();
    ThreadingProfile.Builder profile = ThreadingProfile.builder();
    for (ThreadingModel m : models()) {
      for (double load : loads("train_loads", keys.getOrDefault("loads", ""))) {
        Row r = steady("train", m, null, load);
        rows.add(r);
        // A model that completes nothing measured has saturated: its tail is the run itself.
        double p99 = Double.isNaN(r.p99us()) ? SATURATED_US : Math.min(r.p99us(), SATURATED_US);
        profile.add(m, load, p99 * 1e3);
        if (p99 >= SATURATED_US / 10) {
          break; // saturated: higher loads only queue more (as µTune's training stops at saturation)
        }
      }
    }
    ThreadingAdaptation adaptation = ThreadingAdaptation.of(profile.build());
    for (ThreadingModel m : models()) {
      for (double load : loads("loads", "")) {
        rows.add(steady("sweep", m, null, load));
      }
    }
    for (double load : loads("loads", "")) {
      rows.add(steady("sweep", null, adaptation, load));
    }
    for (LoadPattern pattern : LOAD_PATTERNS) {
      List<Scenario.DemandStep> steps = steps(pattern.key(), "rps@ms");
      if (!steps.isEmpty()) {
        for (ThreadingModel m : models()) {
          rows.add(patterned(pattern.phase(), m, null, steps));
        }
        rows.add(patterned(pattern.phase(), null, adaptation, steps));
      }
    }
    if (keys.containsKey("admission")) {
      admission(rows, adaptation);
    }
    return rows;
  }

  /** The capacity probe, then every configuration behind the admission scheme (see the class comment). */
  private void admission(List<Row> rows, ThreadingAdaptation adaptation) {
    double capacity = 0;
    double top = loads("loads", "").stream().mapToDouble(Double::doubleValue).max().orElseThrow();
    for (ThreadingModel m : models()) {
      if (!capacityLoads().isEmpty()) {
        for (double load : capacityLoads()) {
          Row r = steady("capacity", m, null, load);
          rows.add(r);
          capacity = Math.max(capacity, r.servedRps());
        }
        continue;
      }
      // Up from the highest sweep load in steps of 10 % until the model no longer keeps up: an
      // overloaded server with no control spends CPU reading requests it serves only later, so its
      // throughput falls past the knee and the highest reading is near it.
      for (double load = top; ; load *= 1.1) {
        Row r = steady("capacity", m, null, load);
        rows.add(r);
        capacity = Math.max(capacity, r.servedRps());
        if (r.servedRps() < 0.97 * load || load > 1000 * top) {
          break;
        }
      }
    }
    Scenario withSlo = scenario.isSet("slo_us") ? scenario
        : scenario.with(Map.of("slo_us", String.format(Locale.ROOT, "%.1f", derivedSloNanos(rows) / 1e3)));
    List<ThreadingModel> configs = new ArrayList<>(models());
    configs.add(null);
    for (String scheme : admissionSchemes()) {
      String phase = "admission:" + scheme;
      for (double demand : loads("admission_demands", "1, 2, 3")) {
        for (ThreadingModel m : configs) {
          MuTuneSimulation sim = new MuTuneSimulation(costs, scenario.seed(), admission(scheme, withSlo));
          MuTuneSimulation.Run o = sim.run(List.of(new Scenario.DemandStep(demand * capacity, 0)),
              scenario.warmupNanos(), scenario.durationNanos(), m, m == null ? adaptation : null);
          rows.add(row(phase, m, o, demand * capacity, List.of()));
        }
      }
      List<Scenario.DemandStep> relative = steps("admission_schedule", "demand@ms");
      if (!relative.isEmpty()) {
        List<Scenario.DemandStep> schedule = new ArrayList<>();
        for (Scenario.DemandStep s : relative) {
          schedule.add(new Scenario.DemandStep(s.level() * capacity, s.startNanos()));
        }
        for (ThreadingModel m : configs) {
          MuTuneSimulation sim = new MuTuneSimulation(costs, scenario.seed(), admission(scheme, withSlo));
          MuTuneSimulation.Run o = sim.run(schedule, 0, scenario.durationNanos(), m, m == null ? adaptation : null);
          rows.add(row(phase + ":steps", m, o, -1, relative));
        }
      }
    }
  }

  /** Breakwater's SLO rule on this mid-tier: 10 × the lowest mean latency at the lowest sweep load. */
  private long derivedSloNanos(List<Row> rows) {
    double lowest = loads("loads", "").stream().mapToDouble(Double::doubleValue).min().orElseThrow();
    double mean = rows.stream().filter(r -> r.phase().equals("sweep") && !r.config().equals("mutune")
        && r.offeredRps() == lowest).mapToDouble(Row::meanUs).min().orElseThrow();
    return Math.round(10 * mean * 1e3);
  }

  private MuTuneSimulation.Admission admission(String scheme, Scenario withSlo) {
    return new MuTuneSimulation.Admission(SchemeRegistry.create(scheme, withSlo), withSlo.clients(),
        withSlo.sloNanos());
  }

  private Row steady(String phase, ThreadingModel model, ThreadingAdaptation adaptation, double load) {
    MuTuneSimulation sim = new MuTuneSimulation(costs, scenario.seed());
    MuTuneSimulation.Run o = sim.run(List.of(new Scenario.DemandStep(load, 0)), scenario.warmupNanos(),
        scenario.durationNanos(), model, adaptation);
    return row(phase, model, o, load, List.of());
  }

  /** One run through a load pattern, {@code phase} "steps" or "spikes", measured over the whole run. */
  private Row patterned(String phase, ThreadingModel model, ThreadingAdaptation adaptation,
      List<Scenario.DemandStep> schedule) {
    MuTuneSimulation sim = new MuTuneSimulation(costs, scenario.seed());
    MuTuneSimulation.Run o = sim.run(schedule, 0, scenario.durationNanos(), model, adaptation);
    return row(phase, model, o, -1, List.of());
  }

  /** {@code relative}: the run's schedule in multiples of capacity, to find its high steps; or empty. */
  private Row row(String phase, ThreadingModel model, MuTuneSimulation.Run o, double load,
      List<Scenario.DemandStep> relative) {
    double offered = o.offered();
    double goodHigh = Double.NaN;
    long highNanos = 0;
    long highGood = 0;
    for (int i = 0; i < relative.size(); i++) {
      if (relative.get(i).level() >= 1) {
        long endNanos = i + 1 < relative.size() ? relative.get(i + 1).startNanos() : scenario.durationNanos();
        highNanos += endNanos - relative.get(i).startNanos();
        highGood += o.goodByStep()[i];
      }
    }
    if (highNanos > 0) {
      goodHigh = highGood / (highNanos / 1e9);
    }
    return new Row(phase, model == null ? "mutune" : model.name(), load, o.completed() / o.seconds(), o.p(50),
        o.p(99), o.p(99.9), o.busyCores(), o.switches(), o.finalModel(),
        o.latency().getTotalCount() == 0 ? Double.NaN : o.latency().getMean() / 1e3, o.served() / o.seconds(),
        o.good() / o.seconds(), offered == 0 ? 0 : o.rejected() / offered, offered == 0 ? 0 : o.expired() / offered,
        goodHigh, o.leafWaitNanos() / 1e3);
  }

  /** Runs {@code scenario}, prints and writes {@code mutune.csv} and {@code report.md} under {@code out}. */
  static int runCommand(Scenario scenario, Path out) throws IOException {
    long started = System.nanoTime();
    MuTuneExperiment e = new MuTuneExperiment(scenario);
    List<Row> rows = e.run();
    Files.createDirectories(out);
    StringBuilder csv = new StringBuilder(CSV_HEADER + "\n");
    rows.forEach(r -> csv.append(r.csv()).append('\n'));
    Files.writeString(out.resolve("mutune.csv"), csv);
    String report = report(scenario, e, rows);
    Files.writeString(out.resolve("report.md"), report);
    System.out.print(report);
    MuTunePlot.p99VersusLoad(rows.stream().filter(r -> r.phase().equals("sweep")).toList(),
        scenario.name() + ": p99 by load, each static model and µTune (simulated)", out.resolve("p99-by-load.png"));
    double capacity = rows.stream().filter(r -> r.phase().equals("capacity")).mapToDouble(Row::servedRps).max()
        .orElse(0);
    if (capacity > 0) {
      for (String scheme : e.admissionSchemes()) {
        MuTunePlot.goodputVersusDemand(rows.stream().filter(r -> r.phase().equals("admission:" + scheme)).toList(),
            capacity, scenario.name() + ": goodput behind " + scheme + " (simulated)",
            out.resolve("goodput-" + scheme + ".png"));
      }
    }
    System.out.printf(Locale.ROOT, "%nwrote %s, report.md and the figures in %s (%.1f s wall clock)%n",
        out.resolve("mutune.csv"), out, (System.nanoTime() - started) / 1e9);
    return 0;
  }

  private static void admissionReport(Scenario scenario, MuTuneExperiment e, List<Row> rows, StringBuilder md) {
    List<Row> probe = rows.stream().filter(r -> r.phase().equals("capacity")).toList();
    if (probe.isEmpty()) {
      return;
    }
    Row top = probe.stream().max(java.util.Comparator.comparingDouble(Row::servedRps)).orElseThrow();
    double capacity = top.servedRps();
    long slo = scenario.isSet("slo_us") ? scenario.sloNanos() : e.derivedSloNanos(rows);
    md.append(String.format(Locale.ROOT, "%nCapacity %.0f rps: %s's throughput with no control at %.0f rps offered, "
        + "the highest of every static model at %d loads (%s). SLO %.0f us (%s). %d client sessions.%n", capacity,
        top.config(), top.offeredRps(), probe.size(), e.capacityLoads().isEmpty()
            ? "from the highest sweep load up in 10 % steps until each model stops keeping up" : "mutune.capacity_loads",
        slo / 1e3, scenario.isSet("slo_us") ? "the scenario's"
            : "10 × the lowest mean latency at the lowest sweep load", scenario.clients()));
    for (String scheme : e.admissionSchemes()) {
      schemeReport(scheme, e, rows, capacity, md);
    }
  }

  private static void schemeReport(String scheme, MuTuneExperiment e, List<Row> rows, double capacity,
      StringBuilder md) {
    String phase = "admission:" + scheme;
    md.append("\nUnder ").append(scheme).append(":\n\n");
    md.append("| demand | config | goodput ÷ capacity | p99 us | refused | expired | leaf wait us | switches |"
        + " µTune ran |\n|---|---|---|---|---|---|---|---|---|\n");
    for (Row r : rows.stream().filter(r -> r.phase().equals(phase)).toList()) {
      md.append(String.format(Locale.ROOT, "| %.2f× | %s | %.3f | %.0f | %.1f %% | %.1f %% | %.0f | %d | %s |%n",
          r.offeredRps() / capacity, r.config(), r.goodRps() / capacity, r.p99us(), 100 * r.rejected(),
          100 * r.expired(), r.leafWaitUs(), r.switches(), r.config().equals("mutune") ? r.finalModel() : "-"));
    }
    List<Row> steps = rows.stream().filter(r -> r.phase().equals(phase + ":steps")).toList();
    if (!steps.isEmpty()) {
      md.append("\nUnder ").append(scheme).append(", load steps (").append(e.keys.get("admission_schedule").strip())
          .append(", demand × capacity @ ms), whole run; goodput over the steps at capacity or above:\n\n");
      md.append("| config | goodput ÷ capacity, high steps | p50 us | p99 us | refused | expired | switches |\n"
          + "|---|---|---|---|---|---|---|\n");
      for (Row r : steps) {
        md.append(String.format(Locale.ROOT, "| %s | %.3f | %.0f | %.0f | %.1f %% | %.1f %% | %d |%n", r.config(),
            r.goodHighRps() / capacity, r.p50us(), r.p99us(), 100 * r.rejected(), 100 * r.expired(),
            r.switches()));
      }
    }
  }

  /** The sweep as a table of p99 per load and configuration, normalised to the best static model. */
  static String report(Scenario scenario, MuTuneExperiment e, List<Row> rows) {
    StringBuilder md = new StringBuilder();
    md.append("# ").append(scenario.name()).append(" (simulated)\n\n").append(scenario.description()).append("\n\n");
    md.append("p99 (us) by offered load; in brackets, ÷ the best static model at that load.\n\n");
    List<String> configs = new ArrayList<>();
    e.models().forEach(m -> configs.add(m.name()));
    configs.add("mutune");
    md.append("| rps |");
    configs.forEach(c -> md.append(' ').append(c).append(" |"));
    md.append(" µTune ran |\n|---|");
    configs.forEach(c -> md.append("---|"));
    md.append("---|\n");
    Map<Double, Map<String, Row>> byLoad = new LinkedHashMap<>();
    rows.stream().filter(r -> r.phase().equals("sweep"))
        .forEach(r -> byLoad.computeIfAbsent(r.offeredRps(), k -> new LinkedHashMap<>()).put(r.config(), r));
    for (Map.Entry<Double, Map<String, Row>> l : byLoad.entrySet()) {
      double best = l.getValue().values().stream().filter(r -> !r.config().equals("mutune"))
          .mapToDouble(Row::p99us).min().orElse(Double.NaN);
      md.append(String.format(Locale.ROOT, "| %.0f |", l.getKey()));
      for (String c : configs) {
        Row r = l.getValue().get(c);
        md.append(r == null ? " - |" : String.format(Locale.ROOT, " %.0f (%.2f) |", r.p99us(), r.p99us() / best));
      }
      Row mu = l.getValue().get("mutune");
      md.append(' ').append(mu == null ? "-" : mu.finalModel() + ", " + mu.switches() + " switches").append(" |\n");
    }
    for (LoadPattern pattern : LOAD_PATTERNS) {
      List<Row> patterned = rows.stream().filter(r -> r.phase().equals(pattern.phase())).toList();
      if (!patterned.isEmpty()) {
        md.append("\n").append(pattern.title()).append(" (").append(e.keys.get(pattern.key()))
            .append("), whole run:\n\n");
        md.append("| config | p50 us | p99 us | p999 us | switches |\n|---|---|---|---|---|\n");
        for (Row r : patterned) {
          md.append(String.format(Locale.ROOT, "| %s | %.0f | %.0f | %.0f | %d |%n", r.config(), r.p50us(),
              r.p99us(), r.p999us(), r.switches()));
        }
      }
    }
    admissionReport(scenario, e, rows, md);
    return md.toString();
  }
}
