package io.spillway.lucene;

import io.spillway.api.BudgetExceededException;
import io.spillway.api.Ticker;
import java.io.Closeable;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.en.EnglishAnalyzer;
import org.apache.lucene.analysis.standard.StandardAnalyzer;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.StringField;
import org.apache.lucene.document.TextField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.ExitableDirectoryReader;
import org.apache.lucene.index.IndexReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.MultiReader;
import org.apache.lucene.index.QueryTimeout;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.store.ByteBuffersDirectory;
import org.apache.lucene.store.Directory;

/**
 * The search index: the corpus split over a few {@link Shard}s by document id, each in its own
 * {@link ByteBuffersDirectory} (held in memory, as Protego's Lucene++ held its index in a {@code
 * RAMDirectory}, protego-nsdi23 §5.2) with several segments, searched together as one index.
 *
 * <p>A search pins every shard's current reader ({@link #acquire}) and runs over a
 * {@link MultiReader} of them: term statistics are those of the whole corpus, so scores are the
 * ones a single index of the same documents gives. Each shard's writer flushes a segment every
 * {@value #FLUSH_DOCS} documents, so the whole corpus has several segments per shard, as the
 * paper's index had several Segments.
 *
 * <p>Fields: {@value #ID} (the corpus id, stored, indexed as one token), {@value #TITLE} (the
 * lemmas, analysed and stored) and {@value #BODY} (the gloss, analysed). One analyser for both
 * ({@link #analyzer()}): Lucene's standard tokenizer, lower-cased, English stop words removed.
 *
 * <p>Thread-safe.
 */
public final class ShardedIndex implements Closeable {

  /** The corpus id of a document. */
  public static final String ID = "id";
  /** A document's lemmas. */
  public static final String TITLE = "title";
  /** A document's gloss; the default field of queries. */
  public static final String BODY = "body";

  /** Documents per flushed segment while the index is built. */
  static final int FLUSH_DOCS = 8192;

  private final Shard[] shards;
  private final Corpus corpus;
  private final long buildNanos;

  private ShardedIndex(Shard[] shards, Corpus corpus, long buildNanos) {
    this.shards = shards;
    this.corpus = corpus;
    this.buildNanos = buildNanos;
  }

  /** The analyser of documents and queries: standard tokens, lower case, no English stop words. */
  public static Analyzer analyzer() {
    return new StandardAnalyzer(EnglishAnalyzer.ENGLISH_STOP_WORDS_SET);
  }

  /**
   * Indexes {@code corpus} into {@code shardCount} in-memory shards, one indexing thread per
   * shard up to the processors available, and returns once every shard has a reader. The shard
   * locks read {@code ticker}, the clock the requests' budgets are measured with.
   */
  public static ShardedIndex build(Corpus corpus, int shardCount, Ticker ticker) {
    return build(corpus, shardCount, ticker, shard -> new ByteBuffersDirectory());
  }

  /** Where a shard's index lives: a new, empty directory for shard {@code number}. */
  @FunctionalInterface
  interface Directories {
    Directory open(int number) throws IOException;
  }

  /**
   * As {@link #build(Corpus, int, Ticker)}, each shard in the directory {@code directories} gives
   * it. If a shard fails, every shard already built is closed (its writer's lock released, its
   * reader dropped) before the exception propagates: the caller has no index to close.
   */
  static ShardedIndex build(Corpus corpus, int shardCount, Ticker ticker,
      Directories directories) {
    if (shardCount < 1) {
      throw new IllegalArgumentException("at least one shard: " + shardCount);
    }
    long start = ticker.read();
    List<List<Corpus.Doc>> parts = new ArrayList<>(shardCount);
    for (int s = 0; s < shardCount; s++) {
      parts.add(new ArrayList<>(corpus.size() / shardCount + 1));
    }
    for (Corpus.Doc d : corpus.docs()) {
      parts.get(shardOf(d.id(), shardCount)).add(d);
    }
    Shard[] shards = new Shard[shardCount];
    int threads = Math.min(shardCount, Runtime.getRuntime().availableProcessors());
    List<Future<Shard>> built = new ArrayList<>(shardCount);
    try (ExecutorService pool = Executors.newFixedThreadPool(threads)) {
      for (int s = 0; s < shardCount; s++) {
        int number = s;
        built.add(pool.submit(() -> buildShard(number, parts.get(number), ticker, directories)));
      }
      for (int s = 0; s < shardCount; s++) {
        shards[s] = built.get(s).get();
      }
    } catch (InterruptedException e) { // the pool is closed by now: no shard is being built
      Thread.currentThread().interrupt();
      throw closeBuilt(built, new IllegalStateException("interrupted while indexing", e));
    } catch (ExecutionException e) {
      throw closeBuilt(built, new IllegalStateException("indexing failed", e.getCause()));
    } catch (RuntimeException | Error e) {
      closeBuilt(built, e);
      throw e;
    }
    return new ShardedIndex(shards, corpus, ticker.read() - start);
  }

  /**
   * Closes every shard of {@code built} that was built (the pool has ended: none is still being
   * built), adding any failure to {@code pending}, which it returns.
   */
  private static <T extends Throwable> T closeBuilt(List<Future<Shard>> built, T pending) {
    for (Future<Shard> f : built) {
      if (f.state() == Future.State.SUCCESS) {
        try {
          f.resultNow().close();
        } catch (IOException | RuntimeException e) {
          pending.addSuppressed(e);
        }
      }
    }
    return pending;
  }

  private static Shard buildShard(int number, List<Corpus.Doc> docs, Ticker ticker,
      Directories directories) throws IOException {
    IndexWriterConfig config = new IndexWriterConfig(analyzer())
        .setOpenMode(IndexWriterConfig.OpenMode.CREATE)
        .setMaxBufferedDocs(FLUSH_DOCS);
    IndexWriter writer = new IndexWriter(directories.open(number), config);
    try {
      for (Corpus.Doc d : docs) {
        writer.addDocument(document(d));
      }
      return new Shard(number, writer, ticker);
    } catch (IOException | RuntimeException | Error e) {
      try {
        writer.rollback(); // closes it, releasing its lock, and commits nothing
      } catch (IOException | RuntimeException suppressed) {
        e.addSuppressed(suppressed);
      }
      throw e;
    }
  }

  static Document document(Corpus.Doc d) {
    Document doc = new Document();
    doc.add(new StringField(ID, Integer.toString(d.id()), Field.Store.YES));
    doc.add(new TextField(TITLE, d.title(), Field.Store.YES));
    doc.add(new TextField(BODY, d.body(), Field.Store.NO));
    return doc;
  }

  /** The shard a document lives in. */
  static int shardOf(int docId, int shardCount) {
    return Math.floorMod(docId, shardCount);
  }

  /** The corpus indexed. */
  public Corpus corpus() {
    return corpus;
  }

  /** How long {@link #build} took, in nanoseconds. */
  public long buildNanos() {
    return buildNanos;
  }

  /** The number of shards. */
  public int shardCount() {
    return shards.length;
  }

  Shard shard(int number) {
    return shards[number];
  }

  /** Segments over all shards' current readers. */
  public int segments() {
    int n = 0;
    for (Shard s : shards) {
      n += s.segments();
    }
    return n;
  }

  /**
   * Pins every shard's current reader, taking each shard lock within the budget of the request in
   * scope, and returns the view a search runs on; close it when the search ends.
   *
   * @throws BudgetExceededException if a shard lock's queue exceeds the budget (the shards
   *     already pinned are released)
   */
  public View acquire() {
    Shard.Snapshot[] pinned = new Shard.Snapshot[shards.length];
    int n = 0;
    try {
      for (; n < shards.length; n++) {
        pinned[n] = shards[n].acquire();
      }
    } catch (RuntimeException | Error e) {
      for (int i = 0; i < n; i++) {
        release(pinned[i].reader(), e);
      }
      throw e;
    }
    return new View(pinned);
  }

  /** Re-indexes {@code docs} into their shard, which must be {@code shard}, and refreshes it. */
  void reindex(int shard, List<Corpus.Doc> docs) {
    try {
      shards[shard].reindex(docs);
    } catch (IOException e) {
      throw new UncheckedIOException("re-indexing shard " + shard, e);
    }
  }

  private static void release(DirectoryReader reader, Throwable pending) {
    try {
      reader.decRef();
    } catch (IOException | RuntimeException e) {
      pending.addSuppressed(e);
    }
  }

  @Override
  public void close() throws IOException {
    IOException first = null;
    for (Shard s : shards) {
      try {
        s.close();
      } catch (IOException e) {
        if (first == null) {
          first = e;
        } else {
          first.addSuppressed(e);
        }
      }
    }
    if (first != null) {
      throw first;
    }
  }

  /**
   * Every shard's reader, pinned for one search, and the refresh generation of each (the key that
   * tells whether a cached result is still the answer). Not thread-safe: one search's.
   */
  public static final class View implements AutoCloseable {
    private final Shard.Snapshot[] pinned;
    private final long[] generations;
    private final IndexReader reader;

    View(Shard.Snapshot[] pinned) {
      this.pinned = pinned;
      this.generations = new long[pinned.length];
      IndexReader[] readers = new IndexReader[pinned.length];
      for (int i = 0; i < pinned.length; i++) {
        readers[i] = pinned[i].reader();
        generations[i] = pinned[i].generation();
      }
      try {
        // closeSubReaders=false: the MultiReader takes and drops its own references
        this.reader = readers.length == 1 ? readers[0] : new MultiReader(readers, false);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    /** A new searcher over the pinned readers (a searcher is cheap). */
    public IndexSearcher newSearcher() {
      return new IndexSearcher(reader);
    }

    /**
     * A new searcher that stops when {@code timeout} says so, both while scoring ({@link
     * IndexSearcher#setTimeout}) and while enumerating terms ({@link ExitableDirectoryReader},
     * which throws {@link ExitableDirectoryReader.ExitingReaderException}); a plain one if {@code
     * timeout} is null.
     */
    IndexSearcher newSearcher(QueryTimeout timeout) throws IOException {
      return newSearcher(timeout, true);
    }

    /**
     * As {@link #newSearcher(QueryTimeout)}, with the term enumeration bounded only if {@code
     * enumeratesTerms}: a query that looks its terms up one by one (a term, a phrase) only needs
     * the scoring bounded, and wrapping every segment's reader for it costs each search about a
     * tenth of its time (docs/results/lucene.md).
     */
    IndexSearcher newSearcher(QueryTimeout timeout, boolean enumeratesTerms) throws IOException {
      if (timeout == null) {
        return newSearcher();
      }
      if (!enumeratesTerms) {
        IndexSearcher searcher = newSearcher();
        searcher.setTimeout(timeout);
        return searcher;
      }
      IndexReader[] exitable = new IndexReader[pinned.length];
      for (int i = 0; i < pinned.length; i++) {
        // Not closed: closing a wrapper would close the shard's reader. A wrapper holds nothing
        // but the reference this view already pinned, and is dropped with the searcher.
        exitable[i] = ExitableDirectoryReader.wrap(pinned[i].reader(), timeout);
      }
      IndexSearcher searcher = new IndexSearcher(exitable.length == 1 ? exitable[0]
          : new MultiReader(exitable, false));
      searcher.setTimeout(timeout);
      return searcher;
    }

    /** The reader over every shard. */
    public IndexReader reader() {
      return reader;
    }

    /** The refresh generation of each shard's pinned reader. */
    long[] generations() {
      return generations;
    }

    @Override
    public void close() {
      IOException failed = null;
      if (reader instanceof MultiReader m) {
        try {
          m.close();
        } catch (IOException e) {
          failed = e;
        }
      }
      for (Shard.Snapshot s : pinned) {
        try {
          s.reader().decRef();
        } catch (IOException e) {
          if (failed == null) {
            failed = e;
          } else {
            failed.addSuppressed(e);
          }
        }
      }
      if (failed != null) {
        throw new UncheckedIOException(failed);
      }
    }
  }
}
