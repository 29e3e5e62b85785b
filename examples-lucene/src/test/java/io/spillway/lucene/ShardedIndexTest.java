package io.spillway.lucene;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.Ticker;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.Term;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.MatchAllDocsQuery;
import org.apache.lucene.store.AlreadyClosedException;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.store.ByteBuffersDirectory;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FilterDirectory;
import org.apache.lucene.store.IOContext;
import org.apache.lucene.store.IndexInput;
import org.junit.jupiter.api.Test;

class ShardedIndexTest {

  @Test
  void indexesEveryDocumentOnceOverShardsWithSeveralSegments() throws Exception {
    Corpus corpus = Corpus.wordNet(20_000);
    try (ShardedIndex index = ShardedIndex.build(corpus, 4, Ticker.system())) {
      assertEquals(4, index.shardCount());
      assertTrue(index.segments() >= 4, "segments: " + index.segments());
      try (ShardedIndex.View view = index.acquire()) {
        assertEquals(20_000, view.reader().numDocs());
        IndexSearcher searcher = view.newSearcher();
        int id = corpus.docs().get(12_345).id();
        assertEquals(1, searcher.count(new TermQuery(new Term(ShardedIndex.ID,
            Integer.toString(id)))));
      }
    }
  }

  @Test
  void closingTwiceIsHarmlessAndASearchAfterCloseIsRefused() throws Exception {
    ShardedIndex index = ShardedIndex.build(Corpus.wordNet(200), 2, Ticker.system());
    ShardedIndex.View pinned = index.acquire();
    index.close();
    assertDoesNotThrow(index::close); // Closeable: closing again has no effect
    assertEquals(200, pinned.newSearcher().count(new MatchAllDocsQuery())); // still readable
    pinned.close();
    assertThrows(AlreadyClosedException.class, index::acquire);
  }

  @Test
  void reindexingReplacesDocumentsAndBumpsOnlyThatShardsGeneration() throws Exception {
    Corpus corpus = Corpus.wordNet(2_000);
    try (ShardedIndex index = ShardedIndex.build(corpus, 4, Ticker.system())) {
      List<Corpus.Doc> ofShard1 = corpus.docs().stream()
          .filter(d -> ShardedIndex.shardOf(d.id(), 4) == 1).limit(10).toList();
      long[] before;
      try (ShardedIndex.View view = index.acquire()) {
        before = view.generations().clone();
        index.reindex(1, ofShard1);
        // the pinned view still reads the old reader
        assertEquals(2_000, view.reader().maxDoc());
      }
      try (ShardedIndex.View view = index.acquire()) {
        assertEquals(2_000, view.reader().numDocs());
        assertEquals(2_010, view.reader().maxDoc()); // the replaced ten, deleted until merged
        assertEquals(before[0], view.generations()[0]);
        assertEquals(before[1] + 1, view.generations()[1]);
      }
    }
  }

  @Test
  void aShardThatFailsToOpenLeavesEveryOtherShardClosed() throws Exception {
    // Shard 2's directory cannot be read: its writer indexes, then opening its reader fails, while
    // the other shards are built (or being built) on the pool.
    Map<Integer, Directory> given = new ConcurrentHashMap<>();
    ShardedIndex.Directories directories = number -> {
      Directory d = new ByteBuffersDirectory();
      given.put(number, d);
      return number != 2 ? d : new FilterDirectory(d) {
        @Override
        public IndexInput openInput(String name, IOContext context) throws IOException {
          throw new IOException("injected: cannot read " + name);
        }
      };
    };
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> ShardedIndex.build(Corpus.wordNet(2_000), 4, Ticker.system(), directories));
    assertTrue(e.getCause() instanceof IOException && e.getCause().getMessage()
        .startsWith("injected"), e.toString());
    assertEquals(4, given.size()); // every shard was started
    for (Map.Entry<Integer, Directory> d : given.entrySet()) {
      // a writer left open holds its directory's write lock, and a second writer could not open
      assertDoesNotThrow(() -> new IndexWriter(d.getValue(), new IndexWriterConfig()).close(),
          "shard " + d.getKey() + "'s writer was left open");
    }
  }
}
