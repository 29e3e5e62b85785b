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
 * sweep other loads with every static model and the adaptive mid-tier, and, if the scenario has a
 * schedule, run the load steps. The mid-tier is {@link MuTuneSimulation}'s.
 *
 * <p>Keys ({@code mutune.} prefix): {@code models} (e.g. {@code IP, IB, DP20, DB50}),
 * {@code train_loads} and {@code loads} (requests per second), {@code schedule} ({@code rps@ms, ...}),
 * {@code fanout}, {@code leaf_us}, {@code leaf_service}, {@code leaf_cores}, {@code handoff_us}, {@code wake_fast_us},
 * {@code wake_slow_us}, {@code preempt_us}; the scenario's {@code cores}, {@code service},
 * {@code service_mean_us}, {@code cost_rx_us}, {@code cost_tx_us}, {@code rtt_us},
 * {@code warmup_ms}, {@code duration_ms} and {@code seed} keep their meaning.
 */
public final class MuTuneExperiment {

  private static final Set<String> KEYS = Set.of("models", "train_loads", "loads", "schedule", "fanout", "leaf_us",
      "leaf_service",
      "leaf_cores", "handoff_us", "wake_fast_us", "wake_slow_us", "preempt_us");

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
    schedule();
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

  /** {@code rps@ms, ...}, first at 0; empty if the scenario has none. */
  List<Scenario.DemandStep> schedule() {
    String v = keys.getOrDefault("schedule", "");
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
        throw new IllegalArgumentException("mutune.schedule: expected 'rps@ms, ...', got '" + item.strip() + "'");
      }
    }
    if (steps.get(0).startNanos() != 0) {
      throw new IllegalArgumentException("mutune.schedule: the first step starts at 0 ms");
    }
    return steps;
  }

  /** One measured row. */
  public record Row(String phase, String config, double offeredRps, double achievedRps, double p50us, double p99us,
      double p999us, double busyCores, long switches, String finalModel) {
    String csv() {
      return String.format(Locale.ROOT, "%s,%s,%.0f,%.0f,%.1f,%.1f,%.1f,%.2f,%d,%s", phase, config, offeredRps,
          achievedRps, p50us, p99us, p999us, busyCores, switches, finalModel);
    }
  }

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
    List<Scenario.DemandStep> schedule = schedule();
    if (!schedule.isEmpty()) {
      for (ThreadingModel m : models()) {
        rows.add(stepped(m, null, schedule));
      }
      rows.add(stepped(null, adaptation, schedule));
    }
    return rows;
  }

  private Row steady(String phase, ThreadingModel model, ThreadingAdaptation adaptation, double load) {
    MuTuneSimulation sim = new MuTuneSimulation(costs, scenario.seed());
    MuTuneSimulation.Outcome o = sim.run(List.of(new Scenario.DemandStep(load, 0)), scenario.warmupNanos(),
        scenario.durationNanos(), model, adaptation);
    return row(phase, model, o, load);
  }

  private Row stepped(ThreadingModel model, ThreadingAdaptation adaptation, List<Scenario.DemandStep> schedule) {
    MuTuneSimulation sim = new MuTuneSimulation(costs, scenario.seed());
    MuTuneSimulation.Outcome o = sim.run(schedule, 0, scenario.durationNanos(), model, adaptation);
    return row("steps", model, o, -1);
  }

  private static Row row(String phase, ThreadingModel model, MuTuneSimulation.Outcome o, double load) {
    return new Row(phase, model == null ? "mutune" : model.name(), load, o.completed() / o.seconds(), o.p(50),
        o.p(99), o.p(99.9), o.busyCores(), o.switches(), o.finalModel());
  }

  /** Runs {@code scenario}, prints and writes {@code mutune.csv} and {@code report.md} under {@code out}. */
  static int runCommand(Scenario scenario, Path out) throws IOException {
    long started = System.nanoTime();
    MuTuneExperiment e = new MuTuneExperiment(scenario);
    List<Row> rows = e.run();
    Files.createDirectories(out);
    StringBuilder csv = new StringBuilder("phase,config,offered_rps,achieved_rps,p50_us,p99_us,p999_us,busy_cores,"
        + "switches,final_model\n");
    rows.forEach(r -> csv.append(r.csv()).append('\n'));
    Files.writeString(out.resolve("mutune.csv"), csv);
    String report = report(scenario, e, rows);
    Files.writeString(out.resolve("report.md"), report);
    System.out.print(report);
    MuTunePlot.p99VersusLoad(rows.stream().filter(r -> r.phase().equals("sweep")).toList(),
        scenario.name() + ": p99 by load, each static model and µTune (simulated)", out.resolve("p99-by-load.png"));
    System.out.printf(Locale.ROOT, "%nwrote %s, report.md and p99-by-load.png in %s (%.1f s wall clock)%n",
        out.resolve("mutune.csv"), out, (System.nanoTime() - started) / 1e9);
    return 0;
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
    List<Row> steps = rows.stream().filter(r -> r.phase().equals("steps")).toList();
    if (!steps.isEmpty()) {
      md.append("\nLoad steps (").append(e.keys.get("schedule")).append("), whole run:\n\n");
      md.append("| config | p50 us | p99 us | p999 us | switches |\n|---|---|---|---|---|\n");
      for (Row r : steps) {
        md.append(String.format(Locale.ROOT, "| %s | %.0f | %.0f | %.0f | %d |%n", r.config(), r.p50us(), r.p99us(),
            r.p999us(), r.switches()));
      }
    }
    return md.toString();
  }
}
