package io.spillway.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.testing.VirtualClock;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class VirtualClockTest {

  @Test
  void aTaskScheduledAtTheCurrentTimeRunsInTheSameAdvanceAfterTheOthersDueThen() {
    VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 5);
    List<String> order = new ArrayList<>();
    clock.schedule(() -> {
      order.add("a@" + clock.elapsed());
      clock.schedule(() -> order.add("c@" + clock.elapsed()), 0);
    }, 10);
    clock.schedule(() -> order.add("b@" + clock.elapsed()), 10);
    clock.advance(10);
    assertEquals(List.of("a@10", "b@10", "c@10"), order);
    assertEquals(Long.MIN_VALUE + 4, clock.read(), "the reading wraps, the order does not");
  }

  @Test
  void cancellingATaskThatAlreadyRanIsHarmless() {
    VirtualClock clock = new VirtualClock();
    List<Long> runs = new ArrayList<>();
    Cancellable c = clock.schedule(() -> runs.add(clock.elapsed()), 5);
    clock.advance(5);
    c.cancel();
    c.cancel();
    clock.advance(100);
    assertEquals(List.of(5L), runs);
  }

  /**
   * A delay far in the future ({@code Long.MAX_VALUE} as "not before the test ends") must not
   * wrap into the past once the clock has moved: the task would then run at the next advance.
   */
  @Test
  void aTaskScheduledFarAheadDoesNotRunEarly() {
    VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 5);
    clock.advance(1);
    List<Long> runs = new ArrayList<>();
    clock.schedule(() -> runs.add(clock.elapsed()), Long.MAX_VALUE);
    clock.advance(1_000_000_000L);
    assertEquals(List.of(), runs, "a task scheduled Long.MAX_VALUE ahead ran after 1 s");
  }

  /** Advancing by more than is left before {@code elapsed} would wrap never moves time back. */
  @Test
  void advancingFarNeverMovesTimeBack() {
    VirtualClock clock = new VirtualClock(1_000);
    List<Long> runs = new ArrayList<>();
    clock.schedule(() -> runs.add(clock.elapsed()), 20);
    clock.advance(10);
    clock.advance(Long.MAX_VALUE);
    assertEquals(List.of(20L), runs, "the task due at 20 must have run");
    assertTrue(clock.elapsed() >= 10, "elapsed went back to " + clock.elapsed());
    assertEquals(Long.MAX_VALUE, clock.elapsed());
  }
}
