package io.spillway.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Ten cores send their answers from queues of their own ({@code scenarios/kv-var.conf}: 1,000
 * sessions, 378 ns of service, Breakwater at 1×), so one session's answers can reach it in another
 * order than the server computed their credit deltas in. Each client's window must still come back
 * to the server's ledger, so no well-behaved session is ever refused for credit, and at 1× nothing
 * else refuses (the 88 µs AQM threshold is not reached). With the client's window clamped at zero
 * a revocation read before the grant it followed was lost in part, a session held 2 credits
 * against the server's 1, and 3.7 × 10⁻⁵ of the requests at 1× were refused for credit
 * (docs/results/reliability.md, "Credit windows at the server").
 */
class ReorderedAnswersSimulationTest {

  private static final Path KV_VAR = Path.of("..", "scenarios", "kv-var.conf");

  @Test
  void answersOutOfOrderCostNoWellBehavedSessionACredit() throws Exception {
    Experiment.Results r = new Experiment(Scenario.load(KV_VAR, Map.of("schemes", "breakwater",
        "demand", "1.0")), 1).run();
    ResultRecord row = r.rows().stream().filter(x -> x.scheme().equals("breakwater")).findFirst()
        .orElseThrow();
    assertEquals(0.0, row.dropRate(), "requests refused at the server: goodput " + row.goodputRps()
        + " of capacity " + row.capacityRps());
  }
}
