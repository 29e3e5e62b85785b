package io.spillway.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.BudgetExceededException;
import io.spillway.api.RequestBudget;
import io.spillway.asqm.BudgetedLock;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The store's memcached semantics and its budgeted locks, in virtual time. */
@Timeout(60)
class KvStoreTest {

  /** Starts near the wrap-around of a signed long to catch {@code a < b} comparisons. */
  private final AtomicLong clock = new AtomicLong(Long.MAX_VALUE - 5_000_000_000L);
  private final AtomicLong epoch = new AtomicLong(1_800_000_000L);
  private final KvStore store = new KvStore(4L << 20, clock::get, epoch::get);

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.US_ASCII);
  }

  private KvStore.StoreResult put(KvStore.Mode mode, String key, String value, long exptime, long cas) {
    byte[] v = b(value);
    int chunk = store.reserve(v.length, clock.get());
    store.write(chunk, 0, v, 0, v.length);
    return store.store(mode, b(key), 7, exptime, cas, chunk, v.length, clock.get());
  }

  private KvStore.StoreResult set(String key, String value) {
    return put(KvStore.Mode.SET, key, value, 0, 0);
  }

  private String get(String key) {
    String[] out = new String[1];
    store.get(b(key), clock.get(), (k, flags, cas, page, offset, length) ->
        out[0] = new String(page, offset, length, StandardCharsets.US_ASCII));
    return out[0];
  }

  private long cas(String key) {
    long[] out = {-1};
    store.get(b(key), clock.get(), (k, flags, cas, page, offset, length) -> out[0] = cas);
    return out[0];
  }

  private void assertNoLeak() {
    SlabAllocator.Usage u = store.slabs().usage();
    assertEquals(u.totalChunks(), u.usedChunks() + u.freeChunks(), "chunk accounting");
    assertEquals(store.items(), u.usedChunks(), "every used chunk belongs to a live item");
  }

  @Test
  void storageCommandsFollowMemcached() {
    assertEquals(KvStore.StoreResult.STORED, set("a", "1"));
    assertEquals("1", get("a"));
    assertEquals(KvStore.StoreResult.NOT_STORED, put(KvStore.Mode.ADD, "a", "2", 0, 0));
    assertEquals(KvStore.StoreResult.STORED, put(KvStore.Mode.ADD, "b", "2", 0, 0));
    assertEquals(KvStore.StoreResult.NOT_STORED, put(KvStore.Mode.REPLACE, "c", "3", 0, 0));
    assertEquals(KvStore.StoreResult.STORED, put(KvStore.Mode.REPLACE, "b", "3", 0, 0));
    assertEquals("3", get("b"));
    assertEquals(KvStore.StoreResult.STORED, put(KvStore.Mode.APPEND, "b", "4", 0, 0));
    assertEquals(KvStore.StoreResult.STORED, put(KvStore.Mode.PREPEND, "b", "2", 0, 0));
    assertEquals("234", get("b"));
    assertEquals(KvStore.StoreResult.NOT_STORED, put(KvStore.Mode.APPEND, "zz", "4", 0, 0));
    long cas = cas("b");
    assertEquals(KvStore.StoreResult.EXISTS, put(KvStore.Mode.CAS, "b", "x", 0, cas + 1));
    assertEquals(KvStore.StoreResult.STORED, put(KvStore.Mode.CAS, "b", "x", 0, cas));
    assertEquals(KvStore.StoreResult.EXISTS, put(KvStore.Mode.CAS, "b", "y", 0, cas));
    assertEquals(KvStore.StoreResult.NOT_FOUND, put(KvStore.Mode.CAS, "nope", "y", 0, 1));
    assertTrue(store.delete(b("b"), clock.get()));
    assertFalse(store.delete(b("b"), clock.get()));
    assertNull(get("b"));
    assertNoLeak();
  }

  @Test
  void incrWrapsDecrStopsAtZeroAndNonNumericIsRefused() {
    set("n", "18446744073709551614");
    assertEquals(new KvStore.Delta.Value(-1L), store.incrDecr(b("n"), true, 1, clock.get()));
    assertEquals(new KvStore.Delta.Value(0L), store.incrDecr(b("n"), true, 1, clock.get()));
    assertEquals("0                   ", get("n")); // in place, padded as memcached pads it
    assertEquals(new KvStore.Delta.Value(0L), store.incrDecr(b("n"), false, 5, clock.get()));
    set("m", "10");
    assertEquals(new KvStore.Delta.Value(7L), store.incrDecr(b("m"), false, 3, clock.get()));
    assertEquals("7 ", get("m"));
    set("s", "abc");
    assertInstanceOf(KvStore.Delta.NonNumeric.class, store.incrDecr(b("s"), true, 1, clock.get()));
    assertInstanceOf(KvStore.Delta.NotFound.class, store.incrDecr(b("none"), true, 1, clock.get()));
    assertNoLeak();
  }

  @Test
  void expiryIsRelativeUpToThirtyDaysThenAbsolute() {
    put(KvStore.Mode.SET, "rel", "v", 10, 0);
    put(KvStore.Mode.SET, "abs", "v", epoch.get() + 20, 0);
    put(KvStore.Mode.SET, "past", "v", -1, 0);
    assertNull(get("past"));
    clock.addAndGet(9_999_999_999L);
    assertEquals("v", get("rel"));
    clock.addAndGet(1);
    assertNull(get("rel"));
    assertEquals("v", get("abs"));
    clock.addAndGet(10_000_000_000L);
    assertNull(get("abs"));
    assertTrue(store.touch(b("nope"), 5, clock.get()) == false);
    assertNoLeak();
  }

  @Test
  void flushAllAtOnceAndDelayed() {
    set("a", "1");
    store.flushAll(0, clock.get());
    assertNull(get("a"));
    set("a", "2");
    assertEquals("2", get("a"), "stored after the flush");
    store.flushAll(5, clock.get());
    clock.addAndGet(4_000_000_000L);
    assertEquals("2", get("a"));
    clock.addAndGet(1_000_000_000L);
    assertNull(get("a"));
    set("b", "3");
    assertEquals("3", get("b"), "stored after the delayed flush took effect");
    assertNoLeak();
  }

  @Test
  void aFlushDelayOverThirtyDaysIsAUnixTime() {
    set("a", "1");
    store.flushAll(epoch.get() + 10, clock.get()); // in ten seconds, as memcached's realtime()
    clock.addAndGet(9_000_000_000L);
    assertEquals("1", get("a"), "not yet");
    clock.addAndGet(1_000_000_000L);
    assertNull(get("a"), "flushed at that Unix time");
    set("b", "2");
    store.flushAll(epoch.get() - 10, clock.get()); // a Unix time already past: at once
    assertNull(get("b"));
    assertNoLeak();
  }

  @Test
  void aPageNoItemUsesMovesToTheClassThatNeedsOne() {
    // Four sizes, four classes: each takes one of the store's four pages.
    int[] sizes = {2_000, 5_000, 12_000, 40_000};
    for (int i = 0; i < sizes.length; i++) {
      assertEquals(KvStore.StoreResult.STORED, set("big" + i, "x".repeat(sizes[i])));
    }
    assertEquals(4, store.slabs().usage().pages());
    assertEquals(store.slabs().usage().maxPages(), store.slabs().usage().pages(), "no page left");
    store.flushAll(0, clock.get()); // memcached's flush_all: every item goes, every page stays put
    for (int i = 0; i < sizes.length; i++) {
      assertNull(get("big" + i)); // a read of a flushed item reclaims its chunk
    }
    assertEquals(KvStore.StoreResult.STORED, set("small", "ok"),
        "a class with no page of its own takes a page none of whose chunks is used");
    assertEquals("ok", get("small"));
    assertEquals(1, store.slabs().usage().pagesMoved());
    // the class that gave its page up takes another free one when it needs one again
    assertEquals(KvStore.StoreResult.STORED, set("big0", "x".repeat(2_000)));
    assertEquals(2, store.slabs().usage().pagesMoved());
    assertEquals("ok", get("small"), "a page holding an item is never taken");
    assertNoLeak();
  }

  @Test
  void aClassWithNoPageEvictsAnotherClassesPageToGetOne() {
    String small = "x".repeat(1000);
    int n = 10_000; // 4 MiB holds about 3,900 of them: every page goes to their class, and it evicts
    for (int i = 0; i < n; i++) {
      assertEquals(KvStore.StoreResult.STORED, set("k" + i, small));
    }
    assertEquals(store.slabs().usage().maxPages(), store.slabs().usage().pages(), "no page left");
    long itemsBefore = store.items();
    long evictionsBefore = store.evictions.sum();
    String big = "y".repeat(40_000);
    assertEquals(KvStore.StoreResult.STORED, set("big", big),
        "the big value's class had no page and nothing to evict: a page of the small ones is emptied");
    assertEquals(big, get("big"));
    assertEquals(1, store.slabs().usage().pagesMoved());
    long evicted = store.evictions.sum() - evictionsBefore;
    int perPage = SlabAllocator.PAGE_SIZE / store.slabs().chunkSize(store.slabs().classFor(1000));
    assertTrue(evicted > 0 && evicted <= perPage, "evicted " + evicted + ", a page holds " + perPage);
    assertEquals(itemsBefore - evicted + 1, store.items());
    assertEquals(small, get("k" + (n - 1)), "items of the other pages stay");
    assertNoLeak();
  }

  @Test
  void aPageHeldByAValueStillBeingReadIsPassedOverForOneThatCanBeEmptied() {
    // A SET still reading its value (or a closed connection's not yet given back) holds a chunk of
    // its own class's page: the page with the fewest chunks in use, but no item to evict.
    int reading = store.reserve(40_000, clock.get());
    String small = "x".repeat(1000);
    for (int i = 0; i < 10_000; i++) { // the other three pages go to the small values, which evict
      assertEquals(KvStore.StoreResult.STORED, set("k" + i, small));
    }
    assertEquals(store.slabs().usage().maxPages(), store.slabs().usage().pages(), "no page left");
    assertEquals(KvStore.StoreResult.STORED, set("mid", "y".repeat(5_000)),
        "a third class gets a page of the small values, not the one being read into");
    assertEquals("y".repeat(5_000), get("mid"));
    assertEquals(1, store.slabs().usage().pagesMoved());
    store.release(reading);
    assertNoLeak();
  }

  @Test
  void evictsLeastRecentlyUsedAtTheMemoryLimit() {
    String value = "x".repeat(1000);
    for (int i = 0; i < 10_000; i++) {
      assertEquals(KvStore.StoreResult.STORED, set("k" + i, value));
    }
    assertTrue(store.evictions.sum() > 0, "4 MiB cannot hold 10,000 KB values");
    assertEquals(value, get("k9999"), "the newest survives");
    assertNull(get("k0"), "the oldest went first");
    assertNoLeak();
    assertThrows(KvStore.StoreFailure.class, () -> store.reserve(SlabAllocator.PAGE_SIZE + 1, clock.get()));
  }

  @Test
  void slabLockRefusesASetWhoseBudgetItsQueueExceeds() throws Exception {
    long usedBefore = store.slabs().usage().usedChunks();
    BudgetedLock slab = store.slabs().lock();
    CountDownLatch held = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    Thread holder = Thread.ofPlatform().start(() -> {
      slab.lock();
      held.countDown();
      try {
        release.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      slab.unlock();
    });
    held.await();
    Thread waiter = Thread.ofPlatform().start(() -> store.release(store.reserve(10, clock.get())));
    while (slab.waiters() == 0) {
      Thread.onSpinWait();
    }
    clock.addAndGet(500_000); // the waiter has queued 500 µs
    assertThrows(BudgetExceededException.class, () -> ScopedValue.where(RequestBudget.CURRENT,
        RequestBudget.of(100_000)).call(() -> store.reserve(10, clock.get())));
    // a budget the queue fits is admitted (it waits its turn)
    Thread patient = Thread.ofPlatform().start(() -> ScopedValue.where(RequestBudget.CURRENT,
        RequestBudget.of(10_000_000)).run(() -> store.release(store.reserve(10, clock.get()))));
    release.countDown();
    holder.join();
    waiter.join();
    patient.join();
    assertEquals(usedBefore, store.slabs().usage().usedChunks());
    assertNoLeak();
  }

  @Test
  void aSetRefusedAtItsItemLockFreesItsChunk() throws Exception {
    set("hot", "v");
    byte[] key = b("hot");
    BudgetedLock[] locks = itemLocks();
    BudgetedLock itemLock = locks[KvStore.hash(key) & (locks.length - 1)];
    CountDownLatch held = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    Thread holder = Thread.ofPlatform().start(() -> {
      itemLock.lock();
      held.countDown();
      try {
        release.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      itemLock.unlock();
    });
    held.await();
    Thread waiter = Thread.ofPlatform().start(() -> store.delete(b("other-key-same-stripe?"), clock.get()));
    Thread blocked = Thread.ofPlatform().start(() -> get("hot"));
    while (itemLock.waiters() == 0) {
      Thread.onSpinWait();
    }
    clock.addAndGet(1_000_000);
    long used = store.slabs().usage().usedChunks();
    assertThrows(BudgetExceededException.class, () -> ScopedValue.where(RequestBudget.CURRENT,
        RequestBudget.of(100_000)).call(() -> set("hot", "w")));
    assertEquals(used, store.slabs().usage().usedChunks(), "the refused SET's chunk was freed");
    release.countDown();
    holder.join();
    waiter.join();
    blocked.join();
    assertEquals("v", get("hot"));
    assertNoLeak();
  }

  @Test
  void parsesUnsignedDecimals() {
    assertEquals(0L, strtoull("0"));
    assertNull(strtoull("18446744073709551616"));
    assertEquals(-1L, strtoull("18446744073709551615"));
    assertEquals(-2L, strtoull("18446744073709551614"));
    assertNull(strtoull("12a"));
    assertNull(strtoull(""));
    assertNull(strtoull("   "));
    assertEquals(42L, strtoull("42 "));
    assertEquals(42L, strtoull(" +42 x"));
    assertEquals(1L, strtoull("00000000000000000000001"));
    assertEquals(0L, strtoull("-0"));
    assertNull(strtoull("-5"));
    assertEquals(1L, strtoull("-18446744073709551615")); // C's strtoull negates modulo 2^64
  }

  private static Long strtoull(String s) {
    long[] out = new long[1];
    return KvStore.strtoull(b(s), 0, s.length(), out) ? out[0] : null;
  }

  private BudgetedLock[] itemLocks() throws Exception {
    var f = KvStore.class.getDeclaredField("itemLocks");
    f.setAccessible(true);
    return (BudgetedLock[]) f.get(store);
  }
}
