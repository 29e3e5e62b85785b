package io.spillway.lucene;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Server;
import io.grpc.ServerBuilder;
import io.grpc.stub.StreamObserver;
import io.spillway.baselines.Seda;
import io.spillway.lucene.proto.SearchGrpc;
import io.spillway.lucene.proto.SearchReply;
import io.spillway.lucene.proto.SearchRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The load generator sends exactly the queries {@code --ghz-data} wrote for ghz. */
class LuceneLoadTest {

  @Test
  void readsBackWhatTheGhzDataFileHolds(@TempDir Path dir) throws Exception {
    List<String> queries = List.of("water", "\"a \\\"quoted\\\" phrase\"", "back\\\\slash",
        "ctl\u0001char", "pré*");
    Path file = dir.resolve("q.json");
    StringBuilder json = new StringBuilder("[\n");
    for (int i = 0; i < queries.size(); i++) {
      json.append("{\"query\":\"").append(LuceneMain.json(queries.get(i))).append("\",\"k\":10}")
          .append(i + 1 < queries.size() ? ",\n" : "\n");
    }
    Files.writeString(file, json.append("]\n"));
    List<SearchRequest> read = LuceneLoad.readRequests(file);
    assertEquals(queries, read.stream().map(SearchRequest::getQuery).toList());
    read.forEach(r -> assertEquals(10, r.getK()));
  }

  @Test
  void readsTheHeavyMixAsWritten(@TempDir Path dir) throws Exception {
    try (ShardedIndex index = Fixtures.index(io.spillway.api.Ticker.system());
        ShardedIndex.View view = index.acquire()) {
      QueryMix mix = QueryMix.heavy(view.reader(), index.corpus());
      SplittableRandom random = new SplittableRandom(Fixtures.seed());
      StringBuilder json = new StringBuilder("[\n");
      String[] sent = new String[500];
      for (int i = 0; i < sent.length; i++) {
        sent[i] = mix.next(random);
        json.append("{\"query\":\"").append(LuceneMain.json(sent[i])).append("\",\"k\":10},\n");
      }
      Path file = dir.resolve("heavy.json");
      Files.writeString(file, json.append("]\n"));
      assertEquals(List.of(sent), LuceneLoad.readRequests(file).stream()
          .map(SearchRequest::getQuery).toList());
    }
  }

  @Test
  void everyCountedCallIsAccountedForEvenWhenTheServerNeverAnswers() throws Exception {
    List<StreamObserver<SearchReply>> held = new CopyOnWriteArrayList<>();
    Server silent = ServerBuilder.forPort(0).addService(new SearchGrpc.SearchImplBase() {
      @Override
      public void search(SearchRequest request, StreamObserver<SearchReply> responses) {
        held.add(responses); // never answered
      }
    }).build().start();
    try (LuceneLoad load = new LuceneLoad(silent.getPort(), 1, null,
        List.of(SearchRequest.newBuilder().setQuery("water").setK(10).build()), 12_000_000)) {
      load.deadlineMillis = 0; // --deadline-ms 0: the calls carry no deadline
      LuceneLoad.Result r = load.openLoop(200, 0.2, Fixtures.seed());
      assertTrue(r.issued() > 0, r.line());
      assertEquals(r.issued(), r.ok() + r.serverRejects() + r.clientRejects() + r.deadlines()
          + r.errors(), "every call of the level ends in one of the counts: " + r.line());
      // the closed loop ends too, though its calls are never answered (the bound: a safety net)
      assertEquals(0.0, assertTimeoutPreemptively(Duration.ofSeconds(60),
          () -> load.closedLoop(2, 0.2)));
    } finally {
      silent.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  @Test
  void takesTheAwareClientsSchemeFromTheLabel() {
    assertEquals(LuceneServer.Protection.SPILLWAY, LuceneLoad.awareProtection(null));
    assertEquals(LuceneServer.Protection.SPILLWAY, LuceneLoad.awareProtection("spillway-aware"));
    assertEquals(LuceneServer.Protection.BREAKWATER, LuceneLoad.awareProtection("breakwater"));
    assertEquals(LuceneServer.Protection.PROTEGO, LuceneLoad.awareProtection("protego-12ms"));
    assertEquals(LuceneServer.Protection.SEDA, LuceneLoad.awareProtection("SEDA"));
    IllegalArgumentException unknown = assertThrows(IllegalArgumentException.class,
        () -> LuceneLoad.awareProtection("cancel-on"));
    assertTrue(unknown.getMessage().contains("spillway (default), protego, breakwater, seda, none"),
        unknown.getMessage());
    assertThrows(IllegalArgumentException.class, () -> LuceneLoad.awareProtection("none"));
    IllegalArgumentException noCapacity = assertThrows(IllegalArgumentException.class,
        () -> LuceneLoad.awareScheme(LuceneServer.Protection.SEDA, 12_000_000, 0, 8, null));
    assertTrue(noCapacity.getMessage().contains("--capacity"), noCapacity.getMessage());
    Seda swept = (Seda) LuceneLoad.awareScheme(LuceneServer.Protection.SEDA, 12_000_000, 4_000, 8,
        new double[] {100, 0.1, 1.3});
    assertEquals(100_000_000, swept.config().timeoutNanos());
    assertEquals(0.1, swept.config().adjI());
    assertEquals(1.3, swept.config().adjD());
  }

  /**
   * A level at which no call reached the server (the clients' gates refused all 30) has no drop
   * rate, and one that issued nothing no expired rate: results.json writes null (the report's dash),
   * not a 0 % that reads as measured, nor a bare NaN that is not JSON.
   */
  @Test
  void ratiosOverNothingAreWrittenAsNull() {
    LuceneLoad.Result refused = result(30, 0, 30);
    assertTrue(Double.isNaN(refused.dropRate()), "drop rate with nothing answered: "
        + refused.dropRate());
    String json = refused.json("spillway", 100, "single");
    assertTrue(json.contains("\"drop_rate\": null,"), json);
    assertTrue(json.contains("\"expired_rate\": 1.00000,"), json);
    String idle = result(0, 0, 0).json("spillway", 100, "single");
    assertTrue(idle.contains("\"drop_rate\": null,") && idle.contains("\"expired_rate\": null,"),
        idle);
    assertTrue(!json.contains("NaN") && !idle.contains("NaN"), json + "\n" + idle);
  }

  private static LuceneLoad.Result result(long issued, long ok, long clientRejects) {
    return new LuceneLoad.Result(100, 1, issued, ok, ok, 0, clientRejects, 0, 0,
        new org.HdrHistogram.Histogram(3), new org.HdrHistogram.Histogram(3),
        new long[io.spillway.api.Status.values().length], 12_000_000,
        new org.HdrHistogram.Histogram(3));
  }

  /**
   * A level run again replaces its row, where two rows for one scheme and demand would be a
   * report's error; other schemes' rows and other levels stay, and without a capacity (demand 0)
   * nothing is replaced.
   */
  @Test
  void aLevelRunAgainReplacesItsRecord(@TempDir Path dir) throws Exception {
    String a1 = "{\"scheme\": \"a\", \"mix\": \"m\", \"demand\": 1.0000, \"goodput_rps\": 1.0}";
    String b1 = "{\"scheme\": \"b\", \"mix\": \"m\", \"demand\": 1.0000, \"goodput_rps\": 2.0}";
    String a2 = "{\"scheme\": \"a\", \"mix\": \"m\", \"demand\": 2.0000, \"goodput_rps\": 3.0}";
    String a1Again = "{\"scheme\": \"a\", \"mix\": \"m\", \"demand\": 1.0000, \"goodput_rps\": 4.0}";
    for (String r : List.of(a1, b1, a2, a1Again)) {
      LuceneLoad.append(dir, r, 100, 1_000_000, "t");
    }
    assertEquals(List.of(b1, a2, a1Again), Files.readAllLines(dir.resolve("records.jsonl")));
    String z = "{\"scheme\": \"a\", \"mix\": \"m\", \"demand\": 0.0000, \"goodput_rps\": 5.0}";
    LuceneLoad.append(dir, z, 0, 1_000_000, "t");
    LuceneLoad.append(dir, z, 0, 1_000_000, "t");
    assertEquals(5, Files.readAllLines(dir.resolve("records.jsonl")).size());
  }
}
