package io.spillway.lucene;

import io.spillway.api.Ticker;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A clock the test moves by hand, readable from any thread; started near {@link Long#MAX_VALUE}
 * so that code comparing readings the wrong way fails at once. {@link #autoAdvance} makes every
 * reading move it on, to let time pass inside code the test cannot pause (a Lucene search).
 */
final class ManualTicker implements Ticker {

  private final AtomicLong now = new AtomicLong(Long.MAX_VALUE - 1_000_000_000L);
  private volatile long stepPerRead;

  @Override
  public long read() {
    return now.getAndAdd(stepPerRead);
  }

  void advance(long nanos) {
    now.addAndGet(nanos);
  }

  /** From now on each reading advances the clock by {@code nanos} after it is taken. */
  void autoAdvance(long nanos) {
    stepPerRead = nanos;
  }
}
