package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The oldest admitted call not yet at its handler, with literal times. */
class UnstartedCallsTest {

  private static final long T0 = Long.MAX_VALUE - 1_000; // the ticker may wrap

  @Test
  void readsTheOldestWaitingCallAndSkipsStartedOnes() {
    UnstartedCalls calls = new UnstartedCalls();
    assertEquals(0, calls.queueingDelayNanos(T0));
    long a = calls.arrived(T0);
    long b = calls.arrived(T0 + 100);
    long c = calls.arrived(T0 + 300);
    assertEquals(500, calls.queueingDelayNanos(T0 + 500));
    calls.started(b); // out of order: a still waits
    assertEquals(500, calls.queueingDelayNanos(T0 + 500));
    calls.started(a);
    assertEquals(200, calls.queueingDelayNanos(T0 + 500), "c is now the oldest");
    calls.started(c);
    calls.started(c); // idempotent
    assertEquals(0, calls.queueingDelayNanos(T0 + 500));
    long d = calls.arrived(T0 + 600);
    assertEquals(400, calls.queueingDelayNanos(T0 + 1_000));
    calls.started(d);
    assertEquals(0, calls.queueingDelayNanos(T0 + 1_000));
  }

  @Test
  void aStampAfterTheReadingCountsAsZero() {
    UnstartedCalls calls = new UnstartedCalls();
    calls.arrived(T0 + 10);
    assertEquals(0, calls.queueingDelayNanos(T0));
  }

  @Test
  void overflowingTheRingUnderReadsOnlyTheOverwrittenCalls() {
    UnstartedCalls calls = new UnstartedCalls();
    long first = calls.arrived(T0);
    for (int i = 1; i < UnstartedCalls.SIZE; i++) {
      calls.arrived(T0 + 1);
    }
    calls.arrived(T0 + 2); // overwrites the first slot
    assertEquals(8, calls.queueingDelayNanos(T0 + 9), "the oldest still-held call: 9 - 1");
    calls.started(first); // its slot now belongs to another call: nothing changes
    assertEquals(8, calls.queueingDelayNanos(T0 + 9));
  }
}
