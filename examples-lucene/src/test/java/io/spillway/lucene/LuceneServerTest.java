package io.spillway.lucene;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Channel;
import io.grpc.ClientInterceptors;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.spillway.api.OverloadScheme;
import io.spillway.baselines.Seda;
import io.spillway.baselines.SedaConfig;
import io.spillway.credit.Breakwater;
import io.spillway.credit.BreakwaterConfig;
import io.spillway.credit.Protego;
import io.spillway.credit.ProtegoConfig;
import io.spillway.grpc.SpillwayClientInterceptor;
import io.spillway.grpc.SpillwayGrpc;
import io.spillway.lucene.proto.SearchGrpc;
import io.spillway.lucene.proto.SearchReply;
import io.spillway.lucene.proto.SearchRequest;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The server as {@code ./spillway lucene} runs it, on a real socket, with every protection. */
class LuceneServerTest {

  private static SearchReply search(int port, String query, int k) throws InterruptedException {
    ManagedChannel channel = ManagedChannelBuilder.forAddress("127.0.0.1", port).usePlaintext()
        .build();
    try {
      return SearchGrpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS)
          .search(SearchRequest.newBuilder().setQuery(query).setK(k).build());
    } finally {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  private static SearchReply search(Channel channel, String query, int k) {
    return SearchGrpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS)
        .search(SearchRequest.newBuilder().setQuery(query).setK(k).build());
  }

  private static LuceneServer start(LuceneServer.Protection p) throws Exception {
    return LuceneServer.builder().port(0).protection(p).docs(Fixtures.DOCS).warmup(50)
        .updatesPerSecond(400).target(TARGET).build().start();
  }

  private static final Duration TARGET = Duration.ofMillis(40);

  @Test
  void servesOverASocketWithEveryProtectionWhileUpdatesRun() throws Exception {
    for (LuceneServer.Protection p : LuceneServer.Protection.values()) {
      try (LuceneServer server = start(p)) {
        assertTrue(server.describeIndex().startsWith("indexed 2,000 documents into 4 shards"),
            server.describeIndex());
        assertTrue(server.describeIndex().contains("scheme " + p.name().toLowerCase(Locale.ROOT)),
            server.describeIndex());
        SearchReply reply = search(server.port(), "water", 5);
        assertEquals(5, reply.getHitsCount(), p.toString());
        StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
            () -> search(server.port(), "water", 0));
        assertEquals(Status.Code.INVALID_ARGUMENT, e.getStatus().getCode(), p + ": " + e);
        e = assertThrows(StatusRuntimeException.class, () -> search(server.port(), "", 5));
        assertEquals(Status.Code.INVALID_ARGUMENT, e.getStatus().getCode(), p + ": " + e);
      }
    }
  }

  @Test
  void aServerThatCannotBindLeavesNoThreadsBehind() throws Exception {
    try (ServerSocket taken = new ServerSocket(0)) {
      for (LuceneServer.Protection p : List.of(LuceneServer.Protection.SPILLWAY,
          LuceneServer.Protection.PROTEGO)) {
        Set<Thread> before = Thread.getAllStackTraces().keySet();
        LuceneServer server = LuceneServer.builder().port(taken.getLocalPort()).protection(p)
            .docs(Fixtures.DOCS).warmup(0).updatesPerSecond(0).threads(2).build();
        assertThrows(IOException.class, server::start, p.toString());
        List<String> left = Thread.getAllStackTraces().keySet().stream()
            .filter(t -> !before.contains(t) && t.getName().startsWith("spillway-"))
            .filter(t -> !t.getName().equals("spillway-grpc-timer")) // one per process, shared
            .map(Thread::getName).sorted().toList();
        assertEquals(List.of(), left, p + ": threads of the server that never started");
      }
    }
  }

  @Test
  void closingTwiceIsHarmless() throws Exception {
    LuceneServer server = LuceneServer.builder().port(0).docs(200).warmup(0).updatesPerSecond(400)
        .build().start();
    server.close();
    assertDoesNotThrow(server::close);
  }

  /** An error no one catches: the kind a scheduled executor swallows, cancelling the task. */
  private static final class InjectedError extends Error {
    private static final long serialVersionUID = 1L;

    InjectedError() {
      super("injected", null, false, false);
    }
  }

  private static LuceneServer startUpdating(Runnable batch) throws IOException {
    // four documents a second over four shards: a batch every 250 ms
    return LuceneServer.builder().port(0).docs(200).shards(4).warmup(0).updatesPerSecond(4)
        .updateBatch(batch).protection(LuceneServer.Protection.NONE).build().start();
  }

  @Test
  void anUpdateBatchThatThrowsAnErrorFailsTheServerInsteadOfStoppingUpdatesSilently()
      throws Exception {
    InjectedError error = new InjectedError();
    AtomicInteger runs = new AtomicInteger();
    try (LuceneServer server = startUpdating(() -> {
      runs.incrementAndGet();
      throw error;
    })) {
      assertSame(error, server.failure().toCompletableFuture().get(10, TimeUnit.SECONDS));
      assertEquals(1, server.updateFailures());
      assertEquals(1, runs.get()); // the stream stopped at the error
      assertEquals(3, search(server.port(), "*:*", 3).getHitsCount()); // still answers
    }
  }

  @Test
  void anUpdateBatchThatThrowsAnExceptionIsCountedAndTheNextRunsOnSchedule() throws Exception {
    AtomicInteger runs = new AtomicInteger();
    CountDownLatch third = new CountDownLatch(1);
    try (LuceneServer server = startUpdating(() -> {
      if (runs.incrementAndGet() <= 2) {
        throw new IllegalStateException("injected");
      }
      third.countDown();
    })) {
      assertTrue(third.await(10, TimeUnit.SECONDS), "no batch ran after a failed one");
      assertEquals(2, server.updateFailures());
      assertFalse(server.failure().toCompletableFuture().isDone());
    }
  }

  /** The load generator's {@code --aware} clients: a session of the server's own scheme. */
  @Test
  void servesAwareClientsOfTheServersScheme() throws Exception {
    for (LuceneServer.Protection p : LuceneServer.Protection.values()) {
      if (p == LuceneServer.Protection.NONE) {
        continue;
      }
      OverloadScheme scheme = LuceneLoad.awareScheme(p, TARGET.toNanos(), 1_000, 1, null);
      assertEquals(p.scheme(TARGET.toNanos()).name(), scheme.name(), p.toString());
      try (LuceneServer server = start(p);
          SpillwayClientInterceptor session = SpillwayGrpc.client(scheme).slo(TARGET).build()) {
        ManagedChannel plain = ManagedChannelBuilder.forAddress("127.0.0.1", server.port())
            .usePlaintext().build();
        try {
          Channel channel = ClientInterceptors.intercept(plain, session);
          for (int i = 0; i < 3; i++) { // the first registers the session, the next use its credits
            assertEquals(5, search(channel, "water", 5).getHitsCount(), p + " call " + i);
          }
          StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
              () -> search(channel, "", 5));
          assertEquals(Status.Code.INVALID_ARGUMENT, e.getStatus().getCode(), p + ": " + e);
        } finally {
          plain.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
      }
    }
  }

  @Test
  void theUpdateStreamReindexesTheDocumentsPerSecondAskedForWhateverTheShards() {
    for (int shards : new int[] {1, 4, 7, 64}) {
      for (int perSecond : new int[] {1, 3, 7, 100, 150, 1_000, 12_345}) {
        LuceneServer.UpdateSchedule s = LuceneServer.UpdateSchedule.of(perSecond, shards);
        double rate = s.batch() * 1e9 / s.periodNanos();
        assertEquals(perSecond, rate, perSecond * 1e-6, perSecond + "/s over " + shards
            + " shards: " + s);
        // every shard is refreshed at least once a second, or as often as the documents allow
        assertTrue(1e9 / s.periodNanos() >= Math.min(shards, perSecond) - 1e-6, s.toString());
      }
    }
    assertEquals(new LuceneServer.UpdateSchedule(25, 250_000_000), // the default: 4 × 25 a second
        LuceneServer.UpdateSchedule.of(100, 4));
  }

  @Test
  void buildsEachSchemeFromTheTarget() {
    long target = TARGET.toNanos();
    BreakwaterConfig breakwater =
        ((Breakwater) LuceneServer.Protection.BREAKWATER.scheme(target)).config();
    assertEquals(target * 2 / 5, breakwater.targetDelayNanos()); // d_t 40 % (§5.1)
    assertEquals(target * 4 / 5, breakwater.dropThresholdNanos()); // AQM 80 %
    assertEquals(target / 10, breakwater.controlPeriodNanos());
    ProtegoConfig protego = ((Protego) LuceneServer.Protection.PROTEGO.scheme(target)).config();
    assertEquals(target, protego.maxRttNanos()); // the target as Protego's
    assertEquals(0.10, protego.efficiencyThreshold());
    assertEquals(1.00, protego.maxDropRate());
    SedaConfig seda = ((Seda) LuceneLoad.awareScheme(LuceneServer.Protection.SEDA, target, 4_000, 8,
        null)).config();
    assertEquals(500, seda.initialRate()); // a fair share: 4,000 rps over 8 clients
    assertEquals(target, seda.targetNanos()); // SEDA's own target: the service's
    assertEquals(target, seda.timeoutNanos());
    assertEquals(50, seda.adjI()); // a tenth of the fair share
    assertEquals(1.1, seda.adjD());
    assertNull(LuceneServer.Protection.NONE.scheme(target));
    assertTrue(LuceneServer.Protection.PROTEGO.targetBudgets());
    assertTrue(LuceneServer.Protection.SPILLWAY.targetBudgets());
    assertFalse(LuceneServer.Protection.BREAKWATER.targetBudgets());
    assertFalse(LuceneServer.Protection.SEDA.targetBudgets());
  }

  @Test
  void parsesSchemeNamesAndListsTheKnownOnes() {
    assertEquals(LuceneServer.Protection.NONE, LuceneServer.Protection.parse("None"));
    assertEquals(LuceneServer.Protection.SEDA, LuceneServer.Protection.parse("seda"));
    assertEquals(LuceneServer.Protection.BREAKWATER, LuceneServer.Protection.parse("Breakwater"));
    assertEquals(LuceneServer.Protection.PROTEGO, LuceneServer.Protection.parse("PROTEGO"));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> LuceneServer.Protection.parse("dagor"));
    assertEquals("unknown scheme 'dagor'; known: spillway (default), protego, breakwater, seda,"
        + " none", e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> LuceneServer.Protection.parse("protego-ac"));
  }

  @Test
  void writesRequestsForGhzAsAJsonArray(@TempDir Path dir) throws Exception {
    assertEquals("a\\\"b\\\\c\\u0009", LuceneMain.json("a\"b\\c\t"));
    try (LuceneServer server = LuceneServer.builder().port(0).docs(Fixtures.DOCS).warmup(0)
        .updatesPerSecond(0).build().start()) {
      Path file = dir.resolve("queries.json");
      LuceneMain.writeGhzData(server, file, "heavy", Fixtures.seed());
      List<String> lines = Files.readAllLines(file);
      assertEquals("[", lines.getFirst());
      assertEquals("]", lines.getLast());
      assertEquals(10_002, lines.size());
      assertTrue(lines.get(1).matches("\\{\"query\":\".+\",\"k\":10},"), lines.get(1));
      assertTrue(lines.stream().anyMatch(l -> l.contains("*\"")), "a prefix query");
      assertTrue(lines.stream().anyMatch(l -> l.contains("\\\"")), "a phrase query");
    }
  }
}
