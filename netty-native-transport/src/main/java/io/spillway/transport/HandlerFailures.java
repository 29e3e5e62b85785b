package io.spillway.transport;

import java.lang.System.Logger;
import java.lang.System.Logger.Level;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Reports a handler's failure where an operator sees it: at WARNING, with the stack trace, at most
 * once a second per JVM, and at DEBUG otherwise, so a handler that fails on every request under
 * load cannot flood the log while the first failure is never hidden. The request itself ends as
 * {@code FAILED} either way. Thread-safe.
 */
final class HandlerFailures {

  private static final long INTERVAL_NANOS = 1_000_000_000L;
  private static final HandlerFailures JVM = new HandlerFailures(System.nanoTime());

  private final AtomicLong lastWarning;
  private final AtomicLong suppressed = new AtomicLong();

  /** @param nowNanos the time of creation: the first failure after it is warned of */
  HandlerFailures(long nowNanos) {
    this.lastWarning = new AtomicLong(nowNanos - INTERVAL_NANOS);
  }

  static void report(Logger log, Throwable failure) {
    JVM.report(log, failure, System.nanoTime()); // failure path only
  }

  void report(Logger log, Throwable failure, long nowNanos) {
    long last = lastWarning.get();
    if (nowNanos - last >= INTERVAL_NANOS && lastWarning.compareAndSet(last, nowNanos)) {
      long more = suppressed.getAndSet(0);
      log.log(Level.WARNING, more == 0 ? "handler failed"
          : "handler failed (and " + more + " more failures in the last interval, at DEBUG)", failure);
    } else {
      suppressed.incrementAndGet();
      log.log(Level.DEBUG, "handler failed", failure);
    }
  }
}
