package io.spillway.lucene;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.spillway.api.BudgetExceededException;
import io.spillway.api.RequestBudget;
import io.spillway.asqm.BudgetedLock;
import io.spillway.lucene.proto.SearchRequest;
import java.time.Duration;
import org.apache.lucene.index.DirectoryReader;
import org.junit.jupiter.api.Test;

/**
 * The service's budgeted locks, on a clock the test moves: a request whose remaining budget the
 * lock's queue already exceeds is refused at once (protego-nsdi23 §3.2), with nothing left pinned,
 * and over gRPC the client gets a fast RESOURCE_EXHAUSTED; once the queue is gone the same request
 * is served.
 */
class BudgetedLocksTest {

  private static final long MS = 1_000_000;

  private static SearchEngine.Result searchWithBudget(SearchEngine engine, String q, long budget)
      throws Exception {
    return ScopedValue.where(RequestBudget.CURRENT, RequestBudget.of(budget))
        .call(() -> engine.search(q, 10));
  }

  @Test
  void aShardLockWhoseQueueExceedsTheBudgetRefusesTheSearchAndReleasesTheOtherShards()
      throws Exception {
    ManualTicker ticker = new ManualTicker();
    try (ShardedIndex index = Fixtures.index(ticker)) {
      SearchEngine engine = new SearchEngine(index, ticker);
      BudgetedLock shard2 = index.shard(2).lock();
      try (LockQueue _ = new LockQueue(shard2)) {
        ticker.advance(50 * MS); // the waiter has queued for 50 ms
        BudgetExceededException e = assertThrows(BudgetExceededException.class,
            () -> searchWithBudget(engine, "water", 10 * MS));
        assertTrue(e.queueingDelayNanos() >= 50 * MS, e.getMessage());
        assertEquals(10 * MS, e.remainingBudgetNanos());
        for (int s : new int[] {0, 1}) { // pinned before shard 2 refused: released again
          Shard.Snapshot snap = index.shard(s).acquire();
          assertEquals(2, snap.reader().getRefCount(), "shard " + s); // the shard's own and ours
          snap.reader().decRef();
        }
      }
      assertTrue(searchWithBudget(engine, "water", 10 * MS).totalHits() > 0); // queue gone
    }
  }

  @Test
  void aCacheStripeWhoseQueueExceedsTheBudgetRefusesItsTermsOnly() throws Exception {
    ManualTicker ticker = new ManualTicker();
    try (ShardedIndex index = Fixtures.index(ticker)) {
      SearchEngine engine = new SearchEngine(index, ticker);
      ResultCache cache = engine.cache();
      BudgetedLock stripe = cache.lockOf(ResultCache.key(ShardedIndex.BODY, "water", 10));
      String other = null;
      for (String t : new String[] {"fish", "stone", "light", "small", "large", "tree", "animal"}) {
        if (cache.lockOf(ResultCache.key(ShardedIndex.BODY, t, 10)) != stripe) {
          other = t;
          break;
        }
      }
      assertNotSame(null, other);
      try (LockQueue _ = new LockQueue(stripe)) {
        ticker.advance(50 * MS);
        assertThrows(BudgetExceededException.class,
            () -> searchWithBudget(engine, "water", 10 * MS));
        assertTrue(searchWithBudget(engine, other, 10 * MS).totalHits() > 0, other);
        // no budget in scope: the lock is a plain lock, and the request would wait (not tried)
      }
      assertTrue(searchWithBudget(engine, "water", 10 * MS).totalHits() > 0);
    }
  }

  @Test
  void overGrpcARefusalAtALockIsAFastResourceExhausted() throws Exception {
    ManualTicker ticker = new ManualTicker();
    try (ShardedIndex index = Fixtures.index(ticker);
        InProcessSearch search = new InProcessSearch(new SearchEngine(index, ticker),
            Duration.ofMillis(20))) {
      SearchRequest request = SearchRequest.newBuilder().setQuery("water").setK(10).build();
      try (LockQueue _ = new LockQueue(index.shard(0).lock())) {
        ticker.advance(1_000 * MS); // far beyond the 20 ms target's budget
        StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
            () -> search.stub.search(request));
        assertEquals(Status.Code.RESOURCE_EXHAUSTED, e.getStatus().getCode(), e.toString());
        assertEquals("spillway: rejected (budget)", e.getStatus().getDescription());
      }
      assertTrue(search.stub.search(request).getHitsCount() > 0);
    }
  }

  @Test
  void theCacheAnswersARepeatedTermUntilAnUpdateRefreshesAShard() throws Exception {
    ManualTicker ticker = new ManualTicker();
    try (ShardedIndex index = Fixtures.index(ticker)) {
      SearchEngine engine = new SearchEngine(index, ticker);
      SearchEngine.Result first = engine.search("water", 10);
      assertEquals(first, engine.search("water", 10));
      assertEquals(1, engine.cache().hits());
      assertEquals(1, engine.cache().misses());
      engine.search("water OR fish", 10); // not a single term: not cached
      assertEquals(1, engine.cache().misses());

      UpdateStream updates = new UpdateStream(index, 5, Fixtures.seed());
      updates.applyNext();
      assertEquals(5, updates.applied());
      SearchEngine.Result after = engine.search("water", 10);
      assertEquals(2, engine.cache().misses()); // shard 0 was refreshed: searched again
      assertEquals(first.hits().size(), after.hits().size());
      try (ShardedIndex.View view = index.acquire()) {
        assertEquals(Fixtures.DOCS, view.reader().numDocs()); // re-indexed, not added
        assertEquals(1, view.generations()[0]);
        assertEquals(0, view.generations()[1]);
      }
      for (int i = 0; i < 3; i++) {
        updates.applyNext(); // round robin: shards 1, 2, 3
      }
      try (ShardedIndex.View view = index.acquire()) {
        assertEquals(java.util.Arrays.toString(new long[] {1, 1, 1, 1}),
            java.util.Arrays.toString(view.generations()));
      }
    }
  }
}
