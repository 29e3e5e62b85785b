package io.spillway.lucene;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.random.RandomGenerator;
import org.apache.lucene.analysis.CharArraySet;
import org.apache.lucene.analysis.en.EnglishAnalyzer;
import org.apache.lucene.index.IndexReader;
import org.apache.lucene.index.MultiTerms;
import org.apache.lucene.index.Terms;
import org.apache.lucene.index.TermsEnum;
import org.apache.lucene.queryparser.classic.QueryParser;
import org.apache.lucene.util.BytesRef;

/**
 * The queries clients send, drawn from the corpus itself.
 *
 * <ul>
 *   <li>{@link #singleTerms}: one term per query, drawn with probability proportional to its
 *       number of occurrences in the indexed glosses, stop words excluded: Protego's workload
 *       (protego-nsdi23 §5.2, "sampled from the word distribution in the data set excluding stop
 *       words"). Frequent terms are frequent queries and have long postings, so the popular
 *       queries are also the expensive ones.
 *   <li>{@link #heavy}: the same, with a tenth of the queries a two- or three-word phrase taken
 *       from a random gloss (positions must match: a heavier scorer) and a tenth a prefix query of
 *       a drawn term's first three letters (expands to many terms): a heavy tail beyond the
 *       paper's workload.
 * </ul>
 *
 * <p>Queries are in the classic syntax the service parses, escaped where needed. Immutable and
 * thread-safe; the caller owns the random generator, which makes a run reproducible from its seed.
 */
public final class QueryMix {

  /** Share of phrase queries in {@link #heavy}. */
  public static final double PHRASE_SHARE = 0.1;
  /** Share of prefix queries in {@link #heavy}. */
  public static final double PREFIX_SHARE = 0.1;
  /** Letters kept of a term for a prefix query. */
  static final int PREFIX_LENGTH = 3;

  private static final CharArraySet STOP_WORDS = EnglishAnalyzer.ENGLISH_STOP_WORDS_SET;

  private final String[] terms;
  private final long[] cumulative; // cumulative[i] = occurrences of terms[0..i]
  private final List<Corpus.Doc> docs; // null: single terms only

  private QueryMix(String[] terms, long[] cumulative, List<Corpus.Doc> docs) {
    this.terms = terms;
    this.cumulative = cumulative;
    this.docs = docs;
  }

  /** Single terms drawn from the term distribution of {@code reader}'s glosses. */
  public static QueryMix singleTerms(IndexReader reader) {
    return fromTerms(reader, null);
  }

  /** {@link #singleTerms} with phrases from {@code corpus} and prefixes mixed in. */
  public static QueryMix heavy(IndexReader reader, Corpus corpus) {
    return fromTerms(reader, Objects.requireNonNull(corpus, "corpus").docs());
  }

  private static QueryMix fromTerms(IndexReader reader, List<Corpus.Doc> docs) {
    List<String> names = new ArrayList<>();
    long[] sums = new long[1024];
    long total = 0;
    try {
      Terms field = MultiTerms.getTerms(reader, ShardedIndex.BODY);
      if (field == null) {
        throw new IllegalArgumentException("the index has no " + ShardedIndex.BODY + " terms");
      }
      TermsEnum it = field.iterator();
      for (BytesRef t; (t = it.next()) != null; ) {
        String term = t.utf8ToString();
        if (STOP_WORDS.contains(term)) {
          continue;
        }
        total += it.totalTermFreq();
        if (names.size() == sums.length) {
          sums = Arrays.copyOf(sums, sums.length * 2);
        }
        sums[names.size()] = total;
        names.add(term);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    if (names.isEmpty()) {
      throw new IllegalArgumentException("the index has no terms to draw queries from");
    }
    return new QueryMix(names.toArray(String[]::new), Arrays.copyOf(sums, names.size()), docs);
  }

  /** Distinct terms queries are drawn from. */
  public int vocabulary() {
    return terms.length;
  }

  /**
   * The share of single-term queries that ask for each term, keyed by the term as indexed (before
   * escaping), in the order of the index's terms.
   */
  Map<String, Double> termShares() {
    Map<String, Double> shares = new LinkedHashMap<>();
    double total = cumulative[cumulative.length - 1];
    long previous = 0;
    for (int i = 0; i < terms.length; i++) {
      shares.put(terms[i], (cumulative[i] - previous) / total);
      previous = cumulative[i];
    }
    return shares;
  }

  /** The next query. */
  public String next(RandomGenerator random) {
    if (docs != null) {
      double u = random.nextDouble();
      if (u < PHRASE_SHARE) {
        String phrase = phrase(random);
        if (phrase != null) {
          return phrase;
        }
      } else if (u < PHRASE_SHARE + PREFIX_SHARE) {
        String term = term(random);
        if (term.length() > PREFIX_LENGTH) {
          return QueryParser.escape(term.substring(0, PREFIX_LENGTH)) + "*";
        }
        return QueryParser.escape(term);
      }
    }
    return QueryParser.escape(term(random));
  }

  /** A term drawn in proportion to its occurrences. */
  String term(RandomGenerator random) {
    long x = random.nextLong(cumulative[cumulative.length - 1]);
    int i = Arrays.binarySearch(cumulative, x + 1);
    return terms[i >= 0 ? i : -i - 1];
  }

  /**
   * Two or three consecutive words of a random gloss, quoted; stop words stay in (the parser
   * drops them and keeps their positions, so the phrase matches its gloss). Null if the gloss is
   * too short.
   */
  private String phrase(RandomGenerator random) {
    String[] words = docs.get(random.nextInt(docs.size())).body().split("\\s+");
    int length = 2 + random.nextInt(2);
    if (words.length < length) {
      return null;
    }
    int start = random.nextInt(words.length - length + 1);
    StringBuilder q = new StringBuilder("\"");
    for (int i = start; i < start + length; i++) {
      String w = words[i].replaceAll("[^\\p{L}\\p{N}'-]", "");
      if (!w.isEmpty()) {
        q.append(q.length() > 1 ? " " : "").append(w);
      }
    }
    return q.length() > 1 ? q.append('"').toString() : null;
  }
}
