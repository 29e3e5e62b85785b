package io.spillway.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A ratio over a count of zero has no value: results.json writes it as null and the report shows a
 * dash, where a 0 would read as a measured 0 % (a scheme that dropped nothing).
 */
class ResultRecordTest {

  private static final Scenario SCENARIO = Scenario.of(Map.of("clients", "10", "slo_us", "1000"));

  /** Every request expired in its client's queue: the server received none, so dropped none of none. */
  private static Tally nothingReceived() {
    Tally t = new Tally();
    t.offered = 40;
    t.expired = 40;
    return t;
  }

  @Test
  void aDropRateOverNothingReceivedHasNoValue() {
    ResultRecord r = ResultRecord.of("starved", SCENARIO, 2.0, 1000, nothingReceived(),
        1_000_000_000L, -1, 0);
    assertTrue(Double.isNaN(r.dropRate()), "drop rate with nothing received: " + r.dropRate());
    assertEquals(1.0, r.expiredRate(), "every request offered expired");
  }

  @Test
  void ratiosOfRequestsIssuedHaveNoValueWhenNoneWere() {
    ResultRecord r = ResultRecord.of("idle", SCENARIO, 0, 1000, new Tally(), 20_000_000L, 0, 20);
    assertTrue(Double.isNaN(r.dropRate()), "drop rate " + r.dropRate());
    assertTrue(Double.isNaN(r.expiredRate()), "expired rate " + r.expiredRate());
    assertTrue(Double.isNaN(r.messagesPerRequest()), "messages per request " + r.messagesPerRequest());
    assertTrue(Double.isNaN(r.retryRate()), "retry rate " + r.retryRate());
    assertEquals(0, r.goodputRps(), "no goodput is a measured 0 rps");
  }

  @Test
  void resultsJsonWritesNullAndTheReportADash(@TempDir Path dir) throws Exception {
    Tally served = new Tally();
    served.offered = 100;
    served.sent = 100;
    served.received = 100;
    served.dropped = 10;
    served.completed = 90;
    served.good = 90;
    served.latency.recordValue(500_000);
    List<ResultRecord> rows = List.of(
        ResultRecord.of("served", SCENARIO, 2.0, 1000, served, 1_000_000_000L, -1, 0),
        ResultRecord.of("starved", SCENARIO, 2.0, 1000, nothingReceived(), 1_000_000_000L, -1, 0));
    Report.write(new Experiment.Results(SCENARIO, 1000, false, rows, List.of()), dir);

    String json = Files.readString(dir.resolve("results.json"));
    String starved = json.lines().filter(l -> l.contains("\"starved\"")).findFirst().orElseThrow();
    assertTrue(starved.contains("\"drop_rate\": null"), starved);
    assertFalse(starved.contains("\"drop_rate\": 0"), starved);
    String md = Files.readString(dir.resolve("report.md"));
    assertEquals("10.00", dropCell(md, "served"), md);
    assertEquals("–", dropCell(md, "starved"), md);
  }

  /** The drop (%) cell of {@code scheme}'s row in report.md's steady table. */
  private static String dropCell(String md, String scheme) {
    String row = md.lines().filter(l -> l.startsWith("| " + scheme + " |")).findFirst()
        .orElseThrow(() -> new AssertionError("no row for " + scheme + " in\n" + md));
    // scheme, demand, offered, throughput, goodput, goodput ÷ cap, p50, p99, drop (%), ...
    return row.split("\\|")[9].strip();
  }
}
