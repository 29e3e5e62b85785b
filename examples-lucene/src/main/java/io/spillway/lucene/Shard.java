package io.spillway.lucene;

import io.spillway.asqm.BudgetedLock;
import io.spillway.api.Ticker;
import java.io.Closeable;
import java.io.IOException;
import java.util.List;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.Term;

/**
 * One shard of the index: its own in-memory directory and {@link IndexWriter}, the near-real-time
 * reader searches use, and the {@link BudgetedLock} that orders the two.
 *
 * <h2>The shard lock</h2>
 *
 * <p>An update batch ({@link #reindex}: the writer's {@code updateDocument} for each document,
 * then a near-real-time reopen and the swap of the shard's reader) runs under the lock, and a
 * search takes the lock to pin the shard's current reader ({@link #acquire}: one {@code incRef}).
 * So a search sees a shard either before a batch or after it and its refresh, never in between,
 * and a search that arrives while a shard refreshes waits for the refresh: the wait a real
 * service's searches have behind its refreshes, which is where Protego's latency-aware lock pays
 * (protego-nsdi23 §5.2, where the per-Segment lock played this part in Lucene++). Searches take
 * it with the request's budget ({@link BudgetedLock#acquireWithinBudget}); the update batch is
 * maintenance and takes it unconditionally ({@link BudgetedLock#acquire}), as Protego keeps the
 * plain {@code mutex_lock} for work that must not abort (§3.2).
 *
 * <p>Thread-safe.
 */
final class Shard implements Closeable {

  /** A shard's reader, pinned (one reference) for one search, and the refresh it came from. */
  record Snapshot(DirectoryReader reader, long generation) { }

  private final int number;
  private final IndexWriter writer;
  private final BudgetedLock lock;
  private DirectoryReader reader; // guarded by lock
  private long generation; // guarded by lock; one more per refresh that changed the reader
  private boolean closed; // guarded by lock

  Shard(int number, IndexWriter writer, Ticker ticker) throws IOException {
    this.number = number;
    this.writer = writer;
    this.lock = new BudgetedLock(ticker);
    this.reader = DirectoryReader.open(writer);
  }

  int number() {
    return number;
  }

  /** The shard lock, for diagnostics (its queueing delay) and tests. */
  BudgetedLock lock() {
    return lock;
  }

  /**
   * Pins the current reader under the shard lock, within the budget of the request in scope;
   * release it with {@code snapshot.reader().decRef()}.
   *
   * @throws io.spillway.api.BudgetExceededException if the lock's queue exceeds the budget
   */
  Snapshot acquire() {
    try (var _ = lock.acquireWithinBudget()) {
      reader.incRef();
      return new Snapshot(reader, generation);
    }
  }

  /**
   * Re-indexes {@code docs} (each replaces the document with its id) and refreshes the shard's
   * reader, all under the shard lock: never refused, since an update batch must not abort half
   * way.
   */
  void reindex(List<Corpus.Doc> docs) throws IOException {
    try (var _ = lock.acquire()) {
      for (Corpus.Doc d : docs) {
        writer.updateDocument(new Term(ShardedIndex.ID, Integer.toString(d.id())),
            ShardedIndex.document(d));
      }
      DirectoryReader fresh = DirectoryReader.openIfChanged(reader, writer);
      if (fresh != null) {
        DirectoryReader old = reader;
        reader = fresh;
        generation++;
        old.decRef(); // closed once the last search pinned on it ends
      }
    }
  }

  /** Segments in the current reader. */
  int segments() {
    try (var _ = lock.acquire()) {
      return reader.leaves().size();
    }
  }

  /**
   * Drops the shard's own reference to its reader (searches still pinned on it keep it open until
   * they end) and closes the writer. Closing again has no effect: dropping the reference twice
   * would take one of a running search's, closing the reader under it.
   */
  @Override
  public void close() throws IOException {
    try (var _ = lock.acquire()) {
      if (closed) {
        return;
      }
      closed = true;
      try {
        reader.decRef();
      } finally {
        writer.close();
      }
    }
  }
}
