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
      assertTrue(r.path("goodput_rps").asDouble() > 0, "a half-loaded server serves: " + r);
    }
    assertTrue(Files.exists(out.resolve("report.md")));
    assertTrue(Files.exists(out.resolve("goodput.png")));
  }

  @Test
  void anUnknownKeyIsRefusedWithTheKnownOnes() {
    IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(
        IllegalArgumentException.class, () -> GrpcDemoMain.main(new String[] {"--set", "lvels=2"}));
    assertTrue(e.getMessage().contains("levels"), e.getMessage());
  }
}
