package io.spillway.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.List;
import java.util.ResourceBundle;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * A handler's failures reach the log at WARNING, with the failure, at most once a second, the
 * rest at DEBUG with a count in the next warning; time is given, not read (the clock starts near
 * {@link Long#MAX_VALUE} to cross its wrap-around).
 */
class HandlerFailuresTest {

  /** Every record logged: level, message, and the failure's message. */
  private static final class Recording implements System.Logger {
    final List<String> records = new ArrayList<>();

    @Override public String getName() { return "recording"; }
    @Override public boolean isLoggable(Level level) { return true; }

    @Override
    public void log(Level level, ResourceBundle bundle, String msg, Throwable thrown) {
      records.add(level + " " + msg + (thrown == null ? "" : ": " + thrown.getMessage()));
    }

    @Override
    public void log(Level level, ResourceBundle bundle, String format, Object... params) {
      records.add(level + " " + format);
    }

    @Override
    public void log(Level level, Supplier<String> msgSupplier, Throwable thrown) {
      log(level, (ResourceBundle) null, msgSupplier.get(), thrown);
    }
  }

  @Test
  void theFirstFailureIsAWarningAndTheRestOfTheSecondGoToDebugCounted() {
    long start = Long.MAX_VALUE - 1_500_000_000L;
    HandlerFailures failures = new HandlerFailures(start);
    Recording log = new Recording();
    failures.report(log, new IllegalStateException("one"), start);
    failures.report(log, new IllegalStateException("two"), start + 400_000_000L);
    failures.report(log, new IllegalStateException("three"), start + 999_999_999L);
    failures.report(log, new IllegalStateException("four"), start + 1_000_000_000L); // past MAX_VALUE
    assertEquals(List.of(
        "WARNING handler failed: one",
        "DEBUG handler failed: two",
        "DEBUG handler failed: three",
        "WARNING handler failed (and 2 more failures in the last interval, at DEBUG): four"), log.records);
  }
}
