package io.spillway.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.sim.RobustnessMatrix.CellResult;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A deterministic slice of the robustness matrix ({@code scenarios/robustness.conf}, full results
 * in docs/results/robustness.md): the centre workload and its heavy-tailed variant, steady 2× and
 * the step pattern, shortened, with the default scheme, Breakwater, CoDel and no control, and one
 * cell at 10,000 clients run as a subset of the matrix. It asserts what the schemes at their
 * defaults do there, failures included.
 */
class RobustnessMatrixTest {

  private static Scenario matrix;
  private static RobustnessSummary summary;

  static Scenario slice(Map<String, String> extra) throws Exception {
    Map<String, String> keys = new HashMap<>(Map.ofEntries(
        Map.entry("schemes", "spillway, breakwater, codel, none"),
        Map.entry("matrix.service", "lognormal"),
        Map.entry("matrix.service_mean_us", ""),
        Map.entry("matrix.clients", ""),
        Map.entry("matrix.rtt_us", ""),
        Map.entry("matrix.grid_clients", ""),
        Map.entry("matrix.seeds", ""),
        Map.entry("matrix.sample", "0"),
        Map.entry("matrix.steady", "2"),
        Map.entry("matrix.step", "0.8, 1.6, 0.8"),
        Map.entry("matrix.step_windows", "8"),
        Map.entry("matrix.ramp", ""),
        Map.entry("matrix.oscillation", ""),
        Map.entry("matrix.warmup_windows", "6"),
        Map.entry("matrix.measure_windows", "5")));
    keys.putAll(extra);
    return Scenario.load(Path.of("..", "scenarios", "robustness.conf"), keys);
  }

  @BeforeAll
  static void run() throws Exception {
    matrix = slice(Map.of());
    summary = new RobustnessSummary(new RobustnessMatrix(matrix, 2).run());
    summary.results().forEach(r -> System.out.printf("%s %s: %.3f x capacity, p99 %.2f x SLO, converged %s ms%n",
        r.cell(), r.scheme(), r.goodputRatio(), r.p99Ratio(), r.convergenceMillis()));
  }

  private static CellResult cell(String service, String pattern, String scheme) {
    return summary.results().stream().filter(r -> r.workload().service().equals(service)
        && r.pattern().name().startsWith(pattern) && r.scheme().equals(scheme)).findFirst().orElseThrow();
  }

  @Test
  void theMatrixIsTheCentrePlusOneAxisAtATime() throws Exception {
    RobustnessMatrix m = new RobustnessMatrix(Scenario.load(Path.of("..", "scenarios", "robustness.conf"),
        Map.of()), 1);
    List<RobustnessMatrix.Workload> w = m.workloads();
    assertEquals("centre", w.getFirst().origin());
    assertEquals(w.size(), w.stream().distinct().count(), "no workload twice");
    assertEquals(2, w.stream().filter(x -> x.origin().equals("seed")).count());
    assertEquals(4, w.stream().filter(x -> x.origin().equals("sample")).count());
    // Every axis value appears with the rest at the centre.
    for (double mean : new double[] {1, 100, 1000}) {
      assertTrue(w.stream().anyMatch(x -> x.meanUs() == mean && x.clients() == 1000 && x.rttUs() == 10
          && x.service().equals("exp")), "mean " + mean);
    }
    // The grid: every distribution at 100 and 10,000 clients.
    for (String s : new String[] {"exp", "const", "bimodal", "lognormal"}) {
      for (int c : new int[] {100, 10_000}) {
        assertTrue(w.stream().anyMatch(x -> x.service().equals(s) && x.clients() == c && x.meanUs() == 10),
            s + " " + c);
      }
    }
    assertEquals(6, m.patterns().size());
  }

  @Test
  void aMalformedMatrixIsRefusedBeforeRunning() throws Exception {
    assertThrows(IllegalArgumentException.class, () -> new RobustnessMatrix(slice(Map.of("matrix.ramp", "1, 2")), 1));
    assertThrows(IllegalArgumentException.class,
        () -> new RobustnessMatrix(slice(Map.of("matrix.service", "pareto")), 1));
    assertThrows(IllegalArgumentException.class, () -> new RobustnessMatrix(slice(Map.of("matrix.steady", "",
        "matrix.step", "", "matrix.ramp", "", "matrix.oscillation", "")), 1));
  }

  @Test
  void theCellSloIsThePapersRuleUnlessTheTailAtHalfLoadNeedsMore() {
    assertEquals(200, cell("exp", "steady", "none").sloMicros(), 1e-9, "10 x (10 + 10) us");
    double lognormal = cell("lognormal", "steady", "none").sloMicros();
    assertTrue(lognormal > 200, "a p99 of 10.6 x the mean at half load raises it: " + lognormal);
  }

  @Test
  void noControlCollapsesAndBreakwaterHoldsAtTheCentre() {
    CellResult none = cell("exp", "steady", "none");
    assertTrue(none.goodputRatio() < 0.05 && none.p99Ratio() > 10, none.toString());
    CellResult bw = cell("exp", "steady", "breakwater");
    assertTrue(bw.goodputRatio() >= 0.93 && bw.withinSlo(), bw.toString());
    CellResult step = cell("exp", "step", "breakwater");
    assertTrue(step.convergenceMillis() >= 0 && step.convergenceMillis() <= 50, step.toString());
  }

  @Test
  void theDefaultSchemeHoldsTheCentreAndItsHeavyTail() {
    for (String service : new String[] {"exp", "lognormal"}) {
      CellResult steady = cell(service, "steady", "spillway");
      assertTrue(steady.goodputRatio() >= 0.93 && steady.withinSlo(), steady.toString());
      CellResult step = cell(service, "step", "spillway");
      assertTrue(step.goodputRatio() >= 0.93 && step.withinSlo(), step.toString());
    }
    CellResult step = cell("exp", "step", "spillway");
    assertTrue(step.convergenceMillis() >= 0 && step.convergenceMillis() <= 50, step.toString());
    // Documented, not hidden: with the heavy tail Spillway's pool, which grows only while its
    // credits are in use, takes longer than 50 ms to settle after the step in this slice's eight
    // windows (the full matrix's 12-window phases settle it within 20 ms,
    // docs/results/robustness.md).
    // With the heavy tail, Breakwater's 20 ms windows of goodput spread
    // past the 5 % band of the convergence definition, and in this eight-window slice it never
    // settles (docs/results/robustness.md reports the full matrix's 12-window phases).
    assertTrue(cell("lognormal", "step", "breakwater").convergenceMillis() < 0);
  }

  @Test
  void theDefaultSchemeHoldsTenThousandClients() throws Exception {
    // A cell the full matrix had Spillway trail in (docs/results/robustness.md): 10,000 clients,
    // each sending about once in 12 ms, so a cut of the pool lands only as they send again. Eq. 2
    // compounded on C_total (Breakwater's rule) halves the pool first and idles the server; measured
    // from the credits out (Spillway's), it holds. Run as a subset of the matrix (matrix.workloads,
    // matrix.patterns), with the full matrix's seeds, shortened to 6 + 5 windows.
    RobustnessSummary tenThousand = new RobustnessSummary(new RobustnessMatrix(slice(Map.of(
        "schemes", "spillway, breakwater", "matrix.service", "", "matrix.clients", "10000",
        "matrix.workloads", "exp 10us c10000 rtt10 s1", "matrix.patterns", "steady 1.2x",
        "matrix.steady", "1.2", "matrix.step", "")), 2).run());
    CellResult spillway = tenThousand.results().stream().filter(r -> r.scheme().equals("spillway")).findFirst().orElseThrow();
    CellResult breakwater = tenThousand.results().stream().filter(r -> r.scheme().equals("breakwater")).findFirst().orElseThrow();
    System.out.println(spillway + "\n" + breakwater);
    assertEquals(10_000, spillway.workload().clients());
    assertTrue(spillway.goodputRatio() >= 0.93 && spillway.withinSlo(), spillway.toString());
    assertTrue(breakwater.goodputRatio() < spillway.goodputRatio() - 0.02, breakwater.toString());
  }

  @Test
  void aSubsetKeepsTheFullMatrixsOrderAndSeeds() throws Exception {
    RobustnessMatrix m = new RobustnessMatrix(Scenario.load(Path.of("..", "scenarios", "robustness.conf"),
        Map.of("matrix.workloads", "const 10us c100 rtt10 s1; exp 10us c10000 rtt10 s1",
            "matrix.patterns", "ramp 0.5-3x; steady 3x")), 1);
    assertEquals(List.of("exp 10us c10000 rtt10 s1", "const 10us c100 rtt10 s1"),
        m.selectedWorkloads().stream().map(RobustnessMatrix.Workload::label).toList());
    assertEquals(List.of(2, 4), m.selectedPatterns(), "indices into the full list: a cell's seed is the same");
    assertThrows(IllegalArgumentException.class, () -> new RobustnessMatrix(Scenario.load(
        Path.of("..", "scenarios", "robustness.conf"), Map.of("matrix.workloads", "exp 10us c5 rtt10 s1")), 1));
    assertThrows(IllegalArgumentException.class, () -> new RobustnessMatrix(Scenario.load(
        Path.of("..", "scenarios", "robustness.conf"), Map.of("matrix.patterns", "steady 9x")), 1));
  }

  @Test
  void codelAtItsDefaultsFallsShortAtTwiceCapacity() {
    // Documented, not hidden: CoDel's SLO-scaled defaults shed too much at 2x (matrix: 0.81).
    CellResult codel = cell("exp", "steady", "codel");
    assertTrue(codel.goodputRatio() < 0.93, codel.toString());
    assertTrue(codel.goodputRatio() < cell("exp", "steady", "spillway").goodputRatio() - 0.02);
  }

  @Test
  void everyCellHasAWinnerAndTheSummaryCountsThem() {
    for (CellResult r : summary.results()) {
      assertTrue(summary.results().stream().anyMatch(o -> o.cell().equals(r.cell()) && summary.wins(o)));
      assertTrue(!(summary.wins(r) && summary.trails(r)));
    }
    assertEquals(4, summary.perScheme().size());
    assertTrue(summary.bars().stream().anyMatch(b -> b.contains("default scheme")));
  }

  @Test
  void aCellIsDeterministic() throws Exception {
    RobustnessMatrix m = new RobustnessMatrix(matrix, 1);
    RobustnessMatrix.Prepared p = m.prepare(m.workloads().getFirst());
    RobustnessMatrix.Pattern steady = m.patterns().getFirst();
    CellResult a = m.runCell(p, steady, "breakwater", 99);
    CellResult b = m.runCell(m.prepare(m.workloads().getFirst()), steady, "breakwater", 99);
    assertEquals(a, b);
  }
}
