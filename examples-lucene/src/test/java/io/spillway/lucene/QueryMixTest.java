package io.spillway.lucene;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.Ticker;
import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;
import org.apache.lucene.analysis.en.EnglishAnalyzer;
import org.apache.lucene.index.Term;
import org.apache.lucene.search.PhraseQuery;
import org.apache.lucene.search.PrefixQuery;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.TermQuery;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class QueryMixTest {

  private static ShardedIndex index;
  private static SearchEngine engine;

  @BeforeAll
  static void build() {
    index = Fixtures.index(Ticker.system());
    engine = new SearchEngine(index, Ticker.system());
  }

  @AfterAll
  static void close() throws Exception {
    index.close();
  }

  @Test
  void singleTermsFollowTheCorpusTermFrequenciesWithoutStopWords() throws Exception {
    QueryMix mix;
    try (ShardedIndex.View view = index.acquire()) {
      mix = QueryMix.singleTerms(view.reader());
      SplittableRandom random = new SplittableRandom(Fixtures.seed());
      Map<String, Integer> drawn = new HashMap<>();
      for (int i = 0; i < 20_000; i++) {
        String q = mix.next(random);
        assertFalse(EnglishAnalyzer.ENGLISH_STOP_WORDS_SET.contains(q), q);
        drawn.merge(q, 1, Integer::sum);
      }
      // the most drawn term is a frequent one: drawn in proportion to its occurrences
      String top = drawn.entrySet().stream().max(Map.Entry.comparingByValue()).orElseThrow().getKey();
      long topFreq = view.reader().totalTermFreq(new Term(ShardedIndex.BODY, top));
      long hapax = drawn.entrySet().stream().filter(e -> e.getValue() == 1).count();
      assertTrue(topFreq > 50, top + " occurs " + topFreq + " times");
      assertTrue(drawn.get(top) > 20 * 20_000 / mix.vocabulary(), top + ": " + drawn.get(top));
      assertTrue(hapax > 100, "rare terms are drawn too: " + hapax);
    }
    SplittableRandom random = new SplittableRandom(Fixtures.seed());
    for (int i = 0; i < 200; i++) {
      String q = mix.next(random);
      Query parsed = engine.parse(q);
      assertTrue(parsed instanceof TermQuery, q + " -> " + parsed);
      assertTrue(engine.search(q, 10).totalHits() > 0, q);
    }
  }

  @Test
  void theHeavyMixAddsPhrasesAndPrefixesThatAllParseAndMatch() throws Exception {
    QueryMix mix;
    try (ShardedIndex.View view = index.acquire()) {
      mix = QueryMix.heavy(view.reader(), Fixtures.corpus());
    }
    SplittableRandom random = new SplittableRandom(Fixtures.seed());
    int phrases = 0;
    int prefixes = 0;
    int n = 1_000;
    for (int i = 0; i < n; i++) {
      String q = mix.next(random);
      Query parsed = engine.parse(q);
      if (parsed instanceof PrefixQuery) {
        prefixes++;
      } else if (q.startsWith("\"")) {
        phrases++;
        // its own gloss matches it (a phrase of stop words alone parses to nothing)
        assertTrue(parsed instanceof PhraseQuery || parsed instanceof TermQuery
            || engine.search(q, 1).totalHits() == 0, q + " -> " + parsed);
      }
      if (!(q.startsWith("\"") && !(parsed instanceof PhraseQuery || parsed instanceof TermQuery))) {
        assertTrue(engine.search(q, 10).totalHits() > 0, q + " -> " + parsed);
      }
    }
    assertTrue(phrases > n / 20 && phrases < n / 5, "phrases: " + phrases);
    assertTrue(prefixes > n / 20 && prefixes < n / 5, "prefixes: " + prefixes);
    assertEquals(3, QueryMix.PREFIX_LENGTH);
  }
}
