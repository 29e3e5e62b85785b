package io.spillway.api;

/**
 * A source of monotonic time in nanoseconds, injected into every controller so that the same
 * class runs under the real clock, in the simulator and in unit tests.
 *
 * <p>Readings are only meaningful as differences: {@code a - b}. Code that compares two readings
 * must compare their difference with zero ({@code a - b < 0}), never the readings themselves,
 * because a reading may wrap past {@link Long#MAX_VALUE} (tests start fake clocks there).
 *
 * <p>Implementations must be thread-safe.
 */
@FunctionalInterface
public interface Ticker {

  /** Returns the current time in nanoseconds. */
  long read();

  /** The JVM's monotonic clock, {@link System#nanoTime()}. */
  static Ticker system() {
    return SystemTicker.INSTANCE;
  }
}

enum SystemTicker implements Ticker {
  INSTANCE;

  @Override
  public long read() {
    return System.nanoTime();
  }
}
