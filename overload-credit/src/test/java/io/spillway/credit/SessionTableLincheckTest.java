package io.spillway.credit;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.jetbrains.lincheck.datastructures.IntGen;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Param;
import org.jetbrains.lincheck.datastructures.StressOptions;
import org.junit.jupiter.api.Test;

/**
 * Checks {@link SessionTable} with Lincheck against a {@link HashMap}: {@code get},
 * {@code putIfAbsent}, {@code remove} and a {@code forEach} count on a handful of keys, from
 * three threads, must be linearizable. The keys are chosen so that several share a stripe and a
 * home slot: their probe runs overlap, so removals re-insert neighbours (the path where a torn
 * optimistic read could return a wrong value) and inserts resize the stripe.
 *
 * <p>Stress mode runs each scenario many times on real threads. Lincheck's model checker cannot
 * drive {@link java.util.concurrent.locks.StampedLock}: it takes a writer's bounded spin before
 * parking for a livelock and reports every scenario as hung, so it checks nothing there.
 *
 * <p>Run: {@code ./mvnw -B -pl overload-credit test -Dtest=SessionTableLincheckTest}.
 */
class SessionTableLincheckTest {

  /** Keys whose hashes fall in one stripe, several in one home slot (found by {@link #sameStripe}). */
  static final long[] KEYS = sameStripe(5);

  /** The first {@code n} ids from 1 up whose mixed hash picks stripe 0 and home slot 0..1 of 16. */
  static long[] sameStripe(int n) {
    long[] keys = new long[n];
    int found = 0;
    for (long id = 1; found < n; id++) {
      long h = id * 0x9E3779B97F4A7C15L;
      h ^= h >>> 32;
      if ((h >>> 58) == 0 && ((int) h & 15) <= 1) {
        keys[found++] = id;
      }
    }
    return keys;
  }

  @Param(name = "key", gen = IntGen.class, conf = "0:4")
  public static class Table {
    private final SessionTable<Integer> table = new SessionTable<>();

    @Operation
    public Integer get(@Param(name = "key") int key) {
      return table.get(KEYS[key]);
    }

    @Operation
    public Integer putIfAbsent(@Param(name = "key") int key, @Param(name = "key") int value) {
      return table.putIfAbsent(KEYS[key], value);
    }

    @Operation
    public Integer remove(@Param(name = "key") int key) {
      return table.remove(KEYS[key]);
    }

    /** Counts the sessions present; not atomic across stripes, but these keys share one. */
    @Operation
    public int count() {
      AtomicInteger n = new AtomicInteger();
      table.forEach(v -> n.incrementAndGet());
      return n.get();
    }
  }

  /** The sequential specification. */
  public static class Model {
    private final Map<Long, Integer> map = new HashMap<>();

    public Integer get(int key) {
      return map.get(KEYS[key]);
    }

    public Integer putIfAbsent(int key, int value) {
      return map.putIfAbsent(KEYS[key], value);
    }

    public Integer remove(int key) {
      return map.remove(KEYS[key]);
    }

    public int count() {
      return map.size();
    }
  }

  @Test
  void getPutRemoveAndForEachAreLinearizableUnderStress() {
    new StressOptions()
        .iterations(30)
        .invocationsPerIteration(2_000)
        .threads(3)
        .actorsPerThread(4)
        .actorsBefore(3)
        .actorsAfter(2)
        .sequentialSpecification(Model.class)
        .check(Table.class);
  }
}
