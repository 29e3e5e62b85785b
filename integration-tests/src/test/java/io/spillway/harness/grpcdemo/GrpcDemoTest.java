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
        "--set", "channels=2", "--set", "steady_max_s=3",
        "--set", "modes=spillway-plain, spillway-aware"});
    JsonNode results = new ObjectMapper().readTree(out.resolve("results.json").toFile());
    JsonNode records = results.path("records");
    assertEquals(2, records.size(), results.toString());
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
        7856.1, 5000, 0.0982, 4837.4, 1166, 0, 15_160, 6, "aqm=1407");
    JsonNode row = new ObjectMapper().readTree(record);
    assertEquals(1166.0 / 15_160, row.path("expired_rate").asDouble(), 1e-4, record);
    Files.writeString(out.resolve("results.json"), "{\"scenario\": {\"name\": \"grpc-demo\", "
        + "\"slo_us\": \"5000\"}, \"capacity_rps\": 3790, \"records\": [" + record + "]}");
    io.spillway.report.ReportWriter.write(out.resolve("results.json"), out);
    String report = Files.readString(out.resolve("report.md"));
    assertTrue(report.contains("| 9.82 | 4,837.4 | 7.69 |"), report);
  }

  @Test
  void anUnknownKeyIsRefusedWithTheKnownOnes() {
    IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(
        IllegalArgumentException.class, () -> GrpcDemoMain.main(new String[] {"--set", "lvels=2"}));
    assertTrue(e.getMessage().contains("levels"), e.getMessage());
  }
}
