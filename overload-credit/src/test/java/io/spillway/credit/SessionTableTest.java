package io.spillway.credit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class SessionTableTest {

  private static long seed() {
    String s = System.getProperty("spillway.seed");
    return s == null || s.isBlank() ? 20261122L : Long.parseLong(s);
  }

  @Test
  void behavesLikeAMapUnderRandomOperations() {
    long seed = seed();
    SplittableRandom random = new SplittableRandom(seed);
    SessionTable<String> table = new SessionTable<>();
    Map<Long, String> reference = new HashMap<>();
    for (int op = 0; op < 200_000; op++) {
      // A small key space forces collisions, removals inside probe runs and re-insertions.
      long key = random.nextInt(4_000) - 2_000L + (random.nextBoolean() ? Long.MAX_VALUE - 5_000 : 0);
      switch (random.nextInt(3)) {
        case 0 -> {
          String v = "v" + op;
          assertEquals(reference.putIfAbsent(key, v), table.putIfAbsent(key, v), "seed " + seed);
        }
        case 1 -> assertEquals(reference.remove(key), table.remove(key), "seed " + seed);
        default -> assertEquals(reference.get(key), table.get(key), "seed " + seed);
      }
    }
    for (Map.Entry<Long, String> e : reference.entrySet()) {
      assertEquals(e.getValue(), table.get(e.getKey()), "seed " + seed);
    }
  }

  @Test
  void readersNeverSeeAWrongValueWhileWritersChurn() throws Exception {
    SessionTable<Long> table = new SessionTable<>();
    for (long k = 0; k < 1_000; k++) {
      table.putIfAbsent(k, k); // stable keys, each mapped to itself
    }
    AtomicReference<Throwable> failure = new AtomicReference<>();
    CountDownLatch done = new CountDownLatch(3);
    Runnable writer = () -> {
      try {
        for (int round = 0; round < 200; round++) {
          for (long k = 10_000; k < 10_500; k++) {
            table.putIfAbsent(k, k);
          }
          for (long k = 10_000; k < 10_500; k++) {
            table.remove(k);
          }
        }
      } catch (Throwable t) {
        failure.compareAndSet(null, t);
      } finally {
        done.countDown();
      }
    };
    Runnable reader = () -> {
      try {
        for (int round = 0; round < 2_000; round++) {
          for (long k = 0; k < 1_000; k += 7) {
            Long v = table.get(k);
            if (v == null || v != k) {
              throw new AssertionError("key " + k + " read as " + v);
            }
          }
        }
      } catch (Throwable t) {
        failure.compareAndSet(null, t);
      } finally {
        done.countDown();
      }
    };
    Thread.ofPlatform().start(writer);
    Thread.ofPlatform().start(reader);
    Thread.ofPlatform().start(reader);
    done.await();
    assertNull(failure.get(), () -> String.valueOf(failure.get()));
    for (long k = 10_000; k < 10_500; k++) {
      assertNull(table.get(k));
    }
  }

  /** A conditional removal takes the key only while it maps to that very value. */
  @Test
  void removeOfAValueTakesOnlyThatValue() {
    SessionTable<Object> table = new SessionTable<>();
    Object first = new Object();
    Object second = new Object();
    table.putIfAbsent(7, first);
    org.junit.jupiter.api.Assertions.assertFalse(table.remove(7, second));
    org.junit.jupiter.api.Assertions.assertSame(first, table.get(7));
    org.junit.jupiter.api.Assertions.assertTrue(table.remove(7, first));
    org.junit.jupiter.api.Assertions.assertNull(table.get(7));
    org.junit.jupiter.api.Assertions.assertFalse(table.remove(7, first));
  }

  @Test
  void putIfAbsentKeepsTheFirst() {
    SessionTable<Object> table = new SessionTable<>();
    Object first = new Object();
    assertNull(table.putIfAbsent(7, first));
    assertSame(first, table.putIfAbsent(7, new Object()));
    assertSame(first, table.remove(7));
    assertNull(table.remove(7));
    assertTrue(table.get(7) == null);
  }
}
