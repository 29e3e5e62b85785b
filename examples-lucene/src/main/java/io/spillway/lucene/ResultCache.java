package io.spillway.lucene;

import io.spillway.api.BudgetExceededException;
import io.spillway.api.Ticker;
import io.spillway.asqm.BudgetedLock;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/**
 * The result cache of single-term queries: the top-k hits of {@code (field, term, k)} for the
 * shard readers they were computed on, in {@value #DEFAULT_STRIPES} stripes, each an LRU map
 * behind its own {@link BudgetedLock}.
 *
 * <h2>Why a lock, and why it is held while a miss is searched</h2>
 *
 * <p>A search service caches its popular queries' results (Elasticsearch's shard request cache,
 * Solr's queryResultCache), and it loads a missing entry once, making the other requests for the
 * same key wait for that one search instead of all running it: Guava's {@code LoadingCache},
 * Caffeine's and {@code ConcurrentHashMap.computeIfAbsent}'s semantics, which lock the key's bin
 * or segment for the load. Here that is the stripe lock, held across the miss's search. The
 * Zipf-like popularity of terms (Protego's queries are drawn by term frequency, §5.2) puts the
 * popular terms' requests in a few stripes; after each refresh their entries are stale and the
 * first request for a term searches while the others for that term, and for any term sharing its
 * stripe, queue behind it: the per-{@code TermDocs} contention of the paper's Lucene++
 * ("if a specific document becomes popular, the per-TermDocs lock protecting its data becomes
 * contended", protego-nsdi23 §5.2). Every request takes its stripe within its budget
 * ({@link BudgetedLock#acquireWithinBudget}), so a request that would queue past its budget is
 * refused at once.
 *
 * <p>An entry is valid for the exact refresh generations of the shards it was computed on
 * ({@link ShardedIndex.View#generations()}): a refresh of any shard changes the corpus-wide term
 * statistics, hence every score. A search on readers older than those of the entry it finds
 * (pinned before a refresh, it reached the stripe after a search pinned after it) is answered but
 * not cached, so it does not replace the answer of the current readers. Only single-term queries
 * are cached: the heavy mix's phrases and prefixes rarely repeat and would only churn the LRU.
 *
 * <p>Thread-safe.
 */
final class ResultCache {

  /** Stripes by default: a power of two. */
  static final int DEFAULT_STRIPES = 64;
  /** Entries per stripe by default. */
  static final int DEFAULT_ENTRIES_PER_STRIPE = 64;

  /** Computes a missing entry; runs under the stripe lock. */
  @FunctionalInterface
  interface Loader {
    SearchEngine.Result load() throws InvalidQueryException;
  }

  private record Cached(long[] generations, SearchEngine.Result result) { }

  private static final class Stripe {
    final BudgetedLock lock;
    final Map<String, Cached> entries; // guarded by lock

    Stripe(Ticker ticker, int capacity) {
      lock = new BudgetedLock(ticker);
      entries = new LinkedHashMap<>(capacity * 2, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Cached> eldest) {
          return size() > capacity;
        }
      };
    }
  }

  private final Stripe[] stripes;
  private final LongAdder hits = new LongAdder();
  private final LongAdder misses = new LongAdder();

  ResultCache(Ticker ticker) {
    this(DEFAULT_STRIPES, DEFAULT_ENTRIES_PER_STRIPE, ticker);
  }

  ResultCache(int stripes, int entriesPerStripe, Ticker ticker) {
    if (Integer.bitCount(stripes) != 1 || entriesPerStripe < 1) {
      throw new IllegalArgumentException("stripes must be a power of two and entries positive: "
          + stripes + ", " + entriesPerStripe);
    }
    this.stripes = new Stripe[stripes];
    for (int i = 0; i < stripes; i++) {
      this.stripes[i] = new Stripe(ticker, entriesPerStripe);
    }
  }

  /** The cache key of a single-term query. */
  static String key(String field, String term, int k) {
    return field + '\u0000' + term + '\u0000' + k;
  }

  /**
   * The entry for {@code key} computed on {@code generations}, loading it with {@code loader}
   * under the stripe lock if it is missing or stale.
   *
   * @throws BudgetExceededException if the stripe lock's queue exceeds the budget in scope, or the
   *     loader's search ran out of it (nothing is cached then)
   */
  SearchEngine.Result get(String key, long[] generations, Loader loader)
      throws InvalidQueryException {
    Stripe s = stripeOf(key);
    try (var _ = s.lock.acquireWithinBudget()) {
      Cached e = s.entries.get(key);
      if (e != null && Arrays.equals(e.generations, generations)) {
        hits.increment();
        return e.result;
      }
      misses.increment();
      SearchEngine.Result loaded = loader.load();
      if (e == null || !olderThan(generations, e.generations)) {
        s.entries.put(key, new Cached(generations.clone(), loaded));
      }
      return loaded;
    }
  }

  /**
   * Whether readers of {@code generations} are older than those of {@code than}, which differ:
   * a request that pinned the shards before a refresh can reach the stripe after one that pinned
   * them after it and cached their answer, which later requests need and its own must not replace.
   * Each shard's generation only grows, so of two pinnings the later is at least as new in every
   * shard.
   */
  private static boolean olderThan(long[] generations, long[] than) {
    for (int i = 0; i < generations.length; i++) {
      if (generations[i] > than[i]) {
        return false;
      }
    }
    return true;
  }

  /** The lock of {@code key}'s stripe (diagnostics, tests). */
  BudgetedLock lockOf(String key) {
    return stripeOf(key).lock;
  }

  private Stripe stripeOf(String key) {
    return stripes[stripeIndex(key)];
  }

  /** The number of {@code key}'s stripe, 0 to stripes − 1 (calibration groups requests by it). */
  int stripeIndex(String key) {
    int h = key.hashCode();
    h ^= h >>> 16; // String hashes of short keys differ mostly in their low bits; mix the high in
    return h & (stripes.length - 1);
  }

  /** The number of stripes. */
  int stripeCount() {
    return stripes.length;
  }

  /** Lookups answered from the cache. */
  long hits() {
    return hits.sum();
  }

  /** Lookups that searched. */
  long misses() {
    return misses.sum();
  }

  /** The stripe locks, for the lock finder and diagnostics. */
  BudgetedLock[] locks() {
    BudgetedLock[] locks = new BudgetedLock[stripes.length];
    for (int i = 0; i < stripes.length; i++) {
      locks[i] = stripes[i].lock;
    }
    return locks;
  }
}
