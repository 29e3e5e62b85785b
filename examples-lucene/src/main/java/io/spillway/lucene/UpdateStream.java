package io.spillway.lucene;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The index updates that run beside the searches, as a live search service's ingest does: each
 * {@link #applyNext()} re-indexes a batch of documents of one shard (round robin) and refreshes
 * that shard's reader, under the shard lock ({@link Shard#reindex}). The documents are re-indexed
 * as they are, so the corpus, and what a query should find, stays the same; the work, the
 * refreshes and the locking are real: each batch deletes and re-adds its documents, flushes a
 * small segment and reopens the shard, and merges follow as segments pile up.
 *
 * <p>Not thread-safe: one updater thread calls {@link #applyNext()} (the server's, on a schedule).
 */
final class UpdateStream {

  private final ShardedIndex index;
  private final List<List<Corpus.Doc>> byShard;
  private final int batch;
  private final SplittableRandom random;
  private int nextShard;
  private long applied;

  /** Batches of {@code batch} documents, drawn with {@code seed}. */
  UpdateStream(ShardedIndex index, int batch, long seed) {
    if (batch < 1) {
      throw new IllegalArgumentException("a batch needs a document: " + batch);
    }
    this.index = index;
    this.batch = batch;
    this.random = new SplittableRandom(seed);
    int shards = index.shardCount();
    byShard = new ArrayList<>(shards);
    for (int s = 0; s < shards; s++) {
      byShard.add(new ArrayList<>());
    }
    for (Corpus.Doc d : index.corpus().docs()) {
      byShard.get(ShardedIndex.shardOf(d.id(), shards)).add(d);
    }
  }

  /** Re-indexes one batch into the next shard and refreshes it. */
  void applyNext() {
    int shard = nextShard;
    nextShard = (nextShard + 1) % byShard.size();
    List<Corpus.Doc> docs = byShard.get(shard);
    if (docs.isEmpty()) {
      return;
    }
    List<Corpus.Doc> picked = new ArrayList<>(batch);
    for (int i = 0; i < batch; i++) {
      picked.add(docs.get(random.nextInt(docs.size())));
    }
    index.reindex(shard, picked);
    applied += picked.size();
  }

  /** Documents re-indexed so far. */
  long applied() {
    return applied;
  }
}
