package io.spillway.lucene;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The result cache as the engine's callers see it, on 2,000 documents of the corpus. */
class ResultCacheTest {

  private static ManualTicker ticker;
  private static ShardedIndex index;

  @BeforeAll
  static void build() {
    ticker = new ManualTicker();
    index = Fixtures.index(ticker);
  }

  @AfterAll
  static void close() throws Exception {
    index.close();
  }

  @Test
  void aSearchOnReadersPinnedBeforeARefreshDoesNotReplaceTheCurrentAnswer() throws Exception {
    ManualTicker own = new ManualTicker();
    try (ShardedIndex updated = Fixtures.index(own)) {
      SearchEngine engine = new SearchEngine(updated, own);
      ResultCache cache = engine.cache();
      String key = ResultCache.key(ShardedIndex.BODY, "water", 10);
      try (ShardedIndex.View before = updated.acquire()) { // a request pins the shards...
        new UpdateStream(updated, 5, Fixtures.seed()).applyNext(); // ...shard 0 is refreshed...
        SearchEngine.Result current = engine.search("water", 10); // a later request: cached
        // ...and the first request reaches the stripe only now: its readers' answer is searched
        SearchEngine.Result old = cache.get(key, before.generations(),
            () -> engine.run(before, engine.parse("water"), 10));
        assertEquals(current.hits().size(), old.hits().size());
        assertEquals(2, cache.misses());
      }
      engine.search("water", 10); // on the current readers: still cached
      assertEquals(1, cache.hits());
      assertEquals(2, cache.misses());
    }
  }

  @Test
  void aCallerCannotChangeTheCachedAnswerOtherRequestsGet() throws Exception {
    SearchEngine engine = new SearchEngine(index, ticker);
    SearchEngine.Result first = engine.search("water", 10);
    List<SearchEngine.Hit> expected = List.copyOf(first.hits());
    assertEquals(10, expected.size());
    try {
      first.hits().clear(); // one request's caller, done with its answer
    } catch (UnsupportedOperationException refused) {
      // the answer is read-only
    }
    SearchEngine.Result second = engine.search("water", 10);
    assertEquals(1, engine.cache().hits()); // answered from the cache
    assertEquals(expected, second.hits());
    assertThrows(UnsupportedOperationException.class, () -> second.hits().remove(0));
    assertThrows(UnsupportedOperationException.class,
        () -> engine.search("water OR fish", 10).hits().clear()); // uncached ones alike
  }
}
