package io.spillway.sim;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A frontend's sessions with a backend lose 5 % of their answers to callers that gave up after
 * sending ({@code scenarios/lost-answers.conf}, Spillway's default scheme at 2×). With the stamped
 * window every transport sends (ResponseMetadata's class comment) the sessions keep the backend at
 * capacity; with deltas alone ({@code credit_stamps = false}, the protocol without stamps, a lost
 * answer ended as a failed one with no credit) each lost answer leaves a window off for good, the sessions' windows drift to nothing or past the server's
 * ledger, and most calls expire in their queues (docs/results/reliability.md, "Answers lost to
 * callers that gave up").
 */
class LostAnswersSimulationTest {

  private static final Path LOST = Path.of("..", "scenarios", "lost-answers.conf");

  private static ResultRecord run(boolean stamps) throws Exception {
    Experiment.Results r = new Experiment(Scenario.load(LOST, Map.of("schemes", "spillway",
        "demand", "2.0", "sweep", "", "lost_answers", "0.05", "credit_stamps", String.valueOf(stamps))),
        1).run();
    return r.rows().stream().filter(x -> x.scheme().equals("spillway")).findFirst().orElseThrow();
  }

  @Test
  void sessionsThatLoseAnswersKeepTheServerAtCapacityWithStampedWindows() throws Exception {
    ResultRecord stamped = run(true);
    ResultRecord deltas = run(false);
    double withStamps = stamped.goodputRps() / stamped.capacityRps();
    double withDeltas = deltas.goodputRps() / deltas.capacityRps();
    assertTrue(withStamps >= 0.95, "stamped windows: goodput " + withStamps + " of capacity");
    assertTrue(withDeltas < 0.6, "deltas alone: goodput " + withDeltas + " of capacity");
  }

  @Test
  void aShareOfLostAnswersOutsideZeroToOneIsRefusedByName() {
    for (String bad : new String[] {"1", "-0.1", "x"}) {
      Exception e = assertThrows(IllegalArgumentException.class,
          () -> Scenario.load(LOST, Map.of("lost_answers", bad)));
      assertTrue(e.getMessage().contains("lost_answers"), e.getMessage());
    }
  }
}
