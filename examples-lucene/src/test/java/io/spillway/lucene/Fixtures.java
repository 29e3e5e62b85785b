package io.spillway.lucene;

import io.spillway.api.Ticker;

/** A small index shared by the test classes of one JVM: 2,000 documents of the real corpus. */
final class Fixtures {

  static final int DOCS = 2_000;
  static final int SHARDS = 4;

  private static Corpus corpus;

  private Fixtures() { }

  static synchronized Corpus corpus() {
    if (corpus == null) {
      corpus = Corpus.wordNet(DOCS);
    }
    return corpus;
  }

  /** A fresh index of {@link #corpus()} (tests that update or lock it need their own). */
  static ShardedIndex index(Ticker ticker) {
    return ShardedIndex.build(corpus(), SHARDS, ticker);
  }

  static long seed() {
    String s = System.getProperty("spillway.seed");
    return s == null || s.isBlank() ? 42 : Long.parseLong(s);
  }
}
