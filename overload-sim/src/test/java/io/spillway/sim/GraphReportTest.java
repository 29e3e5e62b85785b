package io.spillway.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.report.ReportWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a call-graph run writes, laid out as the socket graph harness lays it out: the graph's own
 * record in {@code graph.json}, and for each interface a {@code results.json} of one row per scheme
 * and level (or window) that {@code ./spillway report} renders. One file with a row per interface
 * repeats scheme and level, which the report refuses.
 */
class GraphReportTest {

  private static Scenario scenario(Map<String, String> extra) {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("clients", "200");
    m.put("rtt_us", "20");
    m.put("cost_rx_us", "1");
    m.put("cost_tx_us", "1");
    m.put("slo_us", "2000");
    m.put("window_ms", "10");
    m.put("warmup_ms", "50");
    m.put("duration_ms", "100");
    m.put("seed", "3");
    m.put("schemes", "none, dagor");
    m.put("graph.services", "front:2, mid, leafA, db");
    m.put("graph.interfaces", "q, r");
    m.put("graph.q", "front 20 -> mid, leafA; mid 30 -> db; leafA 10; db 40");
    m.put("graph.r", "front 10 -> db; db 40");
    m.put("graph.r.slo_us", "1500");
    m.putAll(extra);
    return Scenario.of(m);
  }

  @Test
  void eachInterfaceGetsAResultsFileTheReportRenders(@TempDir Path dir) throws Exception {
    GraphExperiment.Results results = new GraphExperiment(scenario(Map.of("demand", "0.8, 2")), 2)
        .run();
    GraphReport.write(results, dir);

    assertTrue(Files.readString(dir.resolve("graph.json")).contains("\"interface\": \"r\""));
    assertFalse(Files.exists(dir.resolve("results.json")), "no results.json the report refuses");
    for (String iface : List.of("q", "r")) {
      Path json = dir.resolve(iface).resolve("results.json");
      List<Path> written = ReportWriter.write(json, dir.resolve(iface));
      assertTrue(written.contains(dir.resolve(iface).resolve("report.md")), written.toString());
      String md = Files.readString(dir.resolve(iface).resolve("report.md"));
      assertTrue(md.contains("| dagor | 2.00 |"), md);
    }
    String r = Files.readString(dir.resolve("r").resolve("results.json"));
    assertTrue(r.contains("\"slo_us\": \"1500\""), "the interface's own SLO: " + r);

    // The interface's rows are the graph's rows: same arrivals, same counts.
    for (GraphExperiment.Row row : results.rows()) {
      Experiment.Results own = results.interfaces().stream()
          .filter(x -> x.scenario().name().endsWith("-" + row.iface())).findFirst().orElseThrow();
      ResultRecord same = own.rows().stream()
          .filter(x -> x.scheme().equals(row.scheme()) && x.demand() == row.demand())
          .findFirst().orElseThrow();
      assertEquals(row.offeredRps(), same.offeredRps(), 1e-9, row.toString());
      assertEquals(row.goodputRps(), same.goodputRps(), 1e-9, row.toString());
      assertEquals(row.p99Micros(), same.p99Micros(), 1e-9, row.toString());
      assertEquals(row.shedClient(), same.expiredRate(), 1e-9, row.toString());
      assertEquals(row.sloMicros(), same.sloMicros(), 1e-9, row.toString());
    }
  }

  /** As the isolation run: r steady throughout, q idle until it surges in at 100 ms. */
  @Test
  void aScheduleGivesEachInterfaceWindowsAndPhases(@TempDir Path dir) throws Exception {
    GraphExperiment.Results results = new GraphExperiment(scenario(Map.of("schedule",
        "0.8@0, 2@100", "duration_ms", "300", "graph.r.schedule", "0.8@0",
        "graph.q.schedule", "0@0, 2@100")), 2).run();
    GraphReport.write(results, dir);
    for (String iface : List.of("q", "r")) {
      Path json = dir.resolve(iface).resolve("results.json");
      ReportWriter.write(json, dir.resolve(iface));
      String md = Files.readString(dir.resolve(iface).resolve("report.md"));
      assertTrue(md.contains("## Results by phase of the demand schedule"), md);
      assertTrue(Files.exists(dir.resolve(iface).resolve("goodput-time.png")));
    }
    String q = Files.readString(dir.resolve("q").resolve("report.md"));
    assertTrue(q.contains("| dagor | 100–300 | 2.00 |"), q);
  }
}
