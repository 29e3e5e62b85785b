package io.spillway.kv;

import io.spillway.api.RequestBudget;
import io.spillway.api.Ticker;
import java.util.Locale;

/**
 * Measures, on this machine, what the simulator needs to run the VAR experiment at the paper's
 * core count (protego-nsdi23 §5.3), which two cores cannot run on sockets: the store's mean
 * time per SET and per GET (hash, item lock, slab allocation, copy, LRU link), and the time one SET holds the global slab lock — one allocation plus, for a SET that
 * replaces an item, the free of the old chunk, as memcached's {@code slabs_alloc} and {@code
 * slabs_free}. Single-threaded, uncontended, after a warm-up, on VAR's keys and value sizes.
 * Protocol parsing and the socket's cost are not here: the harness measures those on real sockets.
 *
 * <p>Run: {@code ./spillway kv-calibrate} (prints scenario keys for {@code scenarios/kv-var.conf}).
 */
public final class KvCalibration {

  private KvCalibration() { }

  /** One calibration's means, in nanoseconds. */
  public record Result(double setNanos, double getNanos, double slabHoldNanos,
      double budgetedSetNanos, double budgetedGetNanos) {
    /** The scenario keys the simulator reads (scenarios/kv-var.conf). */
    public String scenarioKeys() {
      return String.format(Locale.ROOT,
          "path_service_us = %.3f, %.3f%npath_hold_us = %.3f, 0%n",
          setNanos / 1e3, getNanos / 1e3, Math.min(slabHoldNanos, setNanos) / 1e3);
    }
  }

  public static Result measure(int rounds, int opsPerRound) {
    Ticker ticker = System::nanoTime;
    KvStore store = new KvStore(1L << 30, ticker, () -> System.currentTimeMillis() / 1000);
    VarWorkload load = new VarWorkload(1);
    byte[] value = new byte[16 * 1024];
    long now = ticker.read();
    for (int i = 0; i < VarWorkload.KEYS; i++) {
      set(store, load.key(i), value, load.valueLength(i), now);
    }
    int[] sink = new int[1];
    KvStore.ValueSink reader = (k, flags, cas, page, offset, length) -> sink[0] += length;
    double set = Double.MAX_VALUE;
    double get = Double.MAX_VALUE;
    double hold = Double.MAX_VALUE;
    double budgetedSet = Double.MAX_VALUE;
    double budgetedGet = Double.MAX_VALUE;
    for (int round = 0; round < rounds; round++) {
      // SETs (every key exists: each replaces, so it allocates one chunk and frees one)
      long t0 = System.nanoTime();
      for (int i = 0; i < opsPerRound; i++) {
        int k = load.nextKey();
        set(store, load.key(k), value, load.valueLength(k), t0);
      }
      long t1 = System.nanoTime();
      for (int i = 0; i < opsPerRound; i++) {
        store.get(load.key(load.nextKey()), t1, reader);
      }
      long t2 = System.nanoTime();
      // the slab lock's critical sections alone: allocate then free, VAR's size classes
      SlabAllocator slabs = store.slabs();
      for (int i = 0; i < opsPerRound; i++) {
        int c = slabs.classFor(load.valueLength(load.nextKey()));
        int chunk = slabs.allocate(c);
        if (chunk != SlabAllocator.NONE) {
          slabs.free(chunk);
        }
      }
      long t3 = System.nanoTime();
      // the same SETs and GETs as the ASQM scheme runs them: a budget bound per request, every
      // lock acquired within it (what protection costs when nothing is refused)
      for (int i = 0; i < opsPerRound; i++) {
        int k = load.nextKey();
        ScopedValue.where(RequestBudget.CURRENT, RequestBudget.fromTarget(110_000, 2_000, 0))
            .run(() -> set(store, load.key(k), value, load.valueLength(k), t3));
      }
      long t4 = System.nanoTime();
      for (int i = 0; i < opsPerRound; i++) {
        byte[] key = load.key(load.nextKey());
        ScopedValue.where(RequestBudget.CURRENT, RequestBudget.fromTarget(110_000, 2_000, 0))
            .run(() -> store.get(key, t4, reader));
      }
      long t5 = System.nanoTime();
      budgetedSet = Math.min(budgetedSet, (t4 - t3) / (double) opsPerRound);
      budgetedGet = Math.min(budgetedGet, (t5 - t4) / (double) opsPerRound);
      // the best round: the least disturbed by GC and the other core's work
      set = Math.min(set, (t1 - t0) / (double) opsPerRound);
      get = Math.min(get, (t2 - t1) / (double) opsPerRound);
      hold = Math.min(hold, (t3 - t2) / (double) opsPerRound);
    }
    if (sink[0] == 0) {
      throw new AssertionError("no value read");
    }
    return new Result(set, get, hold, budgetedSet, budgetedGet);
  }

  private static void set(KvStore store, byte[] key, byte[] value, int length, long now) {
    int chunk = store.reserve(length, now);
    store.write(chunk, 0, value, 0, length);
    store.store(KvStore.Mode.SET, key, 0, 0, 0, chunk, length, now);
  }

  public static void main(String[] args) {
    int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 15;
    Result r = measure(rounds, 1_000_000);
    System.out.printf(Locale.ROOT, "JDK %s, %d cores; best of %d rounds of 1,000,000 ops%n",
        Runtime.version(), Runtime.getRuntime().availableProcessors(), rounds);
    System.out.printf(Locale.ROOT, "SET %.0f ns, GET %.0f ns, slab lock held per SET %.0f ns"
        + " (allocate + free)%n", r.setNanos(), r.getNanos(), r.slabHoldNanos());
    System.out.printf(Locale.ROOT, "with a request budget bound (the asqm scheme): SET %.0f ns,"
        + " GET %.0f ns%n", r.budgetedSetNanos(), r.budgetedGetNanos());
    System.out.print(r.scenarioKeys());
  }
}
