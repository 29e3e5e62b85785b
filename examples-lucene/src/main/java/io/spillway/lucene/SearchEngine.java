package io.spillway.lucene;

import io.spillway.api.BudgetExceededException;
import io.spillway.api.ServiceTimeTracker;
import io.spillway.api.Ticker;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.LongAdder;
import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.document.Document;
import org.apache.lucene.index.ExitableDirectoryReader;
import org.apache.lucene.index.StoredFields;
import org.apache.lucene.index.Term;
import org.apache.lucene.queryparser.classic.ParseException;
import org.apache.lucene.queryparser.classic.QueryParser;
import org.apache.lucene.queryparser.classic.Token;
import org.apache.lucene.search.AutomatonQuery;
import org.apache.lucene.search.FuzzyQuery;
import org.apache.lucene.search.FuzzyTermsEnum;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.MultiTermQuery;
import org.apache.lucene.search.MultiPhraseQuery;
import org.apache.lucene.search.PhraseQuery;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.QueryVisitor;
import org.apache.lucene.search.RegexpQuery;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.util.automaton.Automaton;
import org.apache.lucene.util.automaton.Operations;
import org.apache.lucene.util.automaton.RegExp;
import org.apache.lucene.util.automaton.TooComplexToDeterminizeException;

/**
 * Top-k search over a {@link ShardedIndex}, the service without its transport: checks the
 * request, parses the query (Lucene's classic syntax, default field {@value ShardedIndex#BODY}),
 * pins every shard's reader (under each shard's lock, {@link Shard}) and searches them as one
 * index. A single-term query is answered from the {@link ResultCache} (under its stripe's lock)
 * when the shards have not been refreshed since it was last searched. The search itself is
 * bounded by the request's budget ({@link BudgetTimeout}).
 *
 * <p>Bad input is refused with an {@link InvalidQueryException} whose message says what is wrong,
 * before any lock is taken: an empty query, one longer than {@value #MAX_QUERY_BYTES} bytes of
 * UTF-8, a {@code k} outside 1..{@value #MAX_K}, a field the index does not have, a phrase in
 * the {@value ShardedIndex#ID} field (indexed without positions), malformed syntax (including a
 * leading wildcard, a regular expression whose automaton would have too many states or
 * transitions or be too costly to determinize, a fuzzy term longer than {@value
 * #MAX_FUZZY_CHARS} characters or asked for two edits past {@value #MAX_TWO_EDIT_FUZZY_BYTES}
 * bytes, and a wildcard term with more than {@value #MAX_WILDCARD_STARS} {@code *}s, refused
 * before their automata are built: that work comes before the budget is first checked). A bare
 * {@code ~} gives a fuzzy term past {@value #MAX_TWO_EDIT_FUZZY_BYTES} bytes one edit. A query
 * that analyses to nothing (only stop words) matches nothing and is answered with no hits. A query
 * that matches everything ({@code *:*}) is bounded by {@code k}.
 *
 * <p>Thread-safe.
 */
public final class SearchEngine {

  /** The longest query accepted, in bytes of UTF-8. */
  public static final int MAX_QUERY_BYTES = 1024;
  /** The most hits a request may ask for. */
  public static final int MAX_K = 1000;
  /** The fields a query may name. */
  public static final Set<String> FIELDS =
      Set.of(ShardedIndex.BODY, ShardedIndex.TITLE, ShardedIndex.ID);

  /**
   * The fields indexed with positions, where a phrase can be searched; {@value ShardedIndex#ID}
   * is one untokenized value, and Lucene fails a phrase query on it as it searches.
   */
  private static final Set<String> POSITIONS = Set.of(ShardedIndex.BODY, ShardedIndex.TITLE);
  private static final Set<String> STORED = Set.of(ShardedIndex.ID, ShardedIndex.TITLE);
  private static final int TITLE_CHARS = 100;

  /** One hit: the document's corpus id, its score and its title (cut to 100 characters). */
  public record Hit(int id, float score, String title) { }

  /**
   * The hits, best first, and how many documents matched (a lower bound past 1,000). Immutable: a
   * single-term query's result is cached and handed to every request for that term.
   */
  public record Result(List<Hit> hits, long totalHits) {
    public Result {
      hits = List.copyOf(hits);
    }
  }

  private final ShardedIndex index;
  private final Analyzer analyzer = ShardedIndex.analyzer();
  private final Ticker ticker;
  private final ResultCache cache;
  private final ServiceTimeTracker searchTimes = new ServiceTimeTracker();
  private final LongAdder cancelled = new LongAdder();
  private final boolean boundedSearches;

  /**
   * A search engine over {@code index}, measuring time with {@code ticker} (the clock of the
   * requests' budgets; its result cache's stripe locks read it), whose searches stop when their
   * budget does.
   */
  public SearchEngine(ShardedIndex index, Ticker ticker) {
    this(index, ticker, true);
  }

  /**
   * As above; with {@code boundedSearches} false a search runs to the end whatever its budget, and
   * the budget is spent only at the locks, as in protego-nsdi23 §3.2 (the baseline that the
   * cancellation is measured against).
   */
  public SearchEngine(ShardedIndex index, Ticker ticker, boolean boundedSearches) {
    this.index = Objects.requireNonNull(index, "index");
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    this.cache = new ResultCache(ticker);
    this.boundedSearches = boundedSearches;
  }

  /** Whether a search stops when its request's budget runs out. */
  public boolean boundedSearches() {
    return boundedSearches;
  }

  /** The index searched. */
  public ShardedIndex index() {
    return index;
  }

  /**
   * The {@code k} best documents for {@code query}.
   *
   * @throws InvalidQueryException if the request is malformed (nothing was locked or searched),
   *     or an automaton its search builds as it starts is too complex for Lucene to determinize
   * @throws BudgetExceededException if a lock's queue, or the search itself, would outlast the
   *     budget of the request in scope
   */
  public Result search(String query, int k) throws InvalidQueryException {
    checkK(k);
    Query parsed = parse(query);
    try (ShardedIndex.View view = index.acquire()) {
      if (parsed instanceof TermQuery single) {
        Term t = single.getTerm();
        return cache.get(ResultCache.key(t.field(), t.text(), k), view.generations(),
            () -> run(view, parsed, k));
      }
      return run(view, parsed, k);
    }
  }

  /** The result cache of single-term queries. */
  ResultCache cache() {
    return cache;
  }

  /**
   * Searches {@code view}, bounded by the budget in scope ({@link BudgetTimeout}): a search that
   * outruns it is stopped and its partial hits dropped (a response holds the complete result or a
   * reject, as in protego-nsdi23 §5.2).
   */
  Result run(ShardedIndex.View view, Query query, int k) throws InvalidQueryException {
    long start = ticker.read();
    BudgetTimeout timeout = boundedSearches
        ? BudgetTimeout.forBudgetInScope(ticker, start, searchTimes.p99Nanos()) : null;
    try {
      IndexSearcher searcher = view.newSearcher(timeout, enumeratesTerms(query));
      TopDocs top = searcher.search(query, k);
      if (searcher.timedOut()) {
        throw cancelled(timeout);
      }
      return new Result(hits(searcher, top), top.totalHits.value());
    } catch (ExitableDirectoryReader.ExitingReaderException e) { // while enumerating terms
      throw cancelled(timeout);
    } catch (IndexSearcher.TooManyClauses e) {
      throw new InvalidQueryException("query expands to too many terms (more than "
          + IndexSearcher.getMaxClauseCount() + "); use a longer prefix");
    } catch (TooComplexToDeterminizeException | FuzzyTermsEnum.FuzzyTermsException e) {
      // an automaton built as the search starts (a fuzzy term's Levenshtein automata) that Lucene
      // will not determinize: the query's shape, not the server, is at fault
      throw new InvalidQueryException("query too complex to run: " + firstLine(e.getMessage()));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } finally {
      // cancelled searches count at the time they ran: the tail above the limit stays in the
      // estimate, which would otherwise shrink with every search it cuts short
      searchTimes.record(ticker.read() - start);
    }
  }

  /**
   * Whether {@code query} enumerates a field's terms to find the ones it matches (prefix,
   * wildcard, fuzzy, regular expression, range: Lucene's automaton queries say so to a {@link
   * QueryVisitor}), which the budget must bound as well as the scoring.
   */
  static boolean enumeratesTerms(Query query) {
    boolean[] enumerates = new boolean[1];
    query.visit(new QueryVisitor() {
      @Override
      public void consumeTermsMatching(Query q, String field,
          java.util.function.Supplier<org.apache.lucene.util.automaton.ByteRunAutomaton> automaton) {
        enumerates[0] = true;
      }

      @Override
      public QueryVisitor getSubVisitor(org.apache.lucene.search.BooleanClause.Occur occur,
          Query parent) {
        return this;
      }
    });
    return enumerates[0];
  }

  private BudgetExceededException cancelled(BudgetTimeout timeout) {
    cancelled.increment();
    return timeout.exceeded();
  }

  /** Searches stopped because their budget ran out. */
  public long cancelledSearches() {
    return cancelled.sum();
  }

  /** The running p99 of search time, the allowance a search gets beyond its remaining budget. */
  public long p99SearchNanos() {
    return searchTimes.p99Nanos();
  }

  private static List<Hit> hits(IndexSearcher searcher, TopDocs top) throws IOException {
    List<Hit> hits = new ArrayList<>(top.scoreDocs.length);
    StoredFields stored = searcher.storedFields();
    for (ScoreDoc sd : top.scoreDocs) {
      Document d = stored.document(sd.doc, STORED);
      String title = d.get(ShardedIndex.TITLE);
      if (title.length() > TITLE_CHARS) {
        title = title.substring(0, TITLE_CHARS - 1) + "…";
      }
      hits.add(new Hit(Integer.parseInt(d.get(ShardedIndex.ID)), sd.score, title));
    }
    return hits;
  }

  static void checkK(int k) throws InvalidQueryException {
    if (k < 1 || k > MAX_K) {
      throw new InvalidQueryException("k must be between 1 and " + MAX_K + ", was " + k);
    }
  }

  /**
   * Parses {@code query} as a request would be parsed.
   *
   * @throws InvalidQueryException if it is empty, too long, malformed or names an unknown field
   */
  public Query parse(String query) throws InvalidQueryException {
    if (query == null || query.isBlank()) {
      throw new InvalidQueryException("query is empty");
    }
    int bytes = utf8Length(query);
    if (bytes > MAX_QUERY_BYTES) {
      throw new InvalidQueryException("query is " + bytes + " bytes long; at most "
          + MAX_QUERY_BYTES + " bytes are accepted");
    }
    Query parsed;
    try {
      parsed = new Parser(analyzer).parse(query); // not thread-safe: one each
    } catch (ParseException e) {
      throw new InvalidQueryException("malformed query: " + firstLine(e.getMessage()));
    } catch (IndexSearcher.TooManyClauses e) {
      throw new InvalidQueryException("query has too many clauses (more than "
          + IndexSearcher.getMaxClauseCount() + ")");
    } catch (TooComplexToDeterminizeException e) {
      throw new InvalidQueryException("malformed query: regular expression too complex");
    } catch (IllegalArgumentException e) {
      throw new InvalidQueryException("malformed query: " + firstLine(e.getMessage()));
    }
    Set<String> unknown = new TreeSet<>();
    Set<String> phrased = new TreeSet<>();
    parsed.visit(new QueryVisitor() {
      @Override
      public boolean acceptField(String field) {
        if (!FIELDS.contains(field)) {
          unknown.add(field);
        }
        return true;
      }

      @Override
      public void consumeTerms(Query query, Term... terms) {
        if ((query instanceof PhraseQuery || query instanceof MultiPhraseQuery)
            && terms.length > 0 && !POSITIONS.contains(terms[0].field())) {
          phrased.add(terms[0].field());
        }
      }

      @Override
      public QueryVisitor getSubVisitor(org.apache.lucene.search.BooleanClause.Occur occur,
          Query parent) {
        return this; // the default skips MUST_NOT clauses, whose fields must exist as well
      }
    });
    if (!unknown.isEmpty()) {
      throw new InvalidQueryException("unknown field" + (unknown.size() > 1 ? "s " : " ")
          + String.join(", ", unknown.stream().map(f -> "'" + f + "'").toList())
          + "; the fields are " + String.join(", ", new TreeSet<>(FIELDS)));
    }
    if (!phrased.isEmpty()) {
      String field = phrased.iterator().next();
      throw new InvalidQueryException("a phrase cannot be searched in field '" + field
          + "', which holds one token per document; search " + field + ":VALUE");
    }
    return parsed;
  }

  /**
   * The most automaton states a regular expression may compile to: as many as Lucene lets a
   * determinization work through by default ({@link Operations#DEFAULT_DETERMINIZE_WORK_LIMIT}).
   * It bounds the building of the automaton, which comes before its determinization and which
   * {@link #REGEXP_DETERMINIZE_WORK_LIMIT} does not bound.
   */
  static final long MAX_REGEXP_STATES = Operations.DEFAULT_DETERMINIZE_WORK_LIMIT;

  /**
   * The most transitions a regular expression's automaton may have, estimated from its parse tree
   * ({@link #automatonTransitions}): each character range counts its characters' UTF-8 bytes
   * ({@code [a-z]} 1, a CJK character 3, any character 10, {@link #rangeBytes}), a repeat
   * multiplies, and a part that can match the empty string, joined to what follows it, links every
   * accept state before it to that too: a run of n such parts counts about n²/2 ({@code
   * /(a*){1000}/}, 11 bytes, half a million transitions and 0.6 s to build). Building the
   * automaton, and then its UTF-8 form, which a regular expression query compiles as the query is
   * parsed, before the budget is first checked, costs about 1 µs a transition on this service's
   * machine (docs/results/lucene.md §5): the state cap ({@link
   * #MAX_REGEXP_STATES}) alone admits {@code /[acegikmoqsuwy]{4999}/}, 13 ranges 4,999 times, at
   * 60 ms, and {@code /.{4999}/} at 16 ms. At the cap, {@code /[a-z]{1000}/} or {@code
   * /[acegikmoqsuwy]{76}/}, it is 1 to 2 ms; {@code /[a-z]{1,100}/} counts 100.
   */
  static final long MAX_REGEXP_TRANSITIONS = 1_000;

  /**
   * The determinization work a regular expression's automaton may take, in Lucene's units ({@link
   * Operations#determinize}), for an automaton whose transitions split the characters at up to
   * {@value #REGEXP_DETERMINIZE_BOUNDARIES} places. A {@link RegexpQuery} determinizes its
   * automaton as it is built, so as the query is parsed, before the budget's timeout is first
   * checked. Under Lucene's default limit ({@link Operations#DEFAULT_DETERMINIZE_WORK_LIMIT},
   * 10,000) an expression whose automaton blows up, such as {@code (a|b)*a(a|b){12}}, is accepted
   * after 15 to 20 ms on this service's machine, and one just over it is refused after 20 to 80 ms.
   * The work is spent whether the expression is then refused or not, so the limit bounds both.
   * Expressions that describe words ({@code colou?r}, {@code [a-z]+ing}, {@code .*ation}, {@code
   * (un|re)?[a-z]+(ing|ed|s)?}) take a small fraction of it and well under a millisecond.
   */
  static final int REGEXP_DETERMINIZE_WORK_LIMIT = 250;

  /**
   * The character boundaries ({@link Automaton#getStartPoints}) up to which a regular expression's
   * determinization gets all of {@link #REGEXP_DETERMINIZE_WORK_LIMIT}; past them it gets
   * proportionally less ({@link #determinizeWorkLimit}). Lucene counts a unit of work per
   * automaton state it visits, but a visit costs in proportion to the boundaries between the
   * character ranges on the state's transitions, so a class of many separate ranges makes each
   * unit costly: {@code /[acegikmoqsuwy]*a[acegikmoqsuwy]{20}/}, 27 boundaries, takes 3 to 5 ms to
   * reach 250 units, and a class of 30 ranges 9 ms, against 0.4 ms for {@code [a-z]*a[a-z]{10}},
   * 4 boundaries (docs/results/lucene.md §5). Scaled down past 8 boundaries, the first is refused
   * after 74 units and 2.2 ms at best, the second after 32 and 3.1 ms at best; the most costly
   * expression of that class accepted, {@code {5}} in place of {@code {20}}, takes about 2 ms,
   * most of it compiling the automaton it determinized to.
   */
  static final int REGEXP_DETERMINIZE_BOUNDARIES = 8;

  /**
   * The determinization work a regular expression's automaton whose transitions split the
   * characters at {@code boundaries} places may take: {@link #REGEXP_DETERMINIZE_WORK_LIMIT},
   * scaled down past {@link #REGEXP_DETERMINIZE_BOUNDARIES} boundaries, and at least 1.
   */
  static int determinizeWorkLimit(int boundaries) {
    long scaled = (long) REGEXP_DETERMINIZE_WORK_LIMIT * REGEXP_DETERMINIZE_BOUNDARIES
        / Math.max(1, boundaries);
    return (int) Math.max(1, Math.min(REGEXP_DETERMINIZE_WORK_LIMIT, scaled));
  }

  /**
   * The longest term, in characters, a fuzzy query may have. A fuzzy query builds its Levenshtein
   * automata (one per edit distance up to its own) before it enumerates a single term, so before
   * the budget's {@link org.apache.lucene.index.QueryTimeout} is first checked, and their cost
   * grows with the term: about 0.02 ms a character at one edit and 0.2 ms at two on this
   * service's machine, 197 ms (median) for the 1,000 characters a query may hold
   * (docs/results/lucene.md §5). The cap is the longest term whose automata take under 1 ms at one
   * edit (a median of 0.52 ms at 32 characters), and it is above the longest term indexed (31
   * characters): a term more edits longer than any indexed one matches nothing, so it refuses no
   * query that could find a document at one edit. At two edits the automata take more than 1 ms
   * from 8 characters on, ordinary words, and 6.6 ms (median) at 32: {@link
   * #MAX_TWO_EDIT_FUZZY_BYTES} bounds them.
   */
  static final int MAX_FUZZY_CHARS = 32;

  /**
   * The longest term, in bytes of UTF-8, a fuzzy query may search with two edits. Two edits'
   * Levenshtein automaton, and its UTF-8 form, which a fuzzy query builds before the budget is
   * first checked, cost about 0.2 ms a byte of the term on this service's machine, whatever its
   * script (most of it Lucene removing the automaton's dead states and sorting its transitions):
   * 32 ASCII letters 6.8 ms and 32 CJK characters (96 bytes) 20 ms, against under 0.8 ms for
   * 32 ASCII letters at one edit (docs/results/lucene.md §5). Fifteen bytes keep two edits for
   * English words of up to 15 letters ({@code internationaliz~}, 2.6–4 ms, the costliest
   * fuzzy term accepted); a longer term asked for two edits ({@code ~2}) is refused, and one that
   * asked for no number ({@code ~}, the parser's default of two) gets one, as Elasticsearch's
   * {@code AUTO} fuzziness picks the edits from the term's length.
   */
  static final int MAX_TWO_EDIT_FUZZY_BYTES = 15;

  /**
   * The most {@code *} wildcards a wildcard term may have. A wildcard query determinizes its
   * automaton as it is parsed, before the budget's timeout is first checked, and each {@code *}
   * multiplies the work: about 0.9 ms for three with letters between them on this service's
   * machine, 1.7 ms for four, 71 ms for 32, and 61–78 ms for a term of 64 or more, which
   * Lucene refuses only once the determinization has used up its work limit
   * (docs/results/lucene.md §5), against a few microseconds for a prefix. A {@code ?} matches one character and costs little: 500 of them, a whole query's
   * worth, about 3 ms.
   */
  static final int MAX_WILDCARD_STARS = 3;

  /** The unescaped {@code *} wildcards of a wildcard term ({@code \} escapes a character). */
  static int wildcardStars(String text) {
    int stars = 0;
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c == '\\') {
        i++; // the escaped character is a literal
      } else if (c == '*') {
        stars++;
      }
    }
    return stars;
  }

  /**
   * The classic parser, refusing a regular expression whose automaton would be too large (more
   * than {@value #MAX_REGEXP_STATES} states or about {@value #MAX_REGEXP_TRANSITIONS}
   * transitions) or too costly to determinize (up to {@value #REGEXP_DETERMINIZE_WORK_LIMIT} units
   * of work, fewer for many character ranges), a fuzzy term longer than {@value #MAX_FUZZY_CHARS}
   * characters, or asked for two edits and longer than {@value #MAX_TWO_EDIT_FUZZY_BYTES} bytes,
   * and a wildcard term with more than {@value #MAX_WILDCARD_STARS} {@code *}s, before their
   * automata are built, as the query is parsed or before a search first checks its timeout, where
   * no budget bounds the work. Lucene
   * bounds the determinization of a regular expression's automaton, not the building of the
   * automaton it determinizes, and a repeat of a repeat multiplies: {@code /(a{1000}){1000}/}
   * builds a million states, {@code /a{2147483647}/} more than the heap holds.
   */
  private static final class Parser extends QueryParser {

    /** Whether the fuzzy term being parsed has a bare {@code ~}, no edits asked for. */
    private boolean bareFuzzy;

    Parser(Analyzer analyzer) {
      super(ShardedIndex.BODY, analyzer);
    }

    @Override
    protected float getFuzzyDistance(Token fuzzySlop, String termStr) {
      // called as the fuzzy term is parsed, just before newFuzzyQuery
      bareFuzzy = fuzzySlop.image.equals("~");
      return super.getFuzzyDistance(fuzzySlop, termStr);
    }

    @Override
    protected Query newFuzzyQuery(Term term, float minimumSimilarity, int prefixLength) {
      String text = term.text();
      int length = text.codePointCount(0, text.length());
      int edits = FuzzyQuery.floatToEdits(minimumSimilarity, length);
      if (length > MAX_FUZZY_CHARS && edits > 0) {
        throw new IllegalArgumentException("fuzzy term is " + length + " characters long; at most "
            + MAX_FUZZY_CHARS + " are accepted");
      }
      int bytes = utf8Length(text);
      if (edits > 1 && bytes > MAX_TWO_EDIT_FUZZY_BYTES) {
        if (!bareFuzzy) {
          throw new IllegalArgumentException("fuzzy term is " + bytes + " bytes long (UTF-8); two "
              + "edits are accepted up to " + MAX_TWO_EDIT_FUZZY_BYTES + " bytes, ask for one (~1)");
        }
        minimumSimilarity = 1; // one edit, as the bare '~' of a long term means
      }
      return super.newFuzzyQuery(term, minimumSimilarity, prefixLength);
    }

    @Override
    protected Query newWildcardQuery(Term t) {
      int stars = wildcardStars(t.text());
      if (stars > MAX_WILDCARD_STARS) {
        throw new IllegalArgumentException("wildcard term has " + stars + " '*' wildcards; at most "
            + MAX_WILDCARD_STARS + " are accepted");
      }
      return super.newWildcardQuery(t);
    }

    @Override
    protected Query newRegexpQuery(Term regexp) {
      // the syntax RegexpQuery parses the text with, as the parser's own newRegexpQuery asks it
      RegExp r = new RegExp(regexp.text(), RegExp.ALL);
      if (automatonStates(r) > MAX_REGEXP_STATES) {
        throw new IllegalArgumentException("regular expression too complex");
      }
      long transitions = automatonTransitions(r);
      if (transitions > MAX_REGEXP_TRANSITIONS) {
        throw new IllegalArgumentException("regular expression too complex: about " + transitions
            + " transitions (character ranges in UTF-8 bytes, times their repeats); at most "
            + MAX_REGEXP_TRANSITIONS + " are accepted");
      }
      Automaton nfa = r.toAutomaton();
      int boundaries = nfa.getStartPoints().length;
      int workLimit = determinizeWorkLimit(boundaries);
      Automaton dfa;
      try {
        dfa = Operations.determinize(nfa, workLimit);
      } catch (TooComplexToDeterminizeException e) {
        throw new IllegalArgumentException("regular expression too complex to determinize (more "
            + "than " + workLimit + " units of work" + (workLimit < REGEXP_DETERMINIZE_WORK_LIMIT
            ? ", " + REGEXP_DETERMINIZE_WORK_LIMIT + " scaled by " + REGEXP_DETERMINIZE_BOUNDARIES
            + "/" + boundaries + " character boundaries" : "") + ")");
      }
      // the query the parser's own newRegexpQuery builds (a RegexpQuery determinizes
      // RegExp.toAutomaton() likewise), from the automaton built once here
      return new ParsedRegexpQuery(regexp, dfa, getMultiTermRewriteMethod());
    }
  }

  /**
   * A regular expression query over an automaton already determinized: a {@link RegexpQuery} but
   * for building its automaton itself, which {@link Parser} has done once, within its limits.
   */
  static final class ParsedRegexpQuery extends AutomatonQuery {

    ParsedRegexpQuery(Term regexp, Automaton automaton, MultiTermQuery.RewriteMethod rewrite) {
      super(regexp, automaton, false, rewrite);
    }

    @Override
    public String toString(String field) {
      return (term.field().equals(field) ? "" : term.field() + ":") + "/" + term.text() + "/";
    }
  }

  /**
   * An upper bound on the states of the automaton {@code r} compiles to, from its parse tree
   * alone; saturates at {@link Long#MAX_VALUE}.
   */
  static long automatonStates(RegExp r) {
    return switch (r.kind) {
      case REGEXP_UNION, REGEXP_CONCATENATION -> add(automatonStates(r.exp1),
          automatonStates(r.exp2));
      case REGEXP_INTERSECTION -> multiply(automatonStates(r.exp1), automatonStates(r.exp2));
      case REGEXP_OPTIONAL, REGEXP_REPEAT, REGEXP_COMPLEMENT, REGEXP_DEPRECATED_COMPLEMENT ->
          add(automatonStates(r.exp1), 1);
      case REGEXP_REPEAT_MIN -> add(multiply(automatonStates(r.exp1), (long) r.min + 1), 1);
      case REGEXP_REPEAT_MINMAX -> add(multiply(automatonStates(r.exp1),
          Math.max(1, Math.max(r.min, r.max))), 1);
      case REGEXP_STRING -> r.s.codePointCount(0, r.s.length()) + 1L;
      case REGEXP_INTERVAL -> 64; // decimal numbers of at most ten digits
      default -> 2; // one character, a class of them, any string, the empty language
    };
  }

  /**
   * An estimate of the transitions of the automaton {@code r} compiles to, in UTF-8 bytes, from
   * its parse tree alone ({@link #MAX_REGEXP_TRANSITIONS}); saturates at {@link Long#MAX_VALUE}.
   */
  static long automatonTransitions(RegExp r) {
    return shape(r).transitions();
  }

  /**
   * What the estimate of {@link #automatonTransitions} needs of a part of a regular expression's
   * automaton: its transitions, its accept states, the transitions that leave its initial state,
   * and whether it accepts the empty string. Lucene joins two parts by giving each accept state of
   * the first a copy of the second's initial transitions ({@link Operations#concatenate}); a part
   * that accepts the empty string keeps the first's accept states accepting, so in a run of such
   * parts every accept state links to every later part: {@code (a?){1000}} is 1,001 states and
   * 500,500 transitions, {@code (a*){1000}} as many, about 0.6 s to build as the query is parsed.
   * The estimate errs high: it takes a part's initial state to be left behind by the accept states
   * that link to it, which Lucene drops once unreachable, and nothing else.
   */
  private record Shape(long transitions, long accepts, long initial, boolean empty) {

    /** The empty string: the unit of concatenation. */
    static final Shape EMPTY_STRING = new Shape(0, 1, 0, true);
    /** The empty language. */
    static final Shape NOTHING = new Shape(0, 0, 0, false);

    /** One character of {@code bytes} transitions. */
    static Shape character(long bytes) {
      return new Shape(bytes, 1, bytes, false);
    }

    /**
     * This part followed by {@code next}: each of this part's accept states gets {@code next}'s
     * initial transitions, one of them in place of {@code next}'s initial state.
     */
    Shape then(Shape next) {
      return new Shape(add(add(transitions, next.transitions),
          multiply(Math.max(0, accepts - 1), next.initial)),
          next.empty ? Math.max(0, add(accepts, next.accepts) - 1) : next.accepts,
          empty ? add(initial, next.initial) : initial, empty && next.empty);
    }

    /** {@code n} copies in a row, in closed form (n is up to 2³¹ − 1). */
    Shape times(long n) {
      if (n == 0) {
        return EMPTY_STRING;
      }
      long links = multiply(Math.max(0, accepts - 1), initial);
      if (!empty) { // each copy links from the previous copy's accept states only
        return new Shape(add(multiply(n, transitions), multiply(n - 1, links)), accepts, initial,
            false);
      }
      // copy k links from the accept states of all copies before it: (k − 1) × links
      long pairs = multiply(n, n - 1) / 2;
      return new Shape(add(multiply(n, transitions), multiply(pairs, links)),
          add(multiply(n, accepts - 1), 1), multiply(n, initial), true);
    }

    /** Zero or one of this part ({@link Operations#optional}). */
    Shape optional() {
      return new Shape(add(transitions, initial), add(accepts, 1), initial, true);
    }

    /** Zero or more of this part ({@link Operations#repeat(Automaton)}). */
    Shape star() {
      return new Shape(add(add(transitions, initial), multiply(accepts, initial)),
          add(accepts, 1), initial, true);
    }

    /**
     * {@code min} copies, then up to {@code max − min} more, each optional after the one before
     * ({@link Operations#repeat(Automaton, int, int)}): a further copy links from the previous
     * copy's accept states only, so the run stays linear.
     */
    Shape repeat(int min, int max) {
      // the operand is built before it is repeated, even no times
      if (min > max) {
        return new Shape(transitions, 0, 0, false);
      }
      Shape required = times(min);
      long more = (long) max - min;
      if (more == 0) {
        return min == 0 ? new Shape(transitions, 1, 0, true) : required;
      }
      // a copy's accept states but its initial one, which the previous copy's replace
      long kept = Math.max(1, accepts - (empty ? 1 : 0));
      long t = add(add(required.transitions, multiply(more, transitions)),
          add(multiply(Math.max(0, required.accepts - 1), initial),
              multiply(multiply(more - 1, kept - 1), initial)));
      return new Shape(t, add(required.accepts, multiply(more, kept)),
          required.empty ? add(required.initial, initial) : required.initial, true);
    }
  }

  private static Shape shape(RegExp r) {
    return switch (r.kind) {
      case REGEXP_UNION -> {
        Shape a = shape(r.exp1);
        Shape b = shape(r.exp2);
        yield new Shape(add(a.transitions(), b.transitions()), add(a.accepts(), b.accepts()),
            add(a.initial(), b.initial()), a.empty() || b.empty());
      }
      case REGEXP_CONCATENATION -> shape(r.exp1).then(shape(r.exp2));
      case REGEXP_INTERSECTION -> {
        // a negated class, [^aeiou], is any character and the class's complement: one character
        boolean anyFirst = r.exp1.kind == RegExp.Kind.REGEXP_ANYCHAR;
        if (anyFirst || r.exp2.kind == RegExp.Kind.REGEXP_ANYCHAR) {
          yield Shape.character(shape(anyFirst ? r.exp2 : r.exp1).transitions());
        }
        // both operands are built before their product, even where the product is empty (#&x)
        Shape a = shape(r.exp1);
        Shape b = shape(r.exp2);
        yield new Shape(add(add(a.transitions(), b.transitions()),
            multiply(a.transitions(), b.transitions())),
            multiply(a.accepts(), b.accepts()), multiply(a.initial(), b.initial()),
            a.empty() && b.empty());
      }
      case REGEXP_OPTIONAL -> shape(r.exp1).optional();
      case REGEXP_REPEAT -> shape(r.exp1).star();
      case REGEXP_REPEAT_MIN -> {
        Shape a = shape(r.exp1);
        yield a.times(r.min).then(a.star());
      }
      case REGEXP_REPEAT_MINMAX -> shape(r.exp1).repeat(r.min, r.max);
      // determinized: the ranges between the operand's, the last up to the last code point, and
      // any state may accept
      case REGEXP_COMPLEMENT, REGEXP_DEPRECATED_COMPLEMENT -> {
        Shape a = shape(r.exp1);
        long t = add(a.transitions(), rangeBytes(0, Character.MAX_CODE_POINT));
        yield new Shape(t, automatonStates(r), t, !a.empty());
      }
      case REGEXP_STRING -> new Shape(utf8Length(r.s), 1, r.s.isEmpty() ? 0
          : rangeBytes(r.s.codePointAt(0), r.s.codePointAt(0)), r.s.isEmpty());
      case REGEXP_CHAR -> Shape.character(rangeBytes(r.c, r.c));
      case REGEXP_CHAR_RANGE, REGEXP_CHAR_CLASS -> {
        long sum = 0;
        for (int i = 0; i < r.from.length; i++) {
          sum += rangeBytes(r.from[i], r.to[i]);
        }
        yield Shape.character(sum);
      }
      case REGEXP_ANYCHAR -> Shape.character(rangeBytes(0, Character.MAX_CODE_POINT));
      case REGEXP_ANYSTRING -> { // one accept state, looping
        long t = rangeBytes(0, Character.MAX_CODE_POINT);
        yield new Shape(t, 1, t, true);
      }
      // decimal numbers of at most ten digits, ten per state, accepted after any of them
      case REGEXP_INTERVAL -> new Shape(640, 10, 10, false);
      // the empty language; a named automaton is refused as it is built
      default -> Shape.NOTHING;
    };
  }

  /** The last code point of each UTF-8 length, 1 to 4 bytes. */
  private static final int[] LAST_OF_UTF8_LENGTH = {0x7f, 0x7ff, 0xffff, Character.MAX_CODE_POINT};

  /**
   * A character range's share of an automaton's transitions in UTF-8: for each UTF-8 length its
   * characters have (1 to 4 bytes), that many bytes; {@code [a-z]} 1, a CJK character 3, any
   * character 10. Lucene turns a range into a path of byte transitions per length it spans, and
   * more than one where a range starts or ends inside a length's lead bytes: these are the least.
   */
  private static int rangeBytes(int from, int to) {
    int bytes = 0;
    int first = 0;
    for (int length = 1; length <= 4; length++) {
      int last = LAST_OF_UTF8_LENGTH[length - 1];
      if (from <= last && to >= first) {
        bytes += length;
      }
      first = last + 1;
    }
    return bytes;
  }

  private static long add(long a, long b) {
    long sum = a + b;
    return sum < 0 ? Long.MAX_VALUE : sum;
  }

  private static long multiply(long a, long b) {
    return a != 0 && b > Long.MAX_VALUE / a ? Long.MAX_VALUE : a * b;
  }

  private static String firstLine(String message) {
    if (message == null) {
      return "syntax error";
    }
    int nl = message.indexOf('\n');
    return (nl < 0 ? message : message.substring(0, nl)).strip();
  }

  /** Bytes of {@code s} in UTF-8, without encoding it. */
  static int utf8Length(String s) {
    int n = 0;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c < 0x80) {
        n += 1;
      } else if (c < 0x800) {
        n += 2;
      } else if (Character.isHighSurrogate(c) && i + 1 < s.length()
          && Character.isLowSurrogate(s.charAt(i + 1))) {
        n += 4;
        i++;
      } else {
        n += 3;
      }
    }
    return n;
  }
}
