package io.spillway.lucene;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.spillway.api.BudgetExceededException;
import io.spillway.api.RequestBudget;
import io.spillway.lucene.proto.SearchRequest;
import java.time.Duration;
import java.util.List;
import org.apache.lucene.index.ExitableDirectoryReader;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The budget bounds the search itself ({@link BudgetTimeout}): on a clock the test controls, a
 * search whose budget is spent, or runs out while Lucene scores or enumerates terms, is stopped
 * and ends in a {@link BudgetExceededException}, never in a partial answer; with time standing
 * still the same search completes with the full answer.
 */
class QueryTimeoutTest {

  private static final long MS = 1_000_000;

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

  private static SearchEngine.Result withBudget(SearchEngine engine, long budget, String q, int k)
      throws Exception {
    return ScopedValue.where(RequestBudget.CURRENT, RequestBudget.of(budget))
        .call(() -> engine.search(q, k));
  }

  @Test
  void aSearchWhoseBudgetIsSpentIsStoppedAndNothingIsCached() throws Exception {
    SearchEngine engine = new SearchEngine(index, ticker); // no search time recorded: no allowance
    assertEquals(0, engine.p99SearchNanos());
    BudgetExceededException e = assertThrows(BudgetExceededException.class,
        () -> withBudget(engine, 0, "*:*", 1000));
    assertEquals(0, e.remainingBudgetNanos());
    assertEquals(1, engine.cancelledSearches());
    assertEquals(1000, engine.search("*:*", 1000).hits().size()); // no budget: runs to the end

    SearchEngine cached = new SearchEngine(index, ticker); // again no allowance
    assertThrows(BudgetExceededException.class, () -> withBudget(cached, 0, "water", 10));
    assertEquals(0, cached.cache().hits());
    cached.search("water", 10); // searched, not answered from the cache
    cached.search("water", 10);
    assertEquals(1, cached.cache().hits());
    assertEquals(2, cached.cache().misses());
  }

  @Test
  void aBudgetThatRunsOutMidSearchStopsItWhereTimeStandingStillLetsItFinish() throws Exception {
    SearchEngine frozen = new SearchEngine(index, ticker);
    SearchEngine.Result full = withBudget(frozen, 5 * MS, "*:*", 1000);
    assertEquals(1000, full.hits().size());
    assertEquals(frozen.search("*:*", 1000), full); // bounded, yet the same answer

    SearchEngine engine = new SearchEngine(index, ticker);
    ticker.autoAdvance(MS); // each reading moves the clock by 1 ms
    try {
      // Lucene checks the timeout before each window of documents it scores, four leaves and
      // at least two windows each: more than five readings, so more than the 5 ms budget
      BudgetExceededException e = assertThrows(BudgetExceededException.class,
          () -> withBudget(engine, 5 * MS, "*:*", 1000));
      assertEquals(5 * MS, e.remainingBudgetNanos());
      assertTrue(e.queueingDelayNanos() >= 5 * MS, e.getMessage());
    } finally {
      ticker.autoAdvance(0);
    }
    assertEquals(1, engine.cancelledSearches());
  }

  @Test
  void withCancellationOffTheBudgetIsSpentOnlyAtTheLocks() throws Exception {
    SearchEngine engine = new SearchEngine(index, ticker, false);
    ticker.autoAdvance(MS);
    try {
      // the same spent budget and racing clock that stop a bounded search: this one finishes
      assertEquals(1000, withBudget(engine, 0, "*:*", 1000).hits().size());
      assertTrue(withBudget(engine, 0, "s*", 10).totalHits() > 0);
    } finally {
      ticker.autoAdvance(0);
    }
    assertEquals(0, engine.cancelledSearches());
  }

  @Test
  void onlyQueriesThatEnumerateTermsHaveTheirTermEnumerationBounded() throws Exception {
    SearchEngine engine = new SearchEngine(index, ticker);
    for (String q : List.of("water", "\"body of water\"", "water AND fire", "*:*")) {
      assertFalse(SearchEngine.enumeratesTerms(engine.parse(q)), q);
    }
    for (String q : List.of("wat*", "w?ter", "water~1", "fire OR wat*", "title:[a TO b]")) {
      assertTrue(SearchEngine.enumeratesTerms(engine.parse(q)), q);
    }
  }

  @Test
  void termEnumerationOfAPrefixQueryIsBoundedToo() throws Exception {
    SearchEngine engine = new SearchEngine(index, ticker);
    assertThrows(BudgetExceededException.class, () -> withBudget(engine, 0, "s*", 10));
    // the wrapper that bounds term enumeration throws as Lucene documents it
    try (ShardedIndex.View view = index.acquire()) {
      var searcher = view.newSearcher(() -> true);
      assertThrows(ExitableDirectoryReader.ExitingReaderException.class,
          () -> searcher.getIndexReader().leaves().getFirst().reader()
              .terms(ShardedIndex.BODY).iterator().next());
    }
    assertTrue(withBudget(engine, 5 * MS, "s*", 10).totalHits() > 0); // frozen clock: finishes
  }

  @Test
  void overGrpcASearchThatOutrunsItsBudgetIsAFastResourceExhausted() throws Exception {
    ManualTicker racing = new ManualTicker();
    try (InProcessSearch search = new InProcessSearch(new SearchEngine(index, racing),
        Duration.ofMillis(20))) {
      SearchRequest all = SearchRequest.newBuilder().setQuery("*:*").setK(1000).build();
      racing.autoAdvance(10 * MS); // the 20 ms target's budget lasts two readings of this clock
      StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
          () -> search.stub.search(all));
      assertEquals(Status.Code.RESOURCE_EXHAUSTED, e.getStatus().getCode(), e.toString());
      assertEquals("spillway: rejected (budget)", e.getStatus().getDescription());
      racing.autoAdvance(0);
      assertEquals(1000, search.stub.search(all).getHitsCount());
    }
  }
}
