package io.spillway.transport;

/**
 * Where a {@link SpillwayServer} runs admitted requests (µTune's threading models,
 * mutune-osdi18: inline vs dispatch).
 */
public enum Threading {
  /**
   * Each request goes to the configured dispatcher (by default a new virtual thread; the Loom
   * carrier-delay dispatcher measures its queue). Requests may block; cores scale; each request
   * pays a thread hand-off.
   */
  DISPATCH,
  /**
   * Requests wait in a timestamped queue on their connection's event loop and run there in short
   * slices, the loop reading its sockets between slices ({@link LoopQueue}). No hand-off; handlers
   * must not block; one core per loop. The queue's age is the overload signal's dispatch stage.
   */
  LOOP_QUEUE
}
