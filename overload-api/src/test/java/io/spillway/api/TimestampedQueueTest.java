package io.spillway.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class TimestampedQueueTest {

  @Test
  void delayIsNowMinusOldestAndZeroWhenEmpty() {
    TimestampedQueue<String> q = new TimestampedQueue<>();
    assertEquals(0, q.queueingDelayNanos(1_000));
    q.offer("a", 100);
    q.offer("b", 250);
    assertEquals(900, q.queueingDelayNanos(1_000));
    assertEquals("a", q.poll());
    // The oldest stamp moves to the next item on every dequeue (Breakwater §4).
    assertEquals(750, q.queueingDelayNanos(1_000));
    assertEquals("b", q.poll());
    assertEquals(0, q.queueingDelayNanos(1_000));
    assertNull(q.poll());
  }

  @Test
  void keepsFifoOrderAcrossGrowth() {
    TimestampedQueue<Integer> q = new TimestampedQueue<>(2);
    for (int round = 0; round < 3; round++) {
      for (int i = 0; i < 100; i++) {
        q.offer(i, i);
      }
      assertEquals(100, q.size());
      for (int i = 0; i < 100; i++) {
        assertEquals(i, q.oldestEnqueueNanos());
        assertEquals(i, q.poll());
      }
      assertTrue(q.isEmpty());
    }
  }

  @Test
  void delaySurvivesClockWrapAround() {
    TimestampedQueue<String> q = new TimestampedQueue<>();
    long start = Long.MAX_VALUE - 10;
    q.offer("a", start);
    long now = start + 30; // wrapped to a large negative number
    assertTrue(now < 0);
    assertEquals(30, q.queueingDelayNanos(now));
  }

  @Test
  void delayIsNeverNegative() {
    TimestampedQueue<String> q = new TimestampedQueue<>();
    q.offer("a", 500);
    assertEquals(0, q.queueingDelayNanos(400));
  }

  @Test
  void pollOlderThanRemovesOnlyTheExpiredHead() {
    TimestampedQueue<String> q = new TimestampedQueue<>();
    q.offer("a", 0);
    q.offer("b", 50);
    q.offer("c", 120);
    List<String> expired = new ArrayList<>();
    assertEquals(2, q.pollOlderThan(150, 100, expired::add));
    assertEquals(List.of("a", "b"), expired);
    assertEquals(1, q.size());
    assertEquals(30, q.queueingDelayNanos(150));
  }

  @Test
  void removeFirstTakesOneFromAnywhereAndKeepsTheRestInOrder() {
    TimestampedQueue<Integer> q = new TimestampedQueue<>(4);
    for (int i = 0; i < 3; i++) { // move the head so the ring wraps
      q.offer(-1, 0);
      q.poll();
    }
    for (int i = 0; i < 4; i++) {
      q.offer(i, 10 * i);
    }
    assertTrue(q.removeFirst(x -> x == 2)); // in the middle, across the wrap
    assertEquals(3, q.size());
    assertTrue(q.removeFirst(x -> x == 0)); // the head: the oldest stamp moves on
    assertEquals(10, q.oldestEnqueueNanos());
    assertEquals(90, q.queueingDelayNanos(100));
    assertFalse(q.removeFirst(x -> x == 2));
    assertEquals(1, q.poll());
    assertEquals(3, q.poll());
    assertTrue(q.isEmpty());
    q.offer(5, 50);
    assertTrue(q.removeFirst(x -> x == 5));
    assertEquals(0, q.queueingDelayNanos(100));
  }

  @Test
  void rejectsNull() {
    assertThrows(NullPointerException.class, () -> new TimestampedQueue<String>().offer(null, 0));
  }

  @Test
  void stagesSum() {
    TimestampedQueue<String> rx = new TimestampedQueue<>();
    TimestampedQueue<String> run = new TimestampedQueue<>();
    QueueDelaySignal total = QueueDelaySignal.sum(rx, run);
    rx.offer("p", 10);
    run.offer("t", 40);
    assertEquals(90 + 60, total.queueingDelayNanos(100));
    assertEquals(0, QueueDelaySignal.NONE.queueingDelayNanos(100));
  }
}
