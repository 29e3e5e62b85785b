package io.spillway.lucene;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.spillway.api.Ticker;
import io.spillway.lucene.proto.Hit;
import io.spillway.lucene.proto.SearchReply;
import io.spillway.lucene.proto.SearchRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.apache.lucene.document.Document;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.queryparser.classic.QueryParser;
import org.apache.lucene.search.FuzzyQuery;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.QueryVisitor;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.store.ByteBuffersDirectory;
import org.apache.lucene.util.automaton.Automata;
import org.apache.lucene.util.automaton.RegExp;
import org.apache.lucene.util.automaton.TooComplexToDeterminizeException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The service over a real in-process gRPC server with Spillway installed, on 2,000 documents of
 * the corpus: bad requests get INVALID_ARGUMENT with a message that says what is wrong, good ones
 * get the hits a plain single-index {@link IndexSearcher} gives.
 */
class SearchServiceTest {

  private static ShardedIndex index;
  private static InProcessSearch search;

  @BeforeAll
  static void start() throws Exception {
    index = Fixtures.index(Ticker.system());
    search = new InProcessSearch(new SearchEngine(index, Ticker.system()), Duration.ofSeconds(5));
  }

  @AfterAll
  static void stop() throws Exception {
    search.close();
    index.close();
  }

  private static SearchReply call(String query, int k) {
    return search.stub.search(SearchRequest.newBuilder().setQuery(query).setK(k).build());
  }

  private static void assertInvalid(String query, int k, String expected) {
    StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () -> call(query, k),
        () -> "'" + query + "' k=" + k + " was answered");
    assertEquals(Status.Code.INVALID_ARGUMENT, e.getStatus().getCode(), e.toString());
    String description = e.getStatus().getDescription();
    assertTrue(description != null && description.contains(expected),
        "'" + query + "' k=" + k + ": expected '" + expected + "' in: " + description);
  }

  @Test
  void emptyAndOverLongQueriesAreInvalid() {
    assertInvalid("", 10, "query is empty");
    assertInvalid("   ", 10, "query is empty");
    assertInvalid("a".repeat(1025), 10, "1025 bytes long; at most 1024");
    assertInvalid("é".repeat(513), 10, "1026 bytes long"); // 513 characters, two bytes each
    assertEquals(0, call("é".repeat(512), 10).getHitsCount()); // exactly 1024 bytes: accepted
  }

  @Test
  void kOutOfRangeIsInvalid() {
    assertInvalid("water", 0, "k must be between 1 and 1000, was 0");
    assertInvalid("water", -3, "was -3");
    assertInvalid("water", 1001, "was 1001");
    assertInvalid("water", 1_000_000_000, "was 1000000000");
  }

  @Test
  void unknownFieldsAreInvalid() {
    assertInvalid("colour:red", 10, "unknown field 'colour'; the fields are body, id, title");
    assertInvalid("water OR colour:red OR taste:sweet", 10, "unknown fields 'colour', 'taste'");
    assertInvalid("colour:\"dark red\"", 10, "unknown field 'colour'");
    assertInvalid("colour:re*", 10, "unknown field 'colour'");
  }

  @Test
  void anUnknownFieldIsInvalidInAProhibitedClauseToo() {
    assertInvalid("water -colour:red", 10, "unknown field 'colour'");
    assertInvalid("water NOT taste:sweet", 10, "unknown field 'taste'");
    assertInvalid("-colour:red", 10, "unknown field 'colour'");
    assertInvalid("water AND (fish -(colour:red OR title:blue))", 10, "unknown field 'colour'");
    assertTrue(call("water -title:fish", 10).getHitsCount() > 0); // a known field: served
  }

  @Test
  void aPhraseInTheIdFieldIsInvalidNotAServerError() {
    // id is indexed as one token with no positions, where Lucene cannot run a phrase
    assertInvalid("id:\"1 2\"", 10, "a phrase cannot be searched in field 'id'");
    assertInvalid("id:\"12-34\"", 10, "field 'id'"); // analysed into two tokens: a phrase
    assertInvalid("water OR id:\"12 34\"~2", 10, "field 'id'");
    int id = Fixtures.corpus().docs().get(7).id();
    assertEquals(id, call("id:\"" + id + "\"", 10).getHits(0).getId()); // one token: a term
    assertTrue(call("title:\"body of water\" OR water", 10).getHitsCount() > 0);
  }

  @Test
  void malformedSyntaxIsInvalidNeverInternal() {
    for (String q : new String[] {"water AND", "(water", "\"unclosed phrase", "water^x", "title:",
        "[a TO", "*ater", "?ater", "water^", "/[a-/", "AND", "\\"}) {
      assertInvalid(q, 10, "malformed query");
    }
  }

  @Test
  void aRegularExpressionWhoseAutomatonWouldBeHugeIsInvalidBeforeItIsBuilt() {
    // A repeat of a repeat multiplies: these few bytes compile to a million automaton states, and
    // /a{2147483647}/ to more than the heap holds, at parse time, before any budget applies.
    assertInvalid("title:/(a{1000}){1000}/", 10, "regular expression too complex");
    assertInvalid("/((ab){100}){100}/", 10, "regular expression too complex");
    assertInvalid("water OR /[a-z]{10}&(x{100}){100}/", 10, "regular expression too complex");
    assertInvalid("/a{2147483647}/", 10, "regular expression too complex");
    assertTrue(call("/wat.r/", 10).getHitsCount() > 0); // an ordinary one is still served
    assertTrue(call("/[a-z]{1,100}/", 10).getHitsCount() > 0);
  }

  @Test
  void aRegularExpressionCostlyToDeterminizeIsInvalidBeforeTheWorkIsDone() {
    // Few states, but an automaton that blows up as it is determinized, at parse time and before
    // any budget applies: 15 ms under Lucene's default limit on determinization work.
    String blowUp = "(a|b)*a(a|b){12}";
    assertTrue(SearchEngine.automatonStates(new RegExp(blowUp, RegExp.ALL))
        <= SearchEngine.MAX_REGEXP_STATES, "within the state cap");
    assertInvalid("/" + blowUp + "/", 10, "regular expression too complex to determinize");
    assertInvalid("water OR title:/[a-z]*a[a-z]{10}/", 10, "regular expression too complex");
    assertInvalid("/(a|b)*a(a|b){30}/", 10, "regular expression too complex");
    // expressions that describe words are served
    assertTrue(call("/colou?r/", 10).getHitsCount() > 0);
    assertTrue(call("/(un|re)?[a-z]+(ing|ed|s)?/", 10).getHitsCount() > 0);
    assertTrue(call("/.*ation/", 10).getHitsCount() > 0);
  }

  @Test
  void anAutomatonTooComplexAsTheSearchStartsIsInvalidNotAServerError() throws Exception {
    // A fuzzy query builds its automata as the search starts, and Lucene refuses one it will not
    // determinize (a FuzzyTermsException wrapping TooComplexToDeterminizeException, its
    // constructor Lucene's own); this query throws the latter from the same place, its rewrite.
    Query tooComplex = new Query() {
      @Override
      public Query rewrite(IndexSearcher searcher) {
        throw new TooComplexToDeterminizeException(Automata.makeAnyString(), 1);
      }

      @Override
      public void visit(QueryVisitor visitor) {
        visitor.visitLeaf(this);
      }

      @Override
      public String toString(String field) {
        return "tooComplex";
      }

      @Override
      public boolean equals(Object o) {
        return o == this;
      }

      @Override
      public int hashCode() {
        return System.identityHashCode(this);
      }
    };
    SearchEngine engine = new SearchEngine(index, Ticker.system());
    try (ShardedIndex.View view = index.acquire()) {
      InvalidQueryException e = assertThrows(InvalidQueryException.class,
          () -> engine.run(view, tooComplex, 10));
      assertTrue(e.getMessage().startsWith("query too complex to run"), e.getMessage());
    }
  }

  @Test
  void aFuzzyTermLongerThanTheCapIsInvalidBeforeItsAutomataAreBuilt() {
    // Its Levenshtein automata are built before the search's timeout is first checked: a third of
    // a second for the 1,000 characters a query can hold, whatever the budget.
    int cap = SearchEngine.MAX_FUZZY_CHARS;
    String over = "fuzzy term is " + (cap + 1) + " characters long; at most " + cap + " are accepted";
    assertInvalid("a".repeat(cap + 1) + "~2", 10, over);
    assertInvalid("a".repeat(cap + 1) + "~1", 10, over);
    assertInvalid("a".repeat(cap + 1) + "~", 10, over); // two edits, the parser's default
    assertInvalid("water OR title:" + "b".repeat(cap + 1) + "~1", 10, over);
    assertInvalid("a".repeat(1000) + "~2", 10, "fuzzy term is 1000 characters long");
    // characters, not bytes
    assertInvalid("é".repeat(cap + 1) + "~1", 10, "fuzzy term is " + (cap + 1) + " characters");
    // at the cap it is served (at one edit: two are for shorter terms); a longer term with no
    // edit allowed is a term query, also served
    assertEquals(0, call("a".repeat(cap) + "~1", 10).getHitsCount());
    assertEquals(0, call("a".repeat(cap + 1) + "~0", 10).getHitsCount());
    assertTrue(call("watr~1", 10).getHitsCount() > 0);
  }

  @Test
  void twoEditsOfALongFuzzyTermAreInvalidAndABareTildeGivesItOne() throws Exception {
    // Two edits' automata cost about 0.2 ms a byte of the term, before the budget is first
    // checked: 7 ms for 32 letters, 22 ms for 32 CJK characters.
    int cap = SearchEngine.MAX_TWO_EDIT_FUZZY_BYTES;
    String over = "fuzzy term is " + (cap + 1) + " bytes long (UTF-8); two edits are accepted up to "
        + cap + " bytes";
    assertInvalid("a".repeat(cap + 1) + "~2", 10, over);
    assertInvalid("water OR title:" + "b".repeat(cap + 1) + "~2", 10, over);
    assertInvalid("internationalization~2", 10, "fuzzy term is 20 bytes long");
    // bytes, not characters: eight two-byte characters are 16 bytes
    assertInvalid("é".repeat(8) + "~2", 10, "fuzzy term is 16 bytes long");
    assertInvalid("水".repeat(6) + "~2", 10, "fuzzy term is 18 bytes long");
    // a bare '~' asks for no number of edits: a long term gets one, and is answered
    SearchEngine engine = new SearchEngine(index, Ticker.system());
    assertEquals(1, ((FuzzyQuery) engine.parse("internationalization~")).getMaxEdits());
    assertEquals(1, ((FuzzyQuery) engine.parse("水".repeat(6) + "~")).getMaxEdits());
    call("internationalization~", 10);
    call("internationalization~1", 10);
    // ordinary words keep their edits
    assertEquals(2, ((FuzzyQuery) engine.parse("internationaliz~")).getMaxEdits());
    assertEquals(2, ((FuzzyQuery) engine.parse("é".repeat(7) + "~2")).getMaxEdits());
    for (String q : new String[] {"hous~", "recieve~", "recieve~1", "recieve~2",
        "internationaliz~2", "watr~", "wtaer~2"}) {
      call(q, 10); // answered
    }
    assertTrue(call("hous~", 10).getHitsCount() > 0);
    assertTrue(call("wtaer~2", 10).getHitsCount() > 0); // water, a transposition and more
  }

  @Test
  void aRegularExpressionWithTooManyTransitionsIsInvalidBeforeItIsBuilt() {
    // Within the state cap, but its automaton, and that automaton in UTF-8, cost about 1 µs a
    // transition to build as the query is parsed: 16 ms for the first, 17 ms for .{4999}.
    long cap = SearchEngine.MAX_REGEXP_TRANSITIONS;
    String over = "regular expression too complex: about ";
    assertInvalid("/[acegikmoqsuwy]{1000}/", 10, over + "13000 transitions");
    assertInvalid("/.{4999}/", 10, over + "49990 transitions");
    assertInvalid("/[a-z]{" + (cap + 1) + "}/", 10, over + (cap + 1) + " transitions");
    assertInvalid("water OR /[\u4e00\u4e02\u4e04]{200}/", 10, over + "1800 transitions");
    assertInvalid("/[\u4e00-\u9fff]{400}/", 10, "at most " + cap + " are accepted");
    // at the cap, and ordinary expressions, are served
    call("/[a-z]{" + cap + "}/", 10);
    call("/.{1,100}/", 10);
    assertTrue(call("/[a-z]{1,100}/", 10).getHitsCount() > 0);
    assertTrue(call("/[^aeiou]+ing/", 10).getHitsCount() > 0);
    assertTrue(call("/(colou?r|flavou?r|behaviou?r|neighbou?r)s?/", 10).getHitsCount() > 0);
  }

  @Test
  void aRegularExpressionOfPartsThatMatchNothingIsInvalidBeforeItsTransitionsFanOut() {
    // Each accept state of a part links to the next part's first transitions, and a part that can
    // match the empty string keeps its predecessors' accept states: n such parts in a row build
    // about n²/2 transitions as the query is parsed, before any budget applies. /(a*){1000}/ is
    // half a million transitions; its automaton then determinizes cheaply and it was served.
    String over = "regular expression too complex: about ";
    assertInvalid("/(a*){1000}/", 10, over);
    assertInvalid("title:/(e*){1000}/", 10, over);
    assertInvalid("/(a?){1000}/", 10, over + "501500 transitions"); // Lucene builds 500,500
    assertInvalid("/" + "a*".repeat(500) + "/", 10, over);
    assertInvalid("water OR /a?{30}{30}/", 10, over);
    // an intersection builds both its operands, even where their product is empty (# is nothing)
    assertInvalid("/(a*){1000}&#/", 10, over);
    assertInvalid("/((a*){1000}){0}/", 10, over); // built, then repeated no times
    // the estimate is at least the transitions Lucene builds, whatever the parts
    for (String re : new String[] {"(a?){100}", "(a*){100}", "(a*b*){20}", "a?".repeat(100),
        "(a|b?){50}", "(ab?){100}", "(a?){0,100}", "(a?){1,100}", "a?{5}{5}", "(.?){20}",
        "[a-z]*[0-9]*[a-z]*[0-9]*", "(a?){10}(b?){10}", "colou?r", "(un|re)?[a-z]+(ing|ed|s)?",
        ".*ation", "[^aeiou]+ing", "[a-z]{1,100}", "(a|b)*a(a|b){6}", "((a?b?){3}c?){4}"}) {
      RegExp r = new RegExp(re, RegExp.ALL);
      long built = r.toAutomaton().getNumTransitions();
      long estimate = SearchEngine.automatonTransitions(r);
      assertTrue(estimate >= built, re + ": estimated " + estimate + ", built " + built);
    }
    // a few optional parts, and a bounded repeat (each copy links only to the next), are served
    assertTrue(call("/colou?r/", 10).getHitsCount() > 0);
    assertTrue(call("/[a-z]{1,100}/", 10).getHitsCount() > 0);
    assertTrue(call("/(un|re)?[a-z]+(ing|ed|s)?/", 10).getHitsCount() > 0);
    call("/(a?){30}/", 10);
    call("/a{0,1000}/", 10);
  }

  @Test
  void aRegularExpressionOfManySeparateRangesGetsLessDeterminizationWork() {
    // Lucene counts its work per state visited, but each visit costs in proportion to the
    // boundaries between the ranges on the state's transitions: 27 here, against 4 for [a-z].
    assertInvalid("/[acegikmoqsuwy]*a[acegikmoqsuwy]{7}/", 10,
        "regular expression too complex to determinize (more than 74 units of work, 250 scaled by "
            + "8/27 character boundaries)");
    assertInvalid("title:/[acegikmoqsuwy0-9]*a[acegikmoqsuwy0-9]{20}/", 10,
        "character boundaries");
    assertEquals(250, SearchEngine.determinizeWorkLimit(4));
    assertEquals(250, SearchEngine.determinizeWorkLimit(8));
    assertEquals(125, SearchEngine.determinizeWorkLimit(16));
    assertEquals(1, SearchEngine.determinizeWorkLimit(100_000));
    // few ranges, or few states to visit, are served
    call("/[acegikmoqsuwy]*a[acegikmoqsuwy]{5}/", 10);
    assertTrue(call("/(un|re)?[a-z]+(ing|ed|s)?/", 10).getHitsCount() > 0);
    assertTrue(call("/[a-z]+ing/", 10).getHitsCount() > 0);
    assertTrue(call("/.*ation/", 10).getHitsCount() > 0);
    assertTrue(call("/colou?r/", 10).getHitsCount() > 0);
  }

  @Test
  void aWildcardTermWithMoreStarsThanTheCapIsInvalidBeforeItsAutomatonIsBuilt() {
    // Each '*' multiplies the work of determinizing the automaton, done as the query is parsed:
    // 70 ms for 32 of them, and 60 to 85 ms before Lucene refuses 64, whatever the budget.
    int cap = SearchEngine.MAX_WILDCARD_STARS;
    String over = "wildcard term has " + (cap + 1) + " '*' wildcards; at most " + cap
        + " are accepted";
    assertInvalid("w" + "a*".repeat(cap + 1), 10, over);
    assertInvalid("water OR title:" + "xy*".repeat(cap + 1), 10, over);
    assertInvalid("q*r?".repeat(cap + 1), 10, over);
    assertInvalid("a*b".repeat(64), 10, "wildcard term has 64 '*' wildcards");
    // at the cap it is served; an escaped '*' is a literal, and '?'s are not counted
    assertTrue(call("w" + "*".repeat(cap - 1) + "a*er", 10).getHitsCount() > 0);
    assertEquals(0, call("w\\*a\\*t\\*e*r\\*" + "*".repeat(cap - 1), 10).getHitsCount());
    assertTrue(call("w?t?r*", 10).getHitsCount() > 0);
    assertTrue(call("wat*", 10).getHitsCount() > 0); // a prefix query
    assertEquals(3, SearchEngine.wildcardStars("a*b\\*c**"));
  }

  @Test
  void aQueryOfStopWordsMatchesNothingAndMatchAllIsBoundedByK() {
    assertEquals(0, call("the and of", 10).getHitsCount());
    SearchReply all = call("*:*", 1000);
    assertEquals(1000, all.getHitsCount());
    assertTrue(all.getTotalHits() > 1000, "a lower bound past 1,000: " + all.getTotalHits());
  }

  @Test
  void hitsAreTheOnesAPlainSingleIndexSearcherFinds() throws Exception {
    ByteBuffersDirectory dir = new ByteBuffersDirectory();
    try (IndexWriter w = new IndexWriter(dir, new IndexWriterConfig(ShardedIndex.analyzer()))) {
      for (Corpus.Doc d : Fixtures.corpus().docs()) {
        w.addDocument(ShardedIndex.document(d));
      }
    }
    try (DirectoryReader reader = DirectoryReader.open(dir)) {
      IndexSearcher plain = new IndexSearcher(reader);
      QueryMix mix = QueryMix.heavy(reader, Fixtures.corpus());
      SplittableRandom random = new SplittableRandom(Fixtures.seed());
      List<String> queries = new ArrayList<>(List.of("water", "title:water", "body:small AND large",
          "\"a small\"", "wat*", "water -fish", "id:1234"));
      for (int i = 0; i < 60; i++) {
        queries.add(mix.next(random));
      }
      int withHits = 0;
      for (String q : queries) {
        int k = 10;
        TopDocs expected = plain.search(new QueryParser(ShardedIndex.BODY, ShardedIndex.analyzer())
            .parse(q), k);
        SearchReply got = call(q, k);
        String where = "query '" + q + "' (seed " + Fixtures.seed() + ")";
        assertEquals(expected.totalHits.value(), got.getTotalHits(), where);
        assertEquals(expected.scoreDocs.length, got.getHitsCount(), where);
        Map<Integer, Float> expectedScores = new HashMap<>();
        for (int i = 0; i < expected.scoreDocs.length; i++) {
          ScoreDoc sd = expected.scoreDocs[i];
          Document d = plain.storedFields().document(sd.doc);
          expectedScores.put(Integer.parseInt(d.get(ShardedIndex.ID)), sd.score);
          assertEquals(sd.score, got.getHits(i).getScore(), 1e-6f, where + " hit " + i);
        }
        float last = expected.scoreDocs.length == 0 ? 0 : expected.scoreDocs[k > expected.scoreDocs
            .length ? expected.scoreDocs.length - 1 : k - 1].score;
        for (Hit h : got.getHitsList()) {
          if (h.getScore() > last) { // ties at the cut may be broken differently
            Float s = expectedScores.get(h.getId());
            assertTrue(s != null && Math.abs(s - h.getScore()) < 1e-6f, where + ": " + h);
          }
        }
        withHits += got.getHitsCount() > 0 ? 1 : 0;
      }
      assertTrue(withHits > queries.size() * 3 / 4, withHits + " of " + queries.size() + " hit");
    }
  }
}
