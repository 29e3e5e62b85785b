package io.spillway.harness.grpcdemo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The gRPC demo end to end at a small scale: server processes started as the harness starts them,
 * plain and Spillway-aware clients, results.json and the report written. Accounting only; the
 * demo's figures are in docs/results/grpc.md.
 */
class GrpcDemoTest {

  @Test
  void runsEveryJavaModeAndWritesTheReport(@TempDir Path out) throws Exception {
    GrpcDemoMain.main(new String[] {"--out", out.toString(), "--set", "capacity=400",
        "--set", "levels=0.5", "--set", "warm_s=0.2", "--set", "measure_s=0.5",
        "--set", "channels=2", "--set", "steady_max_s=3", "--set", "repeats=2",
        "--set", "modes=spillway-plain, spillway-aware"});
    JsonNode results = new ObjectMapper().readTree(out.resolve("results.json").toFile());
    JsonNode records = results.path("records");
    assertEquals(2, records.size(), "one median run per mode and level: " + results);
    java.util.List<String> runs = Files.readAllLines(out.resolve("runs.jsonl"));
    assertEquals(4, runs.size(), "every run of both modes: " + runs);
    java.util.List<Integer> order = new java.util.ArrayList<>();
    for (String line : runs) {
      order.add(new ObjectMapper().readTree(line).path("run").asInt());
    }
    assertEquals(java.util.List.of(1, 1, 2, 2), order, "the modes in turn");
    assertTrue(Files.exists(out.resolve("server-spillway-aware-run2.log")));
    assertTrue(Files.readString(out.resolve("table.txt")).contains("median run of 2"));
    for (JsonNode r : records) {
      assertEquals(0, r.path("errors").asLong(), r.toString());
      assertTrue(r.path("issued").asLong() > 0, r.toString());
      // Three first slices, then steady_max_s = 3 slices (steady needs three: it stops at three
      // either way).
      assertEquals(6, r.path("warm_slices").asInt(), "warmed until steady: " + r);
      // Responses, not goodput: whether they land within the SLO depends on what else the
      // machine runs, and this test counts, it does not time.
      assertTrue(r.path("throughput_rps").asDouble() > 0, "a half-loaded server answers: " + r);
    }
    assertTrue(Files.exists(out.resolve("report.md")));
    assertTrue(Files.exists(out.resolve("goodput.png")));
  }

  /**
   * What aware clients shed in their own queues reaches results.json and the report's "expired"
   * column: 1,166 of 15,160 calls issued ended in the client, 7.69 %, printed beside the 9.82 %
   * the server dropped instead of a dash.
   */
  @Test
  void callsEndedInTheClientFillTheExpiredColumn(@TempDir Path out) throws Exception {
    String record = GrpcDemoMain.record("spillway-aware", 1, 3790, 3790, 3230, 2978, 2281.5,
        7856.1, 5000, 0.0982, 1210.3, 4837.4, 1166, 0, 15_160, 6, "aqm=1407");
    JsonNode row = new ObjectMapper().readTree(record);
    assertEquals(1166.0 / 15_160, row.path("expired_rate").asDouble(), 1e-4, record);
    // the report's reject delay column is the mean, as in the harness's records; the p99 beside it
    assertEquals(1210.3, row.path("reject_delay_us").asDouble(), 1e-9, record);
    assertEquals(4837.4, row.path("reject_delay_p99_us").asDouble(), 1e-9, record);
    Files.writeString(out.resolve("results.json"), "{\"scenario\": {\"name\": \"grpc-demo\", "
        + "\"slo_us\": \"5000\"}, \"capacity_rps\": 3790, \"records\": [" + record + "]}");
    io.spillway.report.ReportWriter.write(out.resolve("results.json"), out);
    String report = Files.readString(out.resolve("report.md"));
    assertTrue(report.contains("| 9.82 | 1,210.3 | 7.69 |"), report);
  }

  /**
   * A run in which no call reached the server (the clients' gates refused all 50) has no drop
   * rate, and one that issued nothing no expired rate: null in results.json (strict JSON, no bare
   * NaN) and a dash in the report, not a 0 % that reads as measured.
   */
  @Test
  void ratiosOverNothingAreNullAndShownAsADash(@TempDir Path out) throws Exception {
    DemoLoad.Result refused = new DemoLoad.Result(100, 50, 0, 0, 0, 50, 0, 0.5,
        new org.HdrHistogram.Histogram(3), new org.HdrHistogram.Histogram(3), "");
    assertTrue(Double.isNaN(refused.dropRate()), "drop rate with nothing received: "
        + refused.dropRate());
    String record = GrpcDemoMain.record("spillway-aware", 3, 100, 100, 0, 0, 0, 0, 5000,
        refused.dropRate(), 0, 0, 50, 0, 50, 6, "");
    JsonNode row = new ObjectMapper().readTree(record);
    assertTrue(row.get("drop_rate").isNull(), record);
    assertEquals(1.0, row.path("expired_rate").asDouble(), 1e-9, record);
    String idle = GrpcDemoMain.record("none", 0.5, 100, 0, 0, 0, 0, 0, 5000, Double.NaN, 0, 0, 0,
        0, 0, 6, "");
    assertTrue(new ObjectMapper().readTree(idle).get("expired_rate").isNull(), idle);
    Files.writeString(out.resolve("results.json"), "{\"scenario\": {\"name\": \"grpc-demo\", "
        + "\"slo_us\": \"5000\"}, \"capacity_rps\": 100, \"records\": [" + record + ", " + idle
        + "]}");
    io.spillway.report.ReportWriter.write(out.resolve("results.json"), out);
    String report = Files.readString(out.resolve("report.md"));
    // drop, reject delay, expired, messages per request
    assertTrue(report.contains("| – | – | 100.00 | – |"), report);
    assertTrue(report.contains("| – | – | – | – |"), report);
  }

  @Test
  void theMedianRunOfEachModeAndLevelIsKept() {
    java.util.List<GrpcDemoMain.RunRow> rows = java.util.List.of(
        new GrpcDemoMain.RunRow("a", 1, 1, 800, 4_000, "a1"),
        new GrpcDemoMain.RunRow("b", 1, 1, 500, 9_000, "b1"),
        new GrpcDemoMain.RunRow("a", 1, 2, 1_000, 3_000, "a2"),
        new GrpcDemoMain.RunRow("b", 1, 2, 700, 8_000, "b2"),
        new GrpcDemoMain.RunRow("a", 1, 3, 900, 5_000, "a3"));
    assertEquals(java.util.List.of("a3", "b1"),
        GrpcDemoMain.medians(rows).stream().map(GrpcDemoMain.RunRow::json).toList(),
        "a: 800, 900, 1,000 keeps 900; b: 500, 700 keeps the lower middle");
    assertEquals("a                  1.0x  median 0.900 (run 3)  range 0.800–1.000  p99 3000–5000 us"
        + "  3 runs", GrpcDemoMain.spread(rows, 1_000).get(0));
  }

  @Test
  void rowsAboveTheCapacityReadingBeyondItsSpreadAreNamed() {
    // capacity 1,000 rps read with a 5 % spread: 1,040 is within its noise, 1,086 is not
    io.spillway.harness.SteadyCapacity.Reading reading =
        new io.spillway.harness.SteadyCapacity.Reading(1_000, 0.05, 6, true);
    java.util.List<GrpcDemoMain.RunRow> rows = java.util.List.of(
        new GrpcDemoMain.RunRow("spillway-aware", 2, 1, 1_086, 4_000, ""),
        new GrpcDemoMain.RunRow("spillway-aware", 3, 1, 1_040, 4_000, ""),
        new GrpcDemoMain.RunRow("spillway-plain", 2, 2, 940, 5_000, ""),
        new GrpcDemoMain.RunRow("replicas", 2, 1, 2_400, 9_000, ""));
    assertEquals(java.util.List.of("spillway-aware 2.0x run 1 (+8.6 %)"),
        GrpcDemoMain.overCapacity(rows, reading),
        "the replica row is divided by its own capacity and not judged against this one");
  }

  @Test
  void anUnknownKeyIsRefusedWithTheKnownOnes() {
    IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(
        IllegalArgumentException.class, () -> GrpcDemoMain.main(new String[] {"--set", "lvels=2"}));
    assertTrue(e.getMessage().contains("levels"), e.getMessage());
  }
}
