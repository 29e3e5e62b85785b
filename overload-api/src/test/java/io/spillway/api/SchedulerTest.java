package io.spillway.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.spillway.api.testing.VirtualClock;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class SchedulerTest {

  @Test
  void everyRepeatsUntilCancelled() {
    VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 15);
    List<Long> ticks = new ArrayList<>();
    Cancellable c = clock.every(10, () -> ticks.add(clock.elapsed()));
    clock.advance(35);
    assertEquals(List.of(10L, 20L, 30L), ticks);
    c.cancel();
    clock.advance(100);
    assertEquals(3, ticks.size());
  }

  @Test
  void aPeriodicTaskThatThrowsKeepsRunning() {
    VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 15);
    List<Long> ticks = new ArrayList<>();
    clock.every(10, () -> {
      ticks.add(clock.elapsed());
      throw new IllegalStateException("a metrics callback failed");
    });
    clock.advance(35);
    assertEquals(List.of(10L, 20L, 30L), ticks, "one exception must not freeze a control loop");
  }

  @Test
  void aPeriodicTaskOnAnExecutorThatThrowsKeepsRunning() throws Exception {
    java.util.concurrent.ScheduledExecutorService executor =
        java.util.concurrent.Executors.newSingleThreadScheduledExecutor();
    try {
      java.util.concurrent.CountDownLatch three = new java.util.concurrent.CountDownLatch(3);
      Cancellable c = Scheduler.of(executor).every(1_000_000, () -> {
        three.countDown();
        throw new IllegalStateException("fails every time");
      });
      org.junit.jupiter.api.Assertions.assertTrue(
          three.await(30, java.util.concurrent.TimeUnit.SECONDS), "it stopped after a failure");
      c.cancel();
    } finally {
      executor.shutdownNow();
    }
  }

  @Test
  void rejectsBadPeriodsAndDelays() {
    VirtualClock clock = new VirtualClock();
    assertThrows(IllegalArgumentException.class, () -> clock.every(0, () -> { }));
    assertThrows(IllegalArgumentException.class, () -> clock.schedule(() -> { }, -1));
  }

  @Test
  void tasksRunInTimeThenSchedulingOrder() {
    VirtualClock clock = new VirtualClock();
    List<String> order = new ArrayList<>();
    clock.schedule(() -> order.add("b"), 20);
    clock.schedule(() -> order.add("a"), 10);
    clock.schedule(() -> order.add("c"), 20);
    Cancellable dropped = clock.schedule(() -> order.add("x"), 15);
    dropped.cancel();
    clock.advance(20);
    assertEquals(List.of("a", "b", "c"), order);
  }
}
