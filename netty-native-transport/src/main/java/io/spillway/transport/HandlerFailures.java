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
  private static final AtomicLong LAST_WARNING = new AtomicLong(System.nanoTime() - INTERVAL_NANOS);
  private static final AtomicLong SUPPRESSED = new AtomicLong();

  private HandlerFailures() { }

  static void report(Logger log, Throwable failure) {
    long now = System.nanoTime(); // failure path only
    long last = LAST_WARNING.get();
    if (now - last >= INTERVAL_NANOS && LAST_WARNING.compareAndSet(last, now)) {
      long more = SUPPRESSED.getAndSet(0);
      log.log(Level.WARNING, more == 0 ? "handler failed"
          : "handler failed (and " + more + " more failures in the last interval, at DEBUG)", failure);
    } else {
      SUPPRESSED.incrementAndGet();
      log.log(Level.DEBUG, "handler failed", failure);
    }
  }
}
