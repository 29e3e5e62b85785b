package io.spillway.report;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A steady run at a single demand level (a parameter sweep point) still gets its charts. */
class SingleLevelTest {

  @Test
  void aSingleDemandLevelIsCharted(@TempDir Path dir) throws Exception {
    Path json = dir.resolve("results.json");
    Files.writeString(json, """
        {"scenario": {"name": "one", "slo_us": "200"}, "capacity_rps": 1000, "capacity_measured": true,
         "records": [
          {"scheme": "a", "clients": 1, "demand": 2.0, "capacity_rps": 1000, "goodput_rps": 900, "p99_us": 150, "drop_rate": 0.1},
          {"scheme": "b", "clients": 1, "demand": 2.0, "capacity_rps": 1000, "goodput_rps": 800, "p99_us": 250, "drop_rate": 0.2}
         ]}
        """);
    List<Path> written = ReportWriter.write(json, dir);
    assertTrue(written.stream().anyMatch(p -> p.getFileName().toString().equals("goodput-normalized.png")), written.toString());
    assertTrue(Files.size(dir.resolve("report.md")) > 0);
  }
}
