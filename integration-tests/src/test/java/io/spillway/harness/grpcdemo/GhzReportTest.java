package io.spillway.harness.grpcdemo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.spillway.api.ResponseMetadata;
import io.spillway.api.Status;
import io.spillway.grpc.SpillwayMetadata;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * ghz's JSON report read the way the Spring demo counts its other generators: calls by their start
 * (ghz's timestamp is the end), inside the measured window only, refusals apart from errors.
 */
class GhzReportTest {

  private static final long SLO = TimeUnit.MILLISECONDS.toNanos(10);

  /**
   * A ghz report as {@code ghz -O json} writes it, in completion order. Starts (end − latency),
   * in seconds after 14:00:00 UTC: A 0 (the first call), G 0.9995, B 1.5, C 1.6, D 2.0, E 2.1,
   * F 2.2, X 2.5, H 3.0. B's end is written with a +01:00 offset.
   */
  private static final String REPORT = """
      {"date":"2026-11-29T14:00:04Z","endReason":"timeout",
       "options":{"call":"spillway.inventory.Inventory.Reserve","rps":100,"concurrency":50,
                  "data":{"sku":"{{.RequestNumber}}"}},
       "count":9,"total":3200000000,"rps":2.8,
       "errorDistribution":{"rpc error: code = DeadlineExceeded desc = context deadline exceeded":1},
       "statusCodeDistribution":{"OK":5,"ResourceExhausted":1,"Unavailable":1,"DeadlineExceeded":1},
       "latencyDistribution":[{"percentage":99,"latency":20000000}],
       "histogram":[{"mark":0.001,"count":3,"frequency":0.3}],
       "details":[
        {"timestamp":"2026-11-29T15:00:01.505+01:00","latency":5000000,"error":"","status":"OK"},
        {"timestamp":"2026-11-29T14:00:00.001Z","latency":1000000,"error":"","status":"OK"},
        {"timestamp":"2026-11-29T14:00:01.0005Z","latency":1000000,"error":"","status":"OK"},
        {"timestamp":"2026-11-29T14:00:01.62Z","latency":20000000,"error":"","status":"OK"},
        {"timestamp":"2026-11-29T14:00:02.0005Z","latency":500000,
         "error":"rpc error: code = ResourceExhausted desc = spillway: rejected (\\"limit\\")",
         "status":"ResourceExhausted"},
        {"timestamp":"2026-11-29T14:00:02.1003Z","latency":300000,
         "error":"rpc error: code = Unavailable desc = shedding","status":"Unavailable"},
        {"timestamp":"2026-11-29T14:00:02.502Z","latency":2000000,
         "error":"transport is closing","status":""},
        {"timestamp":"2026-11-29T14:00:03.001Z","latency":1000000,"error":"","status":"OK"},
        {"timestamp":"2026-11-29T14:00:03.2Z","latency":1000000000,
         "error":"rpc error: code = DeadlineExceeded desc = context deadline exceeded",
         "status":"DeadlineExceeded"}
       ]}
      """;

  private static InputStream json(String text) {
    return new ByteArrayInputStream(text.getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void countsTheCallsThatStartedInTheWindowByOutcome() throws IOException {
    // warm 1 s, measure 2 s: the window is [1, 3) s after A's start, so A, G (ended in the
    // window, started before it) and H (started at its end) are out
    GhzReport.Result r = GhzReport.read(json(REPORT), 1, 2, SLO, 0);

    assertEquals(6, r.started());
    assertEquals(2, r.ok());
    assertEquals(1, r.good(), "C took 20 ms, over the 10 ms SLO");
    assertEquals(2, r.rejects(), "ResourceExhausted and Unavailable");
    assertEquals(2, r.errors(), "the deadline and the call without a status");
    assertEquals(Map.of("OK", 2L, "ResourceExhausted", 1L, "Unavailable", 1L,
        "DeadlineExceeded", 1L, "error", 1L), r.byStatus());
    assertEquals("limit=1", r.byReason(), "the Unavailable refusal names no Spillway reason");
    assertEquals(2, r.okLatency().getTotalCount());
    assertEquals(20.0, r.okLatency().getValueAtPercentile(99) / 1e6, 0.05);
    assertEquals(5.0, r.okLatency().getValueAtPercentile(50) / 1e6, 0.01);
    assertEquals(2, r.rejectLatency().getTotalCount(), "the two refusals' latencies");
    assertEquals(3.0, r.startedRps(), 1e-9);
    assertEquals(0.5, r.goodputRps(), 1e-9);
  }

  @Test
  void aWindowFromTheFirstCallCountsTheWarmUpToo() throws IOException {
    GhzReport.Result r = GhzReport.read(json(REPORT), 0, 10, SLO, 0);

    assertEquals(9, r.started());
    assertEquals(5, r.ok());
    assertEquals(4, r.good(), "A, G, B and H within the SLO; C not");
  }

  @Test
  void measuresHowFarBehindItsRateGhzStartedCalls() throws IOException {
    // 10 calls a second is one every 100 ms from the first; the third started 50 ms late
    String late = """
        {"details":[
          {"timestamp":"2026-11-29T14:00:00.001Z","latency":1000000,"error":"","status":"OK"},
          {"timestamp":"2026-11-29T14:00:00.101Z","latency":1000000,"error":"","status":"OK"},
          {"timestamp":"2026-11-29T14:00:00.251Z","latency":1000000,"error":"","status":"OK"},
          {"timestamp":"2026-11-29T14:00:00.301Z","latency":1000000,"error":"","status":"OK"}
        ]}
        """;
    GhzReport.Result r = GhzReport.read(json(late), 0, 1, SLO, 10);

    assertEquals(TimeUnit.MILLISECONDS.toNanos(50), r.maxLagNanos());
    assertEquals(4.0, r.startedRps(), 1e-9);
    assertEquals(0, GhzReport.read(json(late), 0, 1, SLO, 0).maxLagNanos(), "no rate, no lag");
  }

  @Test
  void aRunWithNoCallCountsNothing() throws IOException {
    GhzReport.Result r = GhzReport.read(json("{\"count\":0,\"details\":null}"), 2, 8, SLO, 100);

    assertEquals(0, r.started());
    assertEquals(0, r.okLatency().getTotalCount());
  }

  @Test
  void aReportWithoutDetailsIsRefused() {
    // ghz's default summary format, or JSON from another tool, has no per-call details
    assertThrows(IOException.class,
        () -> GhzReport.read(json("{\"count\":3,\"rps\":1.0}"), 0, 1, SLO, 0));
    assertThrows(IOException.class,
        () -> GhzReport.read(json("Summary:\n  Count: 3\n"), 0, 1, SLO, 0));
  }

  @Test
  void readsSpillwaysReasonFromTheDescriptionAServerWrites() {
    for (Status st : Status.values()) {
      ResponseMetadata response = new ResponseMetadata().status(st);
      if (st == Status.REJECTED_LIMIT) {
        response.threshold(7); // "limit, threshold 7"
      }
      if (st == Status.REJECTED_PRICE) {
        response.price(12); // "price 12"
      }
      String error = "rpc error: code = ResourceExhausted desc = "
          + SpillwayMetadata.describeReject(response);
      assertEquals(st, GhzReport.reason(error), error);
    }
    assertNull(GhzReport.reason("rpc error: code = Unavailable desc = shedding"));
    assertNull(GhzReport.reason(""));
  }
}
