package io.spillway.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Recovery after a surge in the simulated hotel graph ({@code scenarios/graph-hotel.conf}, 1,000
 * clients, warm-up at 0.8× then the level), read as the graph harness reads it on real sockets:
 * {@link RecoveryTime} on 100 ms windows (rajomon-nsdi25 §5.4, Fig. 6). Deterministic for the seed.
 */
class GraphRecoverySimulationTest {

  private static final Path HOTEL = Path.of("..", "scenarios", "graph-hotel.conf");

  private static GraphExperiment.Results run(Map<String, String> overrides) throws Exception {
    return new GraphExperiment(Scenario.load(HOTEL, overrides), 2).run();
  }

  @Test
  void rajomonRecoversFromASurgeToTwiceCapacityWithinASecondAndNoControlNever() throws Exception {
    GraphExperiment.Results r = run(Map.of("schemes", "none, rajomon", "demand", "0.8, 2"));
    assertEquals(8, r.rows().size(), "two schemes, two levels, two interfaces");
    for (GraphExperiment.Row row : r.rows()) {
      String what = row.scheme() + " " + row.iface() + " at " + row.demand() + "x";
      if (row.demand() <= GraphExperiment.NORMAL_LOAD) {
        assertTrue(Double.isNaN(row.recoveryMillis()), what + ": no surge, no recovery time");
      } else if (row.scheme().equals("rajomon")) {
        assertTrue(row.recoveryMillis() >= 0 && row.recoveryMillis() <= 1_000,
            what + " recovered in " + row.recoveryMillis() + " ms");
      } else {
        assertEquals(-1, row.recoveryMillis(), what + ": goodput collapses and stays there");
      }
    }
  }

  @Test
  void aScheduleReadsRecoveryFromEveryStepButTheFirst() throws Exception {
    GraphExperiment.Results r = run(Map.of("schemes", "rajomon", "schedule", "0.8@0, 2@500",
        "duration_ms", "1500"));
    List<GraphExperiment.Row> rows = r.rows();
    assertEquals(List.of(0.0, 0.0, 500.0, 500.0), rows.stream().map(GraphExperiment.Row::fromMillis).toList());
    for (GraphExperiment.Row row : rows) {
      if (row.fromMillis() == 0) {
        assertTrue(Double.isNaN(row.recoveryMillis()), row.iface() + ": the first phase has no step");
      } else {
        assertTrue(row.recoveryMillis() >= 0 && row.recoveryMillis() <= 1_000,
            row.iface() + " recovered in " + row.recoveryMillis() + " ms");
      }
    }
  }
}
