package io.spillway.credit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.testing.VirtualClock;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@link QuietTimer} in virtual time, its clock started near the wrap of a nanosecond reading. */
class QuietTimerTest {

  private static final long PERIOD = 1_000_000;
  private static final long QUIET = 100 * PERIOD;

  /** Records the virtual time of each run and answers busy while {@link #busy} says so. */
  private static final class Runs {
    final VirtualClock clock;
    final List<Long> at = new ArrayList<>();
    boolean busy = true;
    boolean pending;

    Runs(VirtualClock clock) {
      this.clock = clock;
    }

    boolean run() {
      at.add(clock.elapsed());
      return busy;
    }
  }

  @Test
  void runsEveryPeriodWhileBusyAndEveryQuietPeriodOnceIdle() {
    VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 3 * PERIOD);
    Runs runs = new Runs(clock);
    QuietTimer timer = new QuietTimer(clock, clock, PERIOD, QUIET, runs::run, () -> runs.pending);
    timer.start();
    clock.advance(5 * PERIOD);
    assertEquals(List.of(PERIOD, 2 * PERIOD, 3 * PERIOD, 4 * PERIOD, 5 * PERIOD), runs.at);
    assertFalse(timer.isQuiet());

    runs.busy = false;
    clock.advance(PERIOD); // this run finds nothing to do: the next is a quiet period later
    assertTrue(timer.isQuiet());
    clock.advance(QUIET - 1);
    assertEquals(6, runs.at.size(), "no run within the quiet period: " + runs.at);
    clock.advance(1);
    assertEquals(7, runs.at.size());
    assertEquals(6 * PERIOD + QUIET, runs.at.get(6));
    clock.advance(10 * QUIET);
    assertEquals(17, runs.at.size(), "one run a quiet period");
    timer.cancel();
  }

  @Test
  void aWakeUpBringsTheNextRunWithinAPeriodAndRetiresTheQuietOne() {
    VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 3 * PERIOD);
    Runs runs = new Runs(clock);
    runs.busy = false;
    QuietTimer timer = new QuietTimer(clock, clock, PERIOD, QUIET, runs::run, () -> runs.pending);
    timer.start();
    clock.advance(PERIOD);
    assertTrue(timer.isQuiet());
    clock.advance(10 * PERIOD + 300_000);

    timer.wake();
    assertFalse(timer.isQuiet());
    timer.wake(); // not quiet: nothing to do, no second chain
    clock.advance(PERIOD);
    assertEquals(List.of(PERIOD, 12 * PERIOD), runs.at,
        "at the next point of the grid a loop that never slept runs on");
    assertTrue(timer.isQuiet(), "the run found nothing again");
    clock.advance(QUIET);
    assertEquals(3, runs.at.size());
    assertEquals(12 * PERIOD + QUIET, runs.at.get(2),
        "the quiet run scheduled before the wake-up never ran");
    timer.cancel();
  }

  @Test
  void aRunThatComesLateDoesNotShiftTheRunsAfterIt() {
    VirtualClock clock = new VirtualClock();
    Runs runs = new Runs(clock);
    boolean[] late = {true};
    io.spillway.api.Scheduler oneLate = (task, delay) -> {
      long d = late[0] ? delay + 300_000 : delay; // the first run comes 0.3 periods late
      late[0] = false;
      return clock.schedule(task, d);
    };
    QuietTimer timer = new QuietTimer(oneLate, clock, PERIOD, QUIET, runs::run, () -> false);
    timer.start();
    clock.advance(3 * PERIOD);
    assertEquals(List.of(PERIOD + 300_000, 2 * PERIOD, 3 * PERIOD), runs.at);
    timer.cancel();
  }

  @Test
  void workPublishedBeforeTheLoopTurnsQuietKeepsItAtItsPeriod() {
    VirtualClock clock = new VirtualClock();
    Runs runs = new Runs(clock);
    runs.busy = false;
    runs.pending = true; // a caller published work and called wake() before the loop was quiet
    QuietTimer timer = new QuietTimer(clock, clock, PERIOD, QUIET, runs::run, () -> runs.pending);
    timer.start();
    clock.advance(3 * PERIOD);
    assertEquals(List.of(PERIOD, 2 * PERIOD, 3 * PERIOD), runs.at);
    assertFalse(timer.isQuiet());
    timer.cancel();
  }

  @Test
  void aThrowingRunKeepsTheLoopAtItsPeriodAndCancelStopsIt() {
    VirtualClock clock = new VirtualClock();
    int[] calls = {0};
    QuietTimer timer = new QuietTimer(clock, clock, PERIOD, QUIET, () -> {
      calls[0]++;
      throw new IllegalStateException("a metrics callback failed");
    }, () -> false);
    timer.start();
    clock.advance(3 * PERIOD);
    assertEquals(3, calls[0]);
    assertFalse(timer.isQuiet());
    timer.cancel();
    timer.wake();
    clock.advance(10 * QUIET);
    assertEquals(3, calls[0], "cancelled, and a wake-up does not restart it");
  }

  @Test
  void rejectsAQuietPeriodThatIsNotAMultipleOfThePeriod() {
    VirtualClock clock = new VirtualClock();
    assertThrows(IllegalArgumentException.class,
        () -> new QuietTimer(clock, clock, PERIOD, PERIOD - 1, () -> true, () -> false));
    assertThrows(IllegalArgumentException.class,
        () -> new QuietTimer(clock, clock, 0, QUIET, () -> true, () -> false));
    assertThrows(IllegalArgumentException.class,
        () -> new QuietTimer(clock, clock, PERIOD, QUIET + 1, () -> true, () -> false));
  }
}
