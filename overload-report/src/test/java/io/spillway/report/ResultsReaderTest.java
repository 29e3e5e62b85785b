package io.spillway.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ResultsReaderTest {

  @TempDir Path dir;

  @Test
  void readsSteadyRuns() throws Exception {
    Results r = ResultsReader.read(Fixtures.results(Fixtures.STEADY, dir));

    assertEquals("breakwater-synthetic", r.name("x"));
    assertEquals(851248, r.capacityRps());
    assertTrue(r.capacityMeasured());
    assertEquals(200, r.sloMicros());
    assertEquals("1000", r.scenario().get("clients"));
    assertEquals(24, r.records().size());
    assertEquals(24, r.steadyRows().size());
    assertTrue(r.windowRows().isEmpty());
    assertTrue(r.convergence().isEmpty());
    assertEquals(List.of("none", "breakwater", "breakwater-credit", "breakwater-credit-spec"),
        r.schemes());

    Results.Row first = r.records().get(0);
    assertEquals("none", first.scheme());
    assertEquals(1000, first.clients());
    assertEquals(0.5, first.demand());
    assertEquals(425067, first.offeredRps());
    assertEquals(425069, first.goodputRps());
    assertEquals(57.727, first.p99Micros());
    assertEquals(2.0, first.messagesPerRequest());
    assertFalse(first.isWindow());
    assertTrue(Double.isNaN(first.windowStartMillis()));
  }

  @Test
  void readsTimeSeriesAndConvergence() throws Exception {
    Results r = ResultsReader.read(Fixtures.results(Fixtures.SPIKE, dir));

    assertEquals(140, r.windowRows().size());
    assertTrue(r.steadyRows().isEmpty());
    Results.Row w = r.windowRows().get(0);
    assertTrue(w.isWindow());
    assertEquals(900, w.windowStartMillis());
    assertEquals(20, w.windowMillis());

    assertEquals(8, r.convergence().size());
    Results.Convergence never = r.convergence().get(3);
    assertEquals("none", never.scheme());
    assertEquals(0.9, never.fromDemand());
    assertEquals(0.5, never.toDemand());
    assertEquals(4000, never.stepMillis());
    assertEquals(328598, never.convergedGoodputRps());
    assertEquals(-1, never.convergenceMillis());
  }

  @Test
  void ignoresUnknownFieldsAndToleratesMissingOptionalOnes() throws Exception {
    String json = """
        {"scenario": {"name": "harness", "clients": 64, "slo_us": 250, "nested": {"a": 1}},
         "harness_version": "0.2", "capacity_rps": 5000, "capacity_measured": false,
         "records": [
           {"scheme": "none", "demand": 1.5, "goodput_rps": 4200, "p99_us": NaN,
            "cpu_util": 0.97, "per_core": [1, 2]}
         ],
         "convergence": [{"scheme": "none", "to_demand": 2, "note": "x"}],
         "extra": {"deep": [1, {"x": null}]}}
        """;
    Results r = ResultsReader.read(Fixtures.results(dir, json));

    assertEquals("64", r.scenario().get("clients"));
    assertEquals("{\"a\":1}", r.scenario().get("nested"));
    assertEquals(250, r.sloMicros());
    assertFalse(r.capacityMeasured());
    Results.Row row = r.records().get(0);
    assertEquals(4200, row.goodputRps());
    assertEquals(0, row.clients());
    assertTrue(Double.isNaN(row.p99Micros()), "NaN literal reads as NaN");
    assertTrue(Double.isNaN(row.offeredRps()), "absent optional number reads as NaN");
    assertTrue(Double.isNaN(r.convergence().get(0).fromDemand()));
    assertEquals(2, r.convergence().get(0).toDemand());
  }

  @Test
  void negativeWindowStartMeansSteady() throws Exception {
    String json = "{\"records\": ["
        + Fixtures.record("a", 1, 900, 50, ", \"t_ms\": -1, \"window_ms\": 0") + ", "
        + Fixtures.record("a", 1, 900, 50, ", \"t_ms\": 0, \"window_ms\": 20") + ", "
        + Fixtures.record("a", 1, 900, 50, ", \"t_ms\": 20") + "]}";
    Results r = ResultsReader.read(Fixtures.results(dir, json));

    assertEquals(1, r.steadyRows().size());
    assertEquals(2, r.windowRows().size());
  }

  @Test
  void missingFileNamesTheFile() {
    Path missing = dir.resolve("nowhere/results.json");
    NoSuchFileException e = assertThrows(NoSuchFileException.class,
        () -> ResultsReader.read(missing));
    assertTrue(e.getMessage().contains(missing.toString()), e.getMessage());
    assertTrue(e.getMessage().contains("not found"), e.getMessage());
  }

  @Test
  void directoryInsteadOfFileIsNamed() {
    NoSuchFileException e = assertThrows(NoSuchFileException.class,
        () -> ResultsReader.read(dir));
    assertTrue(e.getMessage().contains(dir.toString()), e.getMessage());
    assertTrue(e.getMessage().contains("directory"), e.getMessage());
  }

  @Test
  void malformedJsonNamesFileAndLine() {
    Path file = Fixtures.results(dir, "{\n  \"records\": [\n    {\"scheme\": \"none\",,}\n");
    MalformedResultsException e = assertThrows(MalformedResultsException.class,
        () -> ResultsReader.read(file));
    assertEquals(file, e.file());
    assertTrue(e.getMessage().startsWith("malformed results file " + file + ": "),
        e.getMessage());
    assertTrue(e.getMessage().contains("line 3"), e.getMessage());
  }

  @Test
  void truncatedJsonIsMalformed() {
    Path file = Fixtures.results(dir, "{\"records\": [");
    MalformedResultsException e = assertThrows(MalformedResultsException.class,
        () -> ResultsReader.read(file));
    assertTrue(e.getMessage().contains(file.toString()), e.getMessage());
  }

  @Test
  void emptyFileIsMalformed() {
    Path file = Fixtures.results(dir, "");
    MalformedResultsException e = assertThrows(MalformedResultsException.class,
        () -> ResultsReader.read(file));
    assertTrue(e.getMessage().contains(file.toString()), e.getMessage());
  }

  @Test
  void missingRequiredFieldNamesItsPath() {
    String json = "{\"records\": [" + Fixtures.record("none", 1, 900, 50, "")
        + ", {\"demand\": 1.0, \"goodput_rps\": 3}]}";
    Path file = Fixtures.results(dir, json);
    MalformedResultsException e = assertThrows(MalformedResultsException.class,
        () -> ResultsReader.read(file));
    assertTrue(e.getMessage().contains("scheme"), e.getMessage());
    assertTrue(e.getMessage().contains("records[1]"), e.getMessage());
  }

  @Test
  void wrongTypeNamesItsPath() {
    String json = "{\"records\": [{\"scheme\": \"none\", \"demand\": \"high\", "
        + "\"goodput_rps\": 3}]}";
    Path file = Fixtures.results(dir, json);
    MalformedResultsException e = assertThrows(MalformedResultsException.class,
        () -> ResultsReader.read(file));
    assertTrue(e.getMessage().contains("records[0].demand"), e.getMessage());
  }

  @Test
  void missingRecordsIsMalformed() {
    Path file = Fixtures.results(dir, "{\"scenario\": {\"name\": \"x\"}}");
    MalformedResultsException e = assertThrows(MalformedResultsException.class,
        () -> ResultsReader.read(file));
    assertTrue(e.getMessage().contains("records"), e.getMessage());
  }

  @Test
  void emptyRecordsIsMalformed() {
    Path file = Fixtures.results(dir, "{\"records\": []}");
    MalformedResultsException e = assertThrows(MalformedResultsException.class,
        () -> ResultsReader.read(file));
    assertTrue(e.getMessage().contains("\"records\" is empty"), e.getMessage());
  }
  @Test
  void repeatedSchemeAndDemandIsMalformedNotMerged() {
    // A call-graph run writes one record per scheme, interface and demand; read here, the two
    // interfaces' rows would join into one zigzag series and two unlabelled table rows.
    String search = ", \"interface\": \"search\"";
    String json = "{\"records\": [" + Fixtures.record("none", 0.8, 900, 50, search) + ", "
        + Fixtures.record("none", 2, 100, 500, search) + ", "
        + Fixtures.record("none", 0.8, 700, 60, ", \"interface\": \"reserve\"") + "]}";
    Path file = Fixtures.results(dir, json);
    MalformedResultsException e = assertThrows(MalformedResultsException.class,
        () -> ResultsReader.read(file));
    assertTrue(e.getMessage().contains(file.toString()), e.getMessage());
    assertTrue(e.getMessage().contains("records[2] repeats records[0]"), e.getMessage());
    assertTrue(e.getMessage().contains("scheme \"none\", demand 0.8"), e.getMessage());
  }

  @Test
  void repeatedWindowIsMalformed() {
    String at0 = ", \"t_ms\": 0, \"window_ms\": 20";
    String at20 = ", \"t_ms\": 20, \"window_ms\": 20";
    String json = "{\"records\": [" + Fixtures.record("a", 1, 900, 50, at0) + ", "
        + Fixtures.record("a", 1, 900, 50, at20) + ", " + Fixtures.record("b", 1, 900, 50, at20)
        + ", " + Fixtures.record("a", 1, 800, 50, at20) + "]}";
    Path file = Fixtures.results(dir, json);
    MalformedResultsException e = assertThrows(MalformedResultsException.class,
        () -> ResultsReader.read(file));
    assertTrue(e.getMessage().contains("records[3] repeats records[1]: scheme \"a\", t_ms 20"),
        e.getMessage());
  }

  @Test
  void nonFiniteRequiredNumbersAreMalformed() {
    for (String[] c : new String[][] {
        {"\"demand\": 1.0", "\"demand\": NaN", "demand"},
        {"\"demand\": 1.0", "\"demand\": Infinity", "demand"},
        {"\"goodput_rps\": 900.0", "\"goodput_rps\": NaN", "goodput_rps"},
        {"\"goodput_rps\": 900.0", "\"goodput_rps\": -Infinity", "goodput_rps"}}) {
      String row = Fixtures.record("a", 1, 900, 50, "");
      assertTrue(row.contains(c[0]), row);
      Path file = Fixtures.results(dir, "{\"records\": [" + Fixtures.record("a", 0.5, 900, 50, "")
          + ", " + row.replace(c[0], c[1]) + "]}");
      MalformedResultsException e = assertThrows(MalformedResultsException.class,
          () -> ResultsReader.read(file), c[1]);
      assertTrue(e.getMessage().contains("\"" + c[2] + "\" is "), e.getMessage());
      assertTrue(e.getMessage().contains("records[1]"), e.getMessage());
    }
  }

  @Test
  void nonFiniteWindowStartIsMalformedNotSteady() {
    Path file = Fixtures.results(dir, "{\"records\": ["
        + Fixtures.record("a", 1, 900, 50, ", \"t_ms\": 0, \"window_ms\": 20") + ", "
        + Fixtures.record("a", 1, 900, 50, ", \"t_ms\": NaN, \"window_ms\": 20") + "]}");
    MalformedResultsException e = assertThrows(MalformedResultsException.class,
        () -> ResultsReader.read(file));
    assertTrue(e.getMessage().contains("\"t_ms\" is NaN"), e.getMessage());
    assertTrue(e.getMessage().contains("records[1]"), e.getMessage());
  }

  @Test
  void nullDemandNamesThatFieldOnly() {
    Path file = Fixtures.results(dir, "{\"records\": ["
        + Fixtures.record("a", 1, 900, 50, "").replace("\"demand\": 1.0", "\"demand\": null")
        + "]}");
    MalformedResultsException e = assertThrows(MalformedResultsException.class,
        () -> ResultsReader.read(file));
    assertTrue(e.getMessage().contains("\"demand\" is null"), e.getMessage());
    assertFalse(e.getMessage().contains("goodput_rps"), e.getMessage());
  }

  @Test
  void nullEntriesAreMalformedNotSkipped() {
    Path file = Fixtures.results(dir, "{\"records\": [" + Fixtures.record("a", 1, 900, 50, "")
        + ", null]}");
    MalformedResultsException e = assertThrows(MalformedResultsException.class,
        () -> ResultsReader.read(file));
    assertTrue(e.getMessage().contains("records[1] is null"), e.getMessage());

    Path conv = Fixtures.results(dir, "{\"records\": [" + Fixtures.record("a", 1, 900, 50, "")
        + "], \"convergence\": [null]}");
    e = assertThrows(MalformedResultsException.class, () -> ResultsReader.read(conv));
    assertTrue(e.getMessage().contains("convergence[0] is null"), e.getMessage());
  }

  @Test
  void convergenceRowWithoutSchemeIsMalformed() {
    Path file = Fixtures.results(dir, "{\"records\": [" + Fixtures.record("a", 1, 900, 50, "")
        + "], \"convergence\": [{\"scheme\": null, \"to_demand\": 2}]}");
    MalformedResultsException e = assertThrows(MalformedResultsException.class,
        () -> ResultsReader.read(file));
    assertTrue(e.getMessage().contains("\"scheme\""), e.getMessage());
    assertTrue(e.getMessage().contains("convergence[0]"), e.getMessage());
  }
}
