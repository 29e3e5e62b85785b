package io.spillway.api;

/** A scheduled task that can be cancelled. Thread-safe; cancelling twice is harmless. */
@FunctionalInterface
public interface Cancellable {

  /** Cancels the task if it has not run yet. */
  void cancel();
}
