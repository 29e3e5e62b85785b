package io.spillway.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.OverloadScheme;
import io.spillway.api.testing.LeakCheckingServerGate;
import io.spillway.threading.ThreadingAdaptation;
import io.spillway.threading.ThreadingModel;
import io.spillway.threading.ThreadingProfile;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * µTune's mid-tier in virtual time: every model serves a light load, the costs show where they should,
 * and under admission control every request ends once while the model switches.
 */
class MuTuneSimulationTest {

  private static MuTuneSimulation.Costs costs(int cores) {
    return new MuTuneSimulation.Costs(new ServiceTime(ServiceTime.Kind.CONST, 10_000), 3_000, 3_000, 2_000, 5_000,
        50_000, 750_000, 4, new ServiceTime(ServiceTime.Kind.EXP, 100_000), 64, 40_000, cores);
  }

  private static MuTuneSimulation.Run run(String model, double rps, int cores) {
    return new MuTuneSimulation(costs(cores), 1).run(List.of(new Scenario.DemandStep(rps, 0)), 100_000_000L,
        2_000_000_000L, ThreadingModel.parse(model), null);
  }

  @Test
  void everyModelServesALightLoad() {
    for (String m : List.of("IP", "IB", "DP4", "DB4", "DP16", "DB16")) {
      MuTuneSimulation.Run o = run(m, 500, 1);
      assertEquals(1000, o.completed(), 100, m + " completed " + o.completed());
    }
  }

  @Test
  void atLowLoadPollingInLineIsFastestAndDispatchBlockSlowest() {
    double ip = run("IP", 100, 1).p(50);
    double ib = run("IB", 100, 1).p(50);
    double db = run("DB4", 100, 1).p(50);
    assertTrue(ip < ib && ib < db, "p50 IP " + ip + ", IB " + ib + ", DB4 " + db);
  }

  @Test
  void inLineSaturatesWhereDispatchKeepsUp() {
    MuTuneSimulation.Run ib = run("IB", 8_000, 1);
    MuTuneSimulation.Run db = run("DB16", 8_000, 1);
    assertTrue(ib.p(99) > 10 * db.p(99), "p99 IB " + ib.p(99) + " vs DB16 " + db.p(99));
  }

  /** The real scheme called {@code name} for a 3.8 ms SLO, its server gates checked for leaks. */
  private static OverloadScheme checked(String name, List<LeakCheckingServerGate> gates) {
    return LeakCheckingServerGate.checking(
        SchemeRegistry.create(name, Scenario.of(Map.of("slo_us", "3800", "rtt_us", "40"))), gates::add);
  }

  /** In-line block below 3,000 rps, dispatch-block above: literal curves, not trained. */
  private static ThreadingAdaptation inlineThenDispatch() {
    ThreadingProfile.Builder b = ThreadingProfile.builder();
    for (double rps : new double[] {500, 1_000, 2_000, 3_000, 4_000, 8_000, 16_000, 32_000}) {
      b.add(ThreadingModel.parse("IB"), rps, rps < 3_000 ? 400_000 : 1e10);
      b.add(ThreadingModel.parse("DB16"), rps, 900_000);
    }
    return ThreadingAdaptation.of(b.build());
  }

  @Test
  void underAdmissionEveryRequestEndsOnceWhileTheModelSwitches() {
    for (String name : List.of("breakwater", "spillway")) {
      List<LeakCheckingServerGate> gates = new ArrayList<>();
      MuTuneSimulation sim = new MuTuneSimulation(costs(1), 7,
          new MuTuneSimulation.Admission(checked(name, gates), 200, 3_800_000));
      // light, then about twice what one core serves, light again, then silence to drain
      List<Scenario.DemandStep> schedule = List.of(new Scenario.DemandStep(1_000, 0),
          new Scenario.DemandStep(45_000, 300_000_000L), new Scenario.DemandStep(1_000, 600_000_000L),
          new Scenario.DemandStep(0, 900_000_000L));
      MuTuneSimulation.Run o = sim.run(schedule, 0, 1_200_000_000L, null, inlineThenDispatch());
      assertTrue(o.switches() >= 2, name + ": in-line, dispatch and back; switches " + o.switches());
      assertEquals(1, gates.size());
      gates.get(0).assertNoLeaks();
      assertEquals(o.admitted(), o.ended(), name);
      assertEquals(o.admitted(), gates.get(0).admitted(), name);
      assertTrue(o.rejected() + o.expired() > 1_000, name + ": the overload was turned away, " + o.rejected()
          + " refused, " + o.expired() + " expired");
      assertEquals(o.offered(), o.completed() + o.rejected() + o.expired(), name + ": every request ended once");
    }
  }

  @Test
  void theDefaultSchemeKeepsDispatchNearCapacityAtTwiceIt() {
    double capacity = 0;
    for (double load : new double[] {20_000, 23_000, 26_000}) {
      MuTuneSimulation.Run o = run("DB16", load, 1);
      capacity = Math.max(capacity, o.served() / o.seconds());
    }
    assertTrue(capacity > 20_000 && capacity < 26_000, "capacity " + capacity);
    MuTuneSimulation sim = new MuTuneSimulation(costs(1), 1,
        new MuTuneSimulation.Admission(checked("spillway", new ArrayList<>()), 1_000, 3_800_000));
    MuTuneSimulation.Run o = sim.run(List.of(new Scenario.DemandStep(2 * capacity, 0)), 100_000_000L,
        2_000_000_000L, ThreadingModel.parse("DB16"), null);
    assertTrue(o.good() / o.seconds() >= 0.9 * capacity, "goodput " + o.good() / o.seconds() + " of " + capacity);
    assertTrue(o.p(99) <= 3_800, "p99 " + o.p(99) + " us");
    // with no control the same demand leaves nothing within the SLO
    MuTuneSimulation.Run none = run("DB16", 2 * capacity, 1);
    assertTrue(none.p(50) > 100 * 3_800, "p50 with no control " + none.p(50) + " us");
  }
}
