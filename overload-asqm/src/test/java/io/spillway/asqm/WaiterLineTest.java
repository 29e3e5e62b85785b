package io.spillway.asqm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class WaiterLineTest {

  /** Reproducible: the seed is printed on failure and taken from {@code -Dspillway.seed}. */
  static long seed() {
    String property = System.getProperty("spillway.seed");
    return property == null || property.isBlank() || property.startsWith("$")
        ? System.nanoTime() : Long.parseLong(property);
  }

  @Test
  void emptyLineHasNoDelay() {
    WaiterLine line = new WaiterLine();
    assertEquals(0, line.queueingDelayNanos(Long.MIN_VALUE));
    assertEquals(0, line.size());
  }

  @Test
  void headIsTheOldestStampWhateverTheJoinAndLeaveOrder() {
    long seed = seed();
    SplittableRandom random = new SplittableRandom(seed);
    WaiterLine line = new WaiterLine();
    List<WaiterLine.Waiter> members = new ArrayList<>();
    long base = Long.MAX_VALUE - 500; // stamps wrap
    for (int step = 0; step < 20_000; step++) {
      if (members.isEmpty() || random.nextInt(3) > 0 && members.size() < 50) {
        // Mostly increasing stamps, sometimes a racing joiner with an older one.
        long stamp = base + step - random.nextInt(random.nextInt(4) == 0 ? 40 : 1);
        members.add(line.join(stamp));
      } else {
        line.leave(members.remove(random.nextInt(members.size())));
      }
      assertEquals(members.size(), line.size(), "seed " + seed);
      if (!members.isEmpty()) {
        long oldest = members.getFirst().stamp;
        for (WaiterLine.Waiter w : members) {
          oldest = w.stamp - oldest < 0 ? w.stamp : oldest;
        }
        assertEquals(oldest, line.oldestStampExact(), "seed " + seed);
        long now = base + step + 7;
        assertEquals(now - oldest, line.queueingDelayNanos(now), "seed " + seed);
      } else {
        assertEquals(0, line.queueingDelayNanos(base + step));
      }
    }
  }

  /**
   * Threads join and leave concurrently; while a thread is in the line the published delay is at
   * least its own wait (the oldest stamp is never newer than any member's), and the line ends
   * empty.
   */
  @Test
  void concurrentJoinAndLeaveKeepTheOldestRight() throws Exception {
    long seed = seed();
    int threads = 4;
    int rounds = 20_000;
    WaiterLine line = new WaiterLine();
    AtomicLong clock = new AtomicLong(Long.MAX_VALUE - 1_000);
    AtomicReference<Throwable> failure = new AtomicReference<>();
    CyclicBarrier start = new CyclicBarrier(threads);
    List<Thread> workers = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      SplittableRandom random = new SplittableRandom(seed + t);
      workers.add(Thread.ofPlatform().start(() -> {
        try {
          start.await();
          for (int i = 0; i < rounds; i++) {
            long stamp = clock.getAndIncrement() - random.nextInt(3);
            WaiterLine.Waiter mine = line.join(stamp);
            long now = clock.get();
            long delay = line.queueingDelayNanos(now);
            if (delay < now - stamp) {
              throw new AssertionError("delay " + delay + " < own wait " + (now - stamp));
            }
            line.leave(mine);
          }
        } catch (Throwable e) {
          failure.compareAndSet(null, e);
        }
      }));
    }
    for (Thread worker : workers) {
      worker.join();
    }
    if (failure.get() != null) {
      throw new AssertionError("seed " + seed, failure.get());
    }
    assertEquals(0, line.size());
    assertEquals(0, line.queueingDelayNanos(clock.get()));
    assertTrue(clock.get() - (Long.MAX_VALUE - 1_000) == (long) threads * rounds);
  }
}
