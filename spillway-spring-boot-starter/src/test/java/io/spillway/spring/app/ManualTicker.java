package io.spillway.spring.app;

import io.spillway.api.Ticker;
import java.util.concurrent.atomic.AtomicLong;

/** A clock the test moves by hand, started near {@code Long.MAX_VALUE} to catch wrap-around. */
public final class ManualTicker implements Ticker {
  private final AtomicLong now = new AtomicLong(Long.MAX_VALUE - 3_600_000_000_000L);

  @Override
  public long read() {
    return now.get();
  }

  public void advanceMillis(long ms) {
    now.addAndGet(ms * 1_000_000);
  }
}
