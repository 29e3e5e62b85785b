package io.spillway.spring.internal;

import io.spillway.api.Ticker;
import io.spillway.spring.ServerQueueDelay;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The stages the starter adds in front of a servlet application's handlers: the CPU run queue and
 * the run slots, both present or both absent (they need Linux's per-thread scheduler statistics).
 * Registers them with the server's queueing delay when made. Thread-safe.
 */
public final class ServletStages {

  private final RunQueueDelay runQueue;
  private final RunSlots slots;
  private final int threads;

  /**
   * @param parallelism the CPUs requests share ({@code spillway.parallelism})
   * @param threads the container's request threads
   */
  public ServletStages(Ticker ticker, ServerQueueDelay delay, int parallelism, int threads) {
    this.threads = threads;
    this.runQueue = RunQueueDelay.create(ticker).orElse(null);
    if (runQueue != null) {
      delay.addMeasured("cpu-run-queue", runQueue);
      slots = new RunSlots(ticker, Math.min(parallelism, threads), threads);
      delay.addMeasured("servlet-run-slots", slots);
    } else {
      slots = null;
    }
  }

  /** The container's request threads: the most run slots. */
  public int threads() {
    return threads;
  }

  /** The run-queue stage, or {@code null} where it cannot be measured. */
  RunQueueDelay runQueue() {
    return runQueue;
  }

  /** The run slots, or {@code null} where the run queue cannot be measured. */
  RunSlots slots() {
    return slots;
  }

  /** The slots' state for the Actuator endpoint; empty without slots. */
  public Map<String, Object> state() {
    Map<String, Object> m = new LinkedHashMap<>();
    if (slots != null) {
      m.put("slots", slots.slots());
      m.put("running", slots.running());
      m.put("waiting", slots.waiting());
    }
    return m;
  }
}
