package io.spillway.lucene;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.Ticker;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * Searches of the heavy mix race the update stream's batches and refreshes (no budgets, so every
 * search must be answered): no search fails on a reader swapped out under it, and every view
 * holds the corpus's documents once each (re-indexing replaces, never adds).
 */
class ConcurrentUpdatesTest {

  @Test
  void searchesRacingRefreshesAlwaysSeeTheWholeCorpus() throws Exception {
    try (ShardedIndex index = Fixtures.index(Ticker.system())) {
      SearchEngine engine = new SearchEngine(index, Ticker.system());
      QueryMix mix;
      try (ShardedIndex.View view = index.acquire()) {
        mix = QueryMix.heavy(view.reader(), index.corpus());
      }
      UpdateStream updates = new UpdateStream(index, 20, Fixtures.seed());
      AtomicBoolean searching = new AtomicBoolean(true);
      try (ExecutorService pool = Executors.newFixedThreadPool(4)) {
        Future<?> updater = pool.submit(() -> {
          while (searching.get()) {
            updates.applyNext();
          }
        });
        List<Future<Integer>> searchers = new ArrayList<>();
        for (int t = 0; t < 3; t++) {
          long seed = Fixtures.seed() + t;
          searchers.add(pool.submit(() -> {
            SplittableRandom random = new SplittableRandom(seed);
            int answered = 0;
            for (int i = 0; i < 300; i++) {
              SearchEngine.Result r = engine.search(mix.next(random), 10);
              assertTrue(r.hits().size() <= 10);
              try (ShardedIndex.View view = index.acquire()) {
                assertEquals(Fixtures.DOCS, view.reader().numDocs());
              }
              answered++;
            }
            return answered;
          }));
        }
        int answered = 0;
        for (Future<Integer> f : searchers) {
          answered += f.get();
        }
        searching.set(false);
        updater.get();
        assertEquals(900, answered);
        assertTrue(updates.applied() > 0, "updates ran: " + updates.applied());
      }
    }
  }
}
