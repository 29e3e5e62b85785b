package io.spillway.lucene;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.spillway.lucene.proto.SearchGrpc;
import io.spillway.lucene.proto.SearchReply;
import io.spillway.lucene.proto.SearchRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The server as {@code ./spillway lucene} runs it, on a real socket, with both protections. */
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

  @Test
  void servesOverASocketWithEitherProtectionWhileUpdatesRun() throws Exception {
    for (LuceneServer.Protection p : LuceneServer.Protection.values()) {
      try (LuceneServer server = LuceneServer.builder().port(0).protection(p).docs(Fixtures.DOCS)
          .warmup(50).updatesPerSecond(400).build().start()) {
        assertTrue(server.describeIndex().startsWith("indexed 2,000 documents into 4 shards"),
            server.describeIndex());
        SearchReply reply = search(server.port(), "water", 5);
        assertEquals(5, reply.getHitsCount(), p.toString());
        StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
            () -> search(server.port(), "water", 0));
        assertEquals(Status.Code.INVALID_ARGUMENT, e.getStatus().getCode(), p + ": " + e);
      }
    }
    assertThrows(IllegalArgumentException.class, () -> LuceneServer.Protection.parse("seda"));
    assertEquals(LuceneServer.Protection.NONE, LuceneServer.Protection.parse("None"));
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
