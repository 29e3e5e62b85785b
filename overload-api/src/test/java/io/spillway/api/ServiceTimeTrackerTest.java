package io.spillway.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The p99 estimate in virtual time, from a clock near the wrap-around of a signed long. */
class ServiceTimeTrackerTest {

  private static final long MS = 1_000_000L;
  private static final long T0 = Long.MAX_VALUE - 1_000 * MS;

  @Test
  void settlesNearThe99thPercentile() {
    ServiceTimeTracker t = new ServiceTimeTracker();
    long now = T0;
    for (int i = 0; i < 200_000; i++) {
      now += 10_000;
      t.record(i % 100 == 0 ? 5 * MS : MS / 10, now); // 1 % at 5 ms, the rest at 100 µs
    }
    long p99 = t.p99Nanos(now);
    assertTrue(p99 >= MS / 10 && p99 <= 5 * MS, "p99 " + p99);
  }

  @Test
  void aStaleEstimateHalvesForEverySpanOfItsOwnLength() {
    ServiceTimeTracker t = new ServiceTimeTracker();
    t.record(1_000 * MS, T0); // one call held for a second by a refresh
    assertEquals(1_000 * MS, t.p99Nanos(T0 + 999 * MS), "not stale yet");
    assertEquals(500 * MS, t.p99Nanos(T0 + 1_000 * MS));
    assertEquals(250 * MS, t.p99Nanos(T0 + 1_500 * MS));
    // the refusals it causes feed it nothing; it still comes down under a 100 ms deadline
    assertTrue(t.p99Nanos(T0 + 2_000 * MS) < 100 * MS, "p99 " + t.p99Nanos(T0 + 2_000 * MS));
    // a sample restarts from the decayed estimate, not from the stale one
    t.record(MS, T0 + 2_000 * MS);
    assertTrue(t.p99Nanos(T0 + 2_000 * MS) < 100 * MS);
  }

  @Test
  void withoutAClockItNeverDecays() {
    ServiceTimeTracker t = new ServiceTimeTracker();
    t.record(1_000 * MS);
    assertEquals(1_000 * MS, t.p99Nanos());
    assertEquals(1_000 * MS, t.p99Nanos(T0 + 10_000 * MS), "no sample was timed");
  }

  @Test
  void callsOneAtATimeWithGapsLongerThanACallKeepTheirP99() {
    ServiceTimeTracker t = new ServiceTimeTracker();
    long now = T0;
    for (int i = 0; i < 300; i++) {
      now += 3 * MS / 2; // the client's pause between calls: the server idle
      now += 3 * MS;     // one call of 3 ms
      t.record(3 * MS, now);
    }
    // the next call arrives 1 ms after the last one ended: its deadline is judged against ~3 ms
    long p99 = t.p99Nanos(now + MS);
    assertTrue(p99 >= 5 * MS / 2, "p99 " + p99 + " ns, every call took 3 ms");
  }

  @Test
  void anEstimateThatRefusesCallsKeepsItsValueThroughIdlenessAndDecaysOnlyWhileItRefuses() {
    ServiceTimeTracker t = ServiceTimeTracker.decayingWhileRefusing();
    t.record(3 * MS, T0); // calls take 3 ms
    // one call every 5 ms (a third of capacity): idle for longer than the p99 before each
    assertEquals(3 * MS, t.p99Nanos(T0 + 5 * MS), "idle, but nothing refused: not stale");
    assertEquals(3 * MS, t.p99Nanos(T0 + 60_000 * MS), "a minute idle: still the calls' p99");
    // a call with a 2 ms deadline is refused on it; from then on the estimate decays
    t.refused(T0 + 60_000 * MS);
    t.refused(T0 + 60_002 * MS); // a later refusal does not restart the decay
    assertEquals(3 * MS, t.p99Nanos(T0 + 60_002 * MS));
    assertEquals(3 * MS / 2, t.p99Nanos(T0 + 60_003 * MS), "one span of 3 ms refusing: halved");
    // a call runs (its deadline now fits): its sample restarts the estimate, no lower than itself
    t.record(3 * MS, T0 + 60_010 * MS);
    assertTrue(t.p99Nanos(T0 + 60_100 * MS) > 29 * MS / 10, "p99 " + t.p99Nanos(T0 + 60_100 * MS));
  }

  @Test
  void aPlainTrackerIsNotChangedByRefusals() {
    ServiceTimeTracker t = new ServiceTimeTracker();
    t.record(3 * MS, T0);
    t.refused(T0);
    assertEquals(3 * MS / 2, t.p99Nanos(T0 + 3 * MS), "idle for its length: halved, as before");
  }

  /**
   * A busy server (8 calls of 1 ms in flight, one ending every 125 µs) stalls for a second: every
   * running call ends a second late. The stall is eight slow samples, not a p99 of a second.
   */
  @Test
  void aStallThatHoldsEveryRunningCallMovesTheEstimateAStepPerCall() {
    ServiceTimeTracker t = new ServiceTimeTracker();
    long now = T0;
    for (int i = 0; i < 20_000; i++) {
      now += MS / 8;
      t.record(MS, now);
    }
    long before = t.p99Nanos(now);
    assertTrue(before >= 9 * MS / 10 && before <= 11 * MS / 10, "p99 before " + before);
    now += 1_000 * MS; // nothing ends for a second
    for (int i = 0; i < 8; i++) {
      t.record(1_000 * MS + MS, now); // the calls that were running, a second late
    }
    long after = t.p99Nanos(now);
    assertTrue(after < 2 * before, "p99 " + after + " ns after a stall, " + before + " before");
    for (int i = 0; i < 2_000; i++) {
      now += MS / 8;
      t.record(MS, now);
    }
    assertTrue(t.p99Nanos(now) < 13 * MS / 10, "back within 30 %: " + t.p99Nanos(now));
  }

  /** Calls back to back that become ten times slower: the estimate follows within 100 calls. */
  @Test
  void backToBackCallsThatSlowDownAreFollowed() {
    ServiceTimeTracker t = new ServiceTimeTracker();
    long now = T0;
    for (int i = 0; i < 1_000; i++) {
      now += MS;
      t.record(MS, now);
    }
    for (int i = 0; i < 100; i++) {
      now += 10 * MS;
      t.record(10 * MS, now);
    }
    assertTrue(t.p99Nanos(now) >= 9 * MS, "p99 " + t.p99Nanos(now));
  }

  /** After the server idled for longer than the estimate, one call's sample restarts it. */
  @Test
  void aCallAfterIdlenessRestartsAStaleEstimateAtItsLength() {
    ServiceTimeTracker t = new ServiceTimeTracker();
    t.record(MS, T0);
    t.record(20 * MS, T0 + 100 * MS); // started 79 ms after the last sample: idle, stale
    long p99 = t.p99Nanos(T0 + 100 * MS);
    assertTrue(p99 >= 19 * MS && p99 <= 20 * MS, "p99 " + p99);
  }

  /** Where stalls are to raise it, the same stall sets the estimate to its length at once. */
  @Test
  void aTrackerRaisedByStallsTakesTheStallsLength() {
    ServiceTimeTracker t = ServiceTimeTracker.raisedByStalls();
    long now = T0;
    for (int i = 0; i < 20_000; i++) {
      now += MS / 8;
      t.record(MS, now);
    }
    now += 1_000 * MS;
    t.record(1_000 * MS + MS, now);
    assertTrue(t.p99Nanos(now) >= 1_000 * MS, "p99 " + t.p99Nanos(now));
  }
}
