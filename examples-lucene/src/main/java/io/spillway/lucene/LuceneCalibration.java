package io.spillway.lucene;

import io.spillway.api.RequestBudget;
import io.spillway.api.Ticker;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.StringJoiner;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.HdrHistogram.Histogram;
import org.apache.lucene.index.Term;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.TermQuery;

/**
 * Measures, on the real service in this JVM, what the simulator needs to run the paper's Lucene
 * setting (protego-nsdi23 §5.1–5.2: ten server threads, more than this machine has) with this
 * service's costs and locks, and prints it as scenario keys for {@code scenarios/lucene-protego.conf}.
 *
 * <p>One thread searches, uncontended, after a warm-up, as the paper measured its 1.7 ms mean and
 * 20 ms p99 "on a lightly-loaded server":
 * <ol>
 *   <li><b>Search time</b>: every query searched, the result cache bypassed: the work of a search
 *       of each mix, mean and p99.
 *   <li><b>As served</b>: {@link SearchEngine#search}'s steps timed one by one, the result cache
 *       in, the update stream re-indexing and refreshing beside it at the server's default rate:
 *       each request's service time, and how long it held its cache stripe's lock (a hit: a
 *       look-up; a miss: its whole search, since a miss is loaded under the lock, {@link
 *       ResultCache}). Grouped by stripe, these are the simulator's mutex paths: a path per stripe,
 *       with the share of requests its terms draw, its mean service time and its mean hold; the
 *       heavy mix's phrases and prefixes are not cached and form one more path with no mutex.
 *   <li><b>Shard lock</b>: the hold of a search (pin one reader) and of a refresh (re-index a batch
 *       and reopen the shard, {@link Shard#reindex}).
 *   <li><b>Cancellation's cost with nothing cancelled</b>: the heavy mix's search time with the
 *       budget bounding the search ({@link BudgetTimeout}, a budget nothing reaches) and without,
 *       alternating rounds, best round of each.
 * </ol>
 * Network and gRPC are not here: the sockets experiment measures them.
 *
 * <p>Run: {@code ./spillway lucene calibrate [--queries N] [--seconds S] [--seed S]} (pinned to
 * core 0, as the server).
 */
public final class LuceneCalibration {

  private static final int K = 10;
  private static final long HIGHEST = TimeUnit.SECONDS.toNanos(60);

  private LuceneCalibration() { }

  public static void main(String[] args) throws Exception {
    int queries = 20_000;
    double seconds = 20;
    long seed = 42;
    for (int i = 0; i + 1 < args.length; i += 2) {
      switch (args[i]) {
        case "--queries" -> queries = Integer.parseInt(args[i + 1]);
        case "--seconds" -> seconds = Double.parseDouble(args[i + 1]);
        case "--seed" -> seed = Long.parseLong(args[i + 1]);
        default -> {
          System.err.println("usage: spillway lucene calibrate [--queries N] [--seconds S] [--seed S]");
          System.exit(2);
        }
      }
    }
    Ticker ticker = Ticker.system();
    ShardedIndex index = ShardedIndex.build(Corpus.wordNet(Corpus.WORDNET_SIZE), 4, ticker);
    SearchEngine engine = new SearchEngine(index, ticker);
    SearchEngine unbounded = new SearchEngine(index, ticker, false);
    QueryMix single;
    QueryMix heavy;
    try (ShardedIndex.View view = index.acquire()) {
      single = QueryMix.singleTerms(view.reader());
      heavy = QueryMix.heavy(view.reader(), index.corpus());
    }
    out("JDK %s, %d cores; %,d documents, %d shards, %d segments; vocabulary %,d terms",
        Runtime.version(), Runtime.getRuntime().availableProcessors(), index.corpus().size(),
        index.shardCount(), index.segments(), single.vocabulary());

    SplittableRandom random = new SplittableRandom(seed);
    // warm-up: long enough for the JIT to finish compiling the hot paths (with less, the p99
    // measured is the compiler preempting the searching thread on this one core)
    for (int i = 0; i < 60_000; i++) {
      uncached(engine, heavy.next(random));
    }

    Histogram singleSearch = searchTimes(engine, single, queries, random);
    Histogram heavySearch = searchTimes(engine, heavy, queries, random);
    out("search time, cache bypassed (%,d queries each): single-term mean %s p99 %s;"
        + " heavy mean %s p99 %s", queries, ms(singleSearch.getMean()),
        ms(singleSearch.getValueAtPercentile(99)), ms(heavySearch.getMean()),
        ms(heavySearch.getValueAtPercentile(99)));

    Histogram refresh = new Histogram(HIGHEST, 3);
    AsServed singleServed;
    AsServed heavyServed;
    UpdateStream updates = new UpdateStream(index, 25, seed); // the server's default: 100 docs/s
    ScheduledExecutorService updater = Executors.newSingleThreadScheduledExecutor();
    try {
      updater.scheduleAtFixedRate(() -> {
        long t = System.nanoTime();
        updates.applyNext();
        synchronized (refresh) {
          refresh.recordValue(System.nanoTime() - t);
        }
      }, 250, 250, TimeUnit.MILLISECONDS);
      // discarded: the first refreshes merge the build's segments (and wait up to 500 ms for
      // it, IndexWriterConfig's merge-on-refresh), a one-off that would set the p99 measured
      asServed(engine, heavy, seconds, random);
      synchronized (refresh) {
        refresh.reset();
      }
      singleServed = asServed(engine, single, seconds, random);
      heavyServed = asServed(engine, heavy, seconds, random);
    } finally {
      updater.shutdown();
      updater.awaitTermination(10, TimeUnit.SECONDS);
    }
    for (AsServed a : List.of(singleServed, heavyServed)) {
      out("as served (%s, %.0f s, cache in, updates at 100 docs/s): %,d requests, service mean %s"
          + " p99 %s; cache hits %.1f %%; stripe hold mean %s (hit %s, miss %s), p99 %s;"
          + " wait for the shard locks mean %s p99 %s p99.9 %s max %s",
          a == singleServed ? "single-term" : "heavy", seconds, a.service.getTotalCount(),
          ms(a.service.getMean()), ms(a.service.getValueAtPercentile(99)), 100 * a.hitRatio(),
          ms(a.hold.getMean()), ms(a.hitHold.getMean()), ms(a.missHold.getMean()),
          ms(a.hold.getValueAtPercentile(99)), ms(a.shardWait.getMean()),
          ms(a.shardWait.getValueAtPercentile(99)), ms(a.shardWait.getValueAtPercentile(99.9)),
          ms(a.shardWait.getMaxValue()));
    }

    Histogram refreshAlone = new Histogram(HIGHEST, 3);
    for (int i = 0; i < 40; i++) { // the same batches with no search beside them: the work alone
      long t = System.nanoTime();
      updates.applyNext();
      refreshAlone.recordValue(System.nanoTime() - t);
    }
    out("refresh alone (no searches beside it, 40 batches of 25): mean %s p99 %s max %s",
        ms(refreshAlone.getMean()), ms(refreshAlone.getValueAtPercentile(99)),
        ms(refreshAlone.getMaxValue()));
    double searchPin = shardPinNanos(index);
    synchronized (refresh) {
      out("shard lock: held %.2f us per search (pin one reader); per refresh (25 documents"
          + " re-indexed, reader reopened) mean %s p99 %s max %s over %d refreshes, every 250 ms"
          + " (each shard every 1 s)", searchPin / 1e3, ms(refresh.getMean()),
          ms(refresh.getValueAtPercentile(99)), ms(refresh.getMaxValue()), refresh.getTotalCount());
    }

    for (QueryMix mix : List.of(single, heavy)) {
      double[] cost = cancellationCost(engine, unbounded, mix, queries, random);
      out("cancellation, nothing cancelled (%s mix, best of 9 rounds of %,d): bounded %.1f us,"
          + " unbounded %.1f us per search: %+.1f %% time, %,d cancelled",
          mix == single ? "single-term" : "heavy", queries / 2, cost[0] / 1e3, cost[1] / 1e3,
          100 * (cost[0] / cost[1] - 1), engine.cancelledSearches());
    }

    double rtt = 10; // us: the paper's testbed (§5.1); this machine's gRPC loopback is measured on sockets
    for (AsServed a : List.of(singleServed, heavyServed)) {
      double mean = a.service.getMean() / 1e3;
      double p99 = a.service.getValueAtPercentile(99) / 1e3;
      double target = Math.max(10 * (mean + rtt), 2 * (p99 + rtt));
      System.out.printf(Locale.ROOT, "%n# %s mix: target delay = max(10 x (%.1f + %.0f), 2 x (%.1f +"
          + " %.0f)) us (protego-nsdi23 §5.1)%n", a == singleServed ? "single-term" : "heavy",
          mean, rtt, p99, rtt);
      System.out.print(a.scenarioKeys(engine.cache(), target));
    }
    index.close();
  }

  /** The work of searching {@code n} queries of {@code mix}, one at a time, no cache. */
  private static Histogram searchTimes(SearchEngine engine, QueryMix mix, int n,
      SplittableRandom random) throws InvalidQueryException {
    Histogram h = new Histogram(HIGHEST, 3);
    for (int i = 0; i < n; i++) {
      String q = mix.next(random);
      long t = System.nanoTime();
      uncached(engine, q);
      h.recordValue(System.nanoTime() - t);
    }
    return h;
  }

  private static void uncached(SearchEngine engine, String query) throws InvalidQueryException {
    Query parsed = engine.parse(query);
    try (ShardedIndex.View view = engine.index().acquire()) {
      engine.run(view, parsed, K);
    }
  }

  /** What one mix costs as the service serves it, per request and per stripe. */
  private static final class AsServed {
    final Histogram service = new Histogram(HIGHEST, 3);
    final Histogram hold = new Histogram(HIGHEST, 3);
    final Histogram hitHold = new Histogram(HIGHEST, 3);
    final Histogram missHold = new Histogram(HIGHEST, 3);
    /** Time to pin the shards' readers: waiting behind a refresh for each shard lock. */
    final Histogram shardWait = new Histogram(HIGHEST, 3);
    final long[] count;
    final double[] serviceSum;
    final double[] holdSum;
    /** Requests that took no stripe (phrases, prefixes), and their service time. */
    long uncachedCount;
    double uncachedSum;
    final Map<String, Double> termShares;

    AsServed(int stripes, Map<String, Double> termShares) {
      count = new long[stripes];
      serviceSum = new double[stripes];
      holdSum = new double[stripes];
      this.termShares = termShares;
    }

    double hitRatio() {
      long all = hitHold.getTotalCount() + missHold.getTotalCount();
      return all == 0 ? 0 : (double) hitHold.getTotalCount() / all;
    }

    /**
     * The simulator's keys: a path per stripe (its share of requests from the term distribution,
     * its measured mean service and hold), then a path with no mutex for the uncached queries.
     * A stripe no measured request fell in gets the measured means of all cached requests.
     */
    String scenarioKeys(ResultCache cache, double targetUs) {
      long total = uncachedCount;
      for (long c : count) {
        total += c;
      }
      double uncachedShare = (double) uncachedCount / total;
      double[] share = new double[count.length];
      for (Map.Entry<String, Double> e : termShares.entrySet()) {
        share[cache.stripeIndex(ResultCache.key(ShardedIndex.BODY, e.getKey(), K))] += e.getValue();
      }
      long cachedCount = total - uncachedCount;
      double allService = 0;
      double allHold = 0;
      for (int s = 0; s < count.length; s++) {
        allService += serviceSum[s];
        allHold += holdSum[s];
      }
      StringJoiner paths = new StringJoiner(", ");
      StringJoiner services = new StringJoiner(", ");
      StringJoiner holds = new StringJoiner(", ");
      for (int s = 0; s < count.length; s++) {
        double p = share[s] * (1 - uncachedShare);
        double svc = count[s] > 0 ? serviceSum[s] / count[s] : allService / cachedCount;
        double hld = count[s] > 0 ? holdSum[s] / count[s] : allHold / cachedCount;
        paths.add(String.format(Locale.ROOT, "%.5f", p));
        services.add(String.format(Locale.ROOT, "%.1f", svc / 1e3));
        holds.add(String.format(Locale.ROOT, "%.1f", Math.min(hld, svc) / 1e3));
      }
      if (uncachedCount > 0) {
        paths.add(String.format(Locale.ROOT, "%.5f", uncachedShare));
        services.add(String.format(Locale.ROOT, "%.1f", uncachedSum / uncachedCount / 1e3));
        holds.add("0");
      }
      // the shares are rounded: put what rounding lost on the largest, so they sum to 1
      String[] p = paths.toString().split(", ");
      double sum = 0;
      int largest = 0;
      for (int i = 0; i < p.length; i++) {
        sum += Double.parseDouble(p[i]);
        if (Double.parseDouble(p[i]) > Double.parseDouble(p[largest])) {
          largest = i;
        }
      }
      p[largest] = String.format(Locale.ROOT, "%.5f", Double.parseDouble(p[largest]) + 1 - sum);
      return String.format(Locale.ROOT, "service_mean_us = %.1f%nslo_us = %.0f%n"
              + "paths = %s%npath_service_us = %s%npath_hold_us = %s%n",
          service.getMean() / 1e3, targetUs, String.join(", ", p), services, holds);
    }
  }

  /**
   * Serves {@code mix} for {@code seconds} from one thread, as {@link SearchEngine#search} does,
   * timing each request and the part of it under its stripe lock.
   */
  private static AsServed asServed(SearchEngine engine, QueryMix mix, double seconds,
      SplittableRandom random) throws InvalidQueryException {
    ResultCache cache = engine.cache();
    Map<String, Double> shares = mix.termShares();
    AsServed a = new AsServed(cache.stripeCount(), shares);
    long end = System.nanoTime() + (long) (seconds * 1e9);
    while (System.nanoTime() - end < 0) {
      String q = mix.next(random);
      long t0 = System.nanoTime();
      Query parsed = engine.parse(q);
      int stripe = -1;
      long held = 0;
      boolean hit = false;
      long pin = System.nanoTime();
      ShardedIndex.View pinned = engine.index().acquire();
      long waited = System.nanoTime() - pin; // mostly behind a refresh: lock queueing, not service
      a.shardWait.recordValue(Math.max(1, waited));
      try (ShardedIndex.View view = pinned) {
        if (parsed instanceof TermQuery single) {
          Term t = single.getTerm();
          String key = ResultCache.key(t.field(), t.text(), K);
          stripe = cache.stripeIndex(key);
          long hits = cache.hits();
          long h0 = System.nanoTime();
          cache.get(key, view.generations(), () -> engine.run(view, parsed, K));
          held = System.nanoTime() - h0;
          hit = cache.hits() > hits;
        } else {
          engine.run(view, parsed, K);
        }
      }
      long service = System.nanoTime() - t0 - waited;
      a.service.recordValue(service);
      if (stripe < 0) {
        a.uncachedCount++;
        a.uncachedSum += service;
      } else {
        a.count[stripe]++;
        a.serviceSum[stripe] += service;
        a.holdSum[stripe] += held;
        a.hold.recordValue(held);
        (hit ? a.hitHold : a.missHold).recordValue(held);
      }
    }
    return a;
  }

  /** The time one search holds one shard lock: lock, pin the reader, unlock (mean of many). */
  private static double shardPinNanos(ShardedIndex index) throws java.io.IOException {
    Shard shard = index.shard(0);
    double best = Double.MAX_VALUE;
    for (int round = 0; round < 5; round++) {
      int n = 1_000_000;
      long t = System.nanoTime();
      for (int i = 0; i < n; i++) {
        shard.acquire().reader().decRef();
      }
      best = Math.min(best, (System.nanoTime() - t) / (double) n);
    }
    return best;
  }

  /**
   * Mean search time of the heavy mix (cache bypassed) with the search bounded by a budget nothing
   * reaches, and unbounded: the best of nine alternating rounds each, on the same queries.
   */
  private static double[] cancellationCost(SearchEngine bounded, SearchEngine unbounded,
      QueryMix mix, int queries, SplittableRandom random) throws Exception {
    List<String> qs = new ArrayList<>();
    for (int i = 0; i < queries / 2; i++) {
      qs.add(mix.next(random));
    }
    RequestBudget ample = RequestBudget.of(TimeUnit.HOURS.toNanos(1));
    double bestBounded = Double.MAX_VALUE;
    double bestUnbounded = Double.MAX_VALUE;
    for (int round = 0; round < 9; round++) {
      for (SearchEngine e : round % 2 == 0 ? List.of(bounded, unbounded)
          : List.of(unbounded, bounded)) {
        long t = System.nanoTime();
        ScopedValue.where(RequestBudget.CURRENT, ample).call(() -> {
          for (String q : qs) {
            uncached(e, q);
          }
          return null;
        });
        double mean = (System.nanoTime() - t) / (double) qs.size();
        if (e == bounded) {
          bestBounded = Math.min(bestBounded, mean);
        } else {
          bestUnbounded = Math.min(bestUnbounded, mean);
        }
      }
    }
    return new double[] {bestBounded, bestUnbounded};
  }

  private static String ms(double nanos) {
    return nanos >= 1e6 ? String.format(Locale.ROOT, "%.2f ms", nanos / 1e6)
        : String.format(Locale.ROOT, "%.0f us", nanos / 1e3);
  }

  private static void out(String format, Object... args) {
    System.out.println(String.format(Locale.ROOT, format, args));
  }
}
