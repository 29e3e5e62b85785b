package io.spillway.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayDeque;
import java.util.concurrent.RejectedExecutionException;
import org.junit.jupiter.api.Test;

/** The work-driven backlog probe, on an executor whose tasks the test runs by hand. */
class ExecutorBacklogProbeTest {

  /** Near the end of the range, to catch wrap-around. */
  private static final long T0 = Long.MAX_VALUE - 1_000;

  @Test
  void readsHowLongTheLoopHasBeenHeldSinceTheFirstRequestOfTheBatch() {
    ArrayDeque<Runnable> tasks = new ArrayDeque<>();
    ExecutorBacklogProbe probe = new ExecutorBacklogProbe(tasks::add);
    assertEquals(0, probe.queueingDelayNanos(T0), "nothing arrived yet");

    probe.arrived(T0);
    assertTrue(probe.pending());
    probe.arrived(T0 + 400); // a later request of the same batch does not restamp
    assertEquals(1, tasks.size(), "one probe task per batch, not per request");
    assertEquals(2_500, probe.queueingDelayNanos(T0 + 2_500)); // past Long.MAX_VALUE

    tasks.poll().run(); // the loop reaches the probe: it has caught up
    assertFalse(probe.pending());
    assertEquals(0, probe.queueingDelayNanos(T0 + 3_000));

    probe.arrived(T0 + 5_000); // the next batch stamps afresh
    assertEquals(700, probe.queueingDelayNanos(T0 + 5_700));
    assertEquals(0, probe.queueingDelayNanos(T0 + 4_000), "a reading older than the stamp is zero");
  }

  @Test
  void aLoopThatRefusesTasksIsNotProbed() {
    ExecutorBacklogProbe probe = new ExecutorBacklogProbe(task -> {
      throw new RejectedExecutionException("shutting down");
    });
    probe.arrived(T0);
    assertFalse(probe.pending());
    assertEquals(0, probe.queueingDelayNanos(T0 + 1_000_000));
  }

  @Test
  void needsALoop() {
    assertThrows(NullPointerException.class, () -> new ExecutorBacklogProbe(null));
  }
}
