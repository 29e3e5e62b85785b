package io.spillway.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.threading.ThreadingModel;
import java.util.List;
import org.junit.jupiter.api.Test;

/** µTune's mid-tier in virtual time: every model serves a light load, and the costs show where they should. */
class MuTuneSimulationTest {

  private static MuTuneSimulation.Costs costs(int cores) {
    return new MuTuneSimulation.Costs(new ServiceTime(ServiceTime.Kind.CONST, 10_000), 3_000, 3_000, 2_000, 5_000,
        50_000, 750_000, 4, new ServiceTime(ServiceTime.Kind.EXP, 100_000), 64, 40_000, cores);
  }

  private static MuTuneSimulation.Outcome run(String model, double rps, int cores) {
    return new MuTuneSimulation(costs(cores), 1).run(List.of(new Scenario.DemandStep(rps, 0)), 100_000_000L,
        2_000_000_000L, ThreadingModel.parse(model), null);
  }

  @Test
  void everyModelServesALightLoad() {
    for (String m : List.of("IP", "IB", "DP4", "DB4", "DP16", "DB16")) {
      MuTuneSimulation.Outcome o = run(m, 500, 1);
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
    MuTuneSimulation.Outcome ib = run("IB", 8_000, 1);
    MuTuneSimulation.Outcome db = run("DB16", 8_000, 1);
    assertTrue(ib.p(99) > 10 * db.p(99), "p99 IB " + ib.p(99) + " vs DB16 " + db.p(99));
  }
}
