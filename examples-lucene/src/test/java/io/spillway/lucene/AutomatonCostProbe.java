package io.spillway.lucene;

import io.spillway.api.Ticker;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SplittableRandom;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.TextField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.search.FuzzyQuery;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.store.ByteBuffersDirectory;
import org.apache.lucene.util.automaton.Automaton;
import org.apache.lucene.util.automaton.CompiledAutomaton;
import org.apache.lucene.util.automaton.LevenshteinAutomata;
import org.apache.lucene.util.automaton.Operations;
import org.apache.lucene.util.automaton.RegExp;

/**
 * Not a test: a timing harness for the work a query's automata cost before a search first checks
 * its budget (docs/results/lucene.md §5). For each query it measures, warm, the thread CPU time of
 * {@link SearchEngine#parse} (which builds a regular expression's or wildcard's automaton) plus
 * the rewrite on a one-document index (which builds a fuzzy term's automata), and with {@code
 * stages} of the Lucene calls inside, one at a time, to show where the time goes. A query the
 * engine refuses is timed up to its refusal.
 *
 * <pre>
 * ./mvnw -B -o -q -pl examples-lucene -am test-compile
 * ./mvnw -B -o -q -pl examples-lucene dependency:build-classpath -Dmdep.includeScope=test \
 *     -Dmdep.outputFile=cp.txt
 * taskset -c 0 java -cp examples-lucene/target/classes:examples-lucene/target/test-classes:$(cat \
 *     examples-lucene/cp.txt) io.spillway.lucene.AutomatonCostProbe [runs [only-matching [stages]]]
 * ... AutomatonCostProbe loop QUERY SECONDS    # to run one query under a profiler
 * </pre>
 */
public final class AutomatonCostProbe {

  private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

  private AutomatonCostProbe() { }

  public static void main(String[] args) throws Exception {
    if (args.length == 3 && args[0].equals("loop")) {
      loop(args[1], Double.parseDouble(args[2]));
      return;
    }
    int runs = args.length > 0 ? Integer.parseInt(args[0]) : 200;
    String only = args.length > 1 ? args[1] : ""; // probe only the queries containing this
    boolean stages = args.length > 2 && args[2].equals("stages");
    SplittableRandom random = new SplittableRandom(42);
    Map<String, String> queries = new LinkedHashMap<>();
    String odd = "[acegikmoqsuwy]"; // 13 separate ranges
    // 30, none changed by lower-casing: 18 of one byte, 12 of two
    String odd30 = "[acegikmoqsuwy02468\u03b1\u03b3\u03b5\u03b7\u03b9\u03bb\u03bd\u03bf\u03c1"
        + "\u03c4\u03c6\u03c8]";
    String cjk = "[\u4e00\u4e02\u4e04\u4e06\u4e08]"; // 5 separate ranges of 3 bytes
    String[] regexps = {"colou?r", ".*ation", "[a-z]+ing", "(un|re)?[a-z]+(ing|ed|s)?",
        "(colou?r|flavou?r|behaviou?r|neighbou?r)s?", "[^aeiou]+ing", "[a-z]{1,100}",
        "(a|b)*a(a|b){12}", "[a-z]*a[a-z]{10}",
        odd + "*a" + odd + "{3}", odd + "*a" + odd + "{4}", odd + "*a" + odd + "{5}",
        odd + "*a" + odd + "{8}", odd + "*a" + odd + "{20}", odd30 + "*a" + odd30 + "{20}",
        cjk + "*a" + cjk + "{20}",
        "[a-z]{1000}", "[a-z]{2000}", "[a-z]{4999}", odd + "{76}", odd + "{100}", odd + "{1000}",
        odd + "{4999}", ".{250}", ".{4999}", cjk + "{66}", cjk + "{1000}", cjk + "{4999}"};
    for (String re : regexps) {
      queries.put("/" + re + "/", "regexp");
    }
    for (String word : new String[] {"hous~", "recieve~", "recieve~1", "recieve~2",
        "internationaliz~", "internationaliz~2", "internationalize~2", "internationalization~",
        "internationalization~1"}) {
      queries.put(word, "fuzzy");
    }
    for (int len : new int[] {8, 12, 15, 16, 17, 24, 32}) {
      String ascii = letters(random, len, 'a', 'z');
      queries.put(ascii + "~", "fuzzy " + len + " random a-z, ~");
      queries.put(ascii + "~2", "fuzzy " + len + " random a-z, ~2");
      queries.put(ascii + "~1", "fuzzy " + len + " random a-z, ~1");
    }
    for (int len : new int[] {5, 6, 8, 16, 32}) {
      String han = letters(random, len, 0x4e00, 0x9fff);
      queries.put(han + "~", "fuzzy " + len + " random CJK, ~");
      queries.put(han + "~1", "fuzzy " + len + " random CJK, ~1");
    }
    for (int len : new int[] {8, 16, 32}) {
      String latin = letters(random, len, 0x100, 0x24f);
      queries.put(latin + "~", "fuzzy " + len + " random Latin Extended, ~");
      queries.put(latin + "~1", "fuzzy " + len + " random Latin Extended, ~1");
    }
    for (int len : new int[] {4, 8, 32}) {
      String sup = supplementary(random, len);
      queries.put(sup + "~", "fuzzy " + len + " random supplementary, ~");
      queries.put(sup + "~1", "fuzzy " + len + " random supplementary, ~1");
    }

    SearchEngine engine;
    try (ShardedIndex index = Fixtures.index(Ticker.system());
        ByteBuffersDirectory dir = new ByteBuffersDirectory()) {
      engine = new SearchEngine(index, Ticker.system());
      try (IndexWriter w = new IndexWriter(dir, new IndexWriterConfig(ShardedIndex.analyzer()))) {
        Document d = new Document();
        d.add(new TextField(ShardedIndex.BODY, "a small body of water", Field.Store.NO));
        w.addDocument(d);
      }
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        IndexSearcher searcher = new IndexSearcher(reader);
        System.out.println("| query | outcome | best ms | median ms | p99 ms |"
            + (stages ? " stages |" : ""));
        for (Map.Entry<String, String> q : queries.entrySet()) {
          if (!q.getKey().contains(only) && !q.getValue().contains(only)) {
            continue;
          }
          probe(engine, searcher, q.getKey(), q.getValue(), runs, stages);
        }
      }
    }
  }

  private static void probe(SearchEngine engine, IndexSearcher searcher, String q, String what,
      int runs, boolean stages) {
    String outcome = "answered";
    double[] total = new double[runs];
    for (int warm = 0; warm < 2; warm++) { // the first pass warms the JIT
      for (int i = 0; i < runs; i++) {
        long start = THREADS.getCurrentThreadCpuTime();
        try {
          Query parsed = engine.parse(q);
          searcher.rewrite(parsed);
        } catch (InvalidQueryException e) {
          outcome = "refused: " + e.getMessage();
        } catch (Exception e) {
          outcome = "failed: " + e;
        }
        total[i] = (THREADS.getCurrentThreadCpuTime() - start) / 1e6;
      }
    }
    Map<String, double[]> times = !stages ? Map.of() : what.equals("regexp")
        ? regexpStages(q.substring(1, q.length() - 1), runs) : fuzzyStages(q, runs);
    StringBuilder s = new StringBuilder();
    for (Map.Entry<String, double[]> e : times.entrySet()) {
      s.append(e.getKey()).append(' ').append(fmt(median(e.getValue()))).append("  ");
    }
    String label = what.startsWith("fuzzy ") ? what.substring(6) : q;
    if (outcome.equals("answered")) {
      try {
        if (engine.parse(q) instanceof FuzzyQuery f) {
          outcome = "answered, " + f.getMaxEdits() + " edit" + (f.getMaxEdits() == 1 ? "" : "s");
        }
      } catch (InvalidQueryException e) {
        throw new AssertionError(e);
      }
    }
    System.out.printf("| %s | %s | %s | %s | %s |%s%n", label.replace("|", "\\|"),
        outcome.length() > 90 ? outcome.substring(0, 87) + "..." : outcome, fmt(min(total)),
        fmt(median(total)), fmt(p99(total)), s.isEmpty() ? "" : " " + s);
  }

  /**
   * Parses and rewrites {@code query} over and over for {@code seconds}, for a sampling profiler
   * ({@code -XX:StartFlightRecording}) to show which Lucene calls the time is spent in.
   */
  private static void loop(String query, double seconds) throws Exception {
    try (ShardedIndex index = Fixtures.index(Ticker.system());
        ByteBuffersDirectory dir = new ByteBuffersDirectory()) {
      SearchEngine engine = new SearchEngine(index, Ticker.system());
      try (IndexWriter w = new IndexWriter(dir, new IndexWriterConfig(ShardedIndex.analyzer()))) {
        Document d = new Document();
        d.add(new TextField(ShardedIndex.BODY, "a small body of water", Field.Store.NO));
        w.addDocument(d);
      }
      try (DirectoryReader reader = DirectoryReader.open(dir)) {
        IndexSearcher searcher = new IndexSearcher(reader);
        long end = System.nanoTime() + (long) (seconds * 1e9);
        long n = 0;
        while (System.nanoTime() < end) {
          try {
            searcher.rewrite(engine.parse(query));
          } catch (InvalidQueryException e) {
            // refused: the work up to the refusal is what is profiled
          }
          n++;
        }
        System.out.println(n + " runs");
      }
    }
  }

  /** RegExp parsing, building the automaton, and determinizing it, one call at a time. */
  private static Map<String, double[]> regexpStages(String re, int runs) {
    Map<String, double[]> times = new LinkedHashMap<>();
    for (String stage : new String[] {"parse", "toAutomaton", "determinize(250)"}) {
      times.put(stage, new double[runs]);
    }
    for (int warm = 0; warm < 2; warm++) {
      for (int i = 0; i < runs; i++) {
        long t0 = THREADS.getCurrentThreadCpuTime();
        RegExp r = new RegExp(re, RegExp.ALL);
        long t1 = THREADS.getCurrentThreadCpuTime();
        Automaton a = r.toAutomaton();
        long t2 = THREADS.getCurrentThreadCpuTime();
        try {
          Operations.determinize(a, 250);
        } catch (RuntimeException e) {
          // timed up to the refusal
        }
        long t3 = THREADS.getCurrentThreadCpuTime();
        times.get("parse")[i] = (t1 - t0) / 1e6;
        times.get("toAutomaton")[i] = (t2 - t1) / 1e6;
        times.get("determinize(250)")[i] = (t3 - t2) / 1e6;
      }
    }
    return times;
  }

  /** A fuzzy term's Levenshtein automata, as FuzzyAutomatonBuilder builds them, one call at a time. */
  private static Map<String, double[]> fuzzyStages(String q, int runs) {
    int tilde = q.lastIndexOf('~');
    String term = q.substring(0, tilde);
    String edits = q.substring(tilde + 1);
    int maxEdits = edits.isEmpty() ? 2 : Integer.parseInt(edits);
    Map<String, double[]> times = new LinkedHashMap<>();
    for (int e = 0; e <= maxEdits; e++) {
      times.put("lev" + e, new double[runs]);
      times.put("compile" + e, new double[runs]);
    }
    for (int warm = 0; warm < 2; warm++) {
      for (int i = 0; i < runs; i++) {
        LevenshteinAutomata lev = new LevenshteinAutomata(term, true);
        for (int e = 0; e <= maxEdits; e++) {
          long t0 = THREADS.getCurrentThreadCpuTime();
          Automaton a = lev.toAutomaton(e, "");
          long t1 = THREADS.getCurrentThreadCpuTime();
          try {
            new CompiledAutomaton(a, true, false);
          } catch (RuntimeException ex) {
            // timed up to the refusal
          }
          long t2 = THREADS.getCurrentThreadCpuTime();
          times.get("lev" + e)[i] = (t1 - t0) / 1e6;
          times.get("compile" + e)[i] = (t2 - t1) / 1e6;
        }
      }
    }
    return times;
  }

  private static String letters(SplittableRandom random, int length, int from, int to) {
    StringBuilder s = new StringBuilder();
    for (int i = 0; i < length; i++) {
      s.appendCodePoint(random.nextInt(from, to + 1));
    }
    return s.toString();
  }

  private static String supplementary(SplittableRandom random, int length) {
    return letters(random, length, 0x20000, 0x2a6df); // CJK Extension B
  }

  private static double min(double[] v) {
    return Arrays.stream(v).min().orElseThrow();
  }

  private static double median(double[] v) {
    double[] s = v.clone();
    Arrays.sort(s);
    return s[s.length / 2];
  }

  private static double p99(double[] v) {
    double[] s = v.clone();
    Arrays.sort(s);
    return s[Math.min(s.length - 1, (int) Math.ceil(s.length * 0.99) - 1)];
  }

  private static String fmt(double ms) {
    return ms >= 10 ? String.format("%.0f", ms) : ms >= 1 ? String.format("%.1f", ms)
        : String.format("%.3f", ms);
  }
}
