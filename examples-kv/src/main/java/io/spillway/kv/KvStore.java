package io.spillway.kv;

import io.spillway.api.BudgetExceededException;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.Ticker;
import io.spillway.asqm.BudgetedLock;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;

/**
 * memcached's store on the JVM: a hash table of 2^17 buckets (hash power 17, as protego-nsdi23
 * §5.3 configures it; the table does not grow), striped item locks, a {@link SlabAllocator} with
 * its global lock, one LRU per size class with eviction at the memory limit, expiry times, CAS
 * values and {@code flush_all}.
 *
 * <h2>Locks and budgets</h2>
 *
 * <p>All three kinds of lock are {@link BudgetedLock}s, and every acquisition a request makes
 * before it commits is budgeted ({@code acquireWithinBudget}): the slab lock to allocate a SET's
 * chunk, the item lock of the key's stripe, an LRU lock to evict. A refused request throws {@link
 * BudgetExceededException} and gives back everything it holds, freeing its chunk under the plain
 * acquire (protego-nsdi23 §5.3: "we don't allow drop when a request tries to reacquire
 * {@code slabs_lock} to free up the memory"). Once a request holds its item lock it commits: what
 * follows (linking, unlinking, freeing the replaced value) uses the plain acquire. Lock order:
 * item lock, then LRU lock, then slab lock; eviction goes LRU lock first and only try-locks item
 * locks, as memcached's {@code lru_pull_tail} does, so the orders never deadlock.
 *
 * <h2>Time</h2>
 *
 * <p>Expiry is on the injected ticker: a relative expiry (≤ 30 days, memcached's rule) is added
 * to the caller's {@code now}; an absolute Unix time is converted with the injected wall clock
 * once. Callers pass {@code now} (read once per request).
 *
 * <p>Thread-safe.
 */
public final class KvStore {

  /** memcached's {@code KEY_MAX_LENGTH}. */
  public static final int MAX_KEY_LENGTH = 250;
  /** Hash power 17 (protego-nsdi23 §5.3). */
  public static final int HASH_POWER = 17;
  /** Item lock stripes: memcached's {@code item_lock_hashpower} of 13. */
  static final int LOCK_POWER = 13;
  /** memcached's {@code ITEM_UPDATE_INTERVAL}: a hit moves an item to the LRU head at most this often. */
  static final long BUMP_INTERVAL_NANOS = 60_000_000_000L;
  private static final long RELATIVE_EXPIRY_LIMIT_S = 60L * 60 * 24 * 30;
  private static final int EVICTION_TRIES = 5;

  /** How a write ends. */
  public enum StoreResult { STORED, NOT_STORED, EXISTS, NOT_FOUND }

  /** The storage commands. */
  public enum Mode { SET, ADD, REPLACE, APPEND, PREPEND, CAS }

  /** Receives a hit's value, called under the key's item lock; must not keep the page. */
  @FunctionalInterface
  public interface ValueSink {
    void value(byte[] key, int flags, long cas, byte[] page, int offset, int length);
  }

  /** Thrown when a value cannot be stored: larger than a page, or no memory after eviction. */
  public static final class StoreFailure extends RuntimeException {
    private StoreFailure(String message) {
      super(message, null, false, false);
    }
  }

  private final SlabAllocator slabs;
  private final Item[] buckets = new Item[1 << HASH_POWER];
  private final BudgetedLock[] itemLocks = new BudgetedLock[1 << LOCK_POWER];
  private final BudgetedLock[] lruLocks;
  private final Item[] lruHead;
  private final Item[] lruTail;
  private final Ticker ticker;
  private final LongSupplier epochSeconds;
  private final AtomicLong casCounter = new AtomicLong();
  private volatile long flushCas = 0;
  private volatile long flushAt = Long.MIN_VALUE;
  private volatile boolean flushPending;
  private final StoreFailure tooLarge = new StoreFailure("object too large for cache");
  private final StoreFailure outOfMemory = new StoreFailure("out of memory storing object");

  final AtomicLong currItems = new AtomicLong();
  final LongAdder totalItems = new LongAdder();
  final LongAdder cmdGet = new LongAdder();
  final LongAdder getHits = new LongAdder();
  final LongAdder getMisses = new LongAdder();
  final LongAdder cmdSet = new LongAdder();
  final LongAdder evictions = new LongAdder();
  final LongAdder expiredUnfetched = new LongAdder();
  final LongAdder reclaimed = new LongAdder();
  final LongAdder cmdTouch = new LongAdder();

  /**
   * @param memoryBytes the memory limit for values
   * @param ticker the server's monotonic clock (budgets and expiry)
   * @param epochSeconds the wall clock, for absolute expiry times
   */
  public KvStore(long memoryBytes, Ticker ticker, LongSupplier epochSeconds) {
    this.ticker = ticker;
    this.epochSeconds = epochSeconds;
    this.slabs = new SlabAllocator(memoryBytes, ticker);
    for (int i = 0; i < itemLocks.length; i++) {
      itemLocks[i] = new BudgetedLock(ticker);
    }
    int classes = slabs.classes();
    this.lruLocks = new BudgetedLock[classes];
    for (int i = 0; i < classes; i++) {
      lruLocks[i] = new BudgetedLock(ticker);
    }
    this.lruHead = new Item[classes];
    this.lruTail = new Item[classes];
  }

  /** The slab allocator (its lock is the one the VAR workload contends). */
  public SlabAllocator slabs() {
    return slabs;
  }

  /** The store's lock-queue delay: the slab lock's (for reports; Breakwater does not see it). */
  public QueueDelaySignal slabLockDelay() {
    return slabs.lock();
  }

  /** The hash of {@code key} (FNV-1a, then a murmur3 finaliser to spread the low bits). */
  public static int hash(byte[] key) {
    int h = 0x811c9dc5;
    for (byte b : key) {
      h = (h ^ (b & 0xFF)) * 0x01000193;
    }
    h ^= h >>> 16;
    h *= 0x85ebca6b;
    h ^= h >>> 13;
    h *= 0xc2b2ae35;
    h ^= h >>> 16;
    return h;
  }

  /**
   * Reserves a chunk for a value of {@code length} bytes before the value is read, as memcached
   * allocates the item when it parses the command line. The caller writes the value with {@link
   * #write} and passes the handle to {@link #store}, or gives it back with {@link #release}.
   *
   * @throws StoreFailure if the value is over 1 MiB or memory is exhausted after eviction
   * @throws BudgetExceededException if a lock's queue exceeds the budget in scope
   */
  public int reserve(int length, long now) {
    int c = slabs.classFor(length);
    if (c < 0) {
      throw tooLarge;
    }
    boolean pageEmptied = false;
    for (int attempt = 0; attempt < EVICTION_TRIES; attempt++) {
      int chunk = slabs.allocate(c);
      if (chunk != SlabAllocator.NONE) {
        return chunk;
      }
      if (!evictOne(c, now)) {
        // Nothing of its own to evict: empty another class's page for it, once (SlabAllocator).
        if (pageEmptied || !evictPage(c, now)) {
          break;
        }
        pageEmptied = true;
      }
    }
    throw outOfMemory;
  }

  /**
   * The bytes memcached's item for this value takes, which must fit its 1 MiB item limit ({@code
   * -I 1m}): a 48-byte header, 8 for the CAS value, the key and its NUL, the value and its
   * {@code \r\n}, and 4 for flags other than 0 ({@code item_make_header}); so the largest value
   * depends on the key and the flags, as a client of memcached sees it.
   */
  static long itemSize(int keyLength, long flags, long valueLength) {
    return 48 + 8 + keyLength + 1 + valueLength + 2 + (flags != 0 ? 4 : 0);
  }

  /** Gives back a reserved chunk that will not be stored (a dropped or malformed SET). */
  public void release(int chunk) {
    slabs.free(chunk);
  }

  /** Copies {@code length} bytes from {@code src} into reserved chunk {@code chunk} at {@code at}. */
  public void write(int chunk, int at, byte[] src, int srcOffset, int length) {
    System.arraycopy(src, srcOffset, slabs.page(chunk), slabs.offset(chunk) + at, length);
  }

  /** The page of {@code chunk}, to write into directly (with {@link #offset}). */
  public byte[] page(int chunk) {
    return slabs.page(chunk);
  }

  /** The offset of {@code chunk} in its page. */
  public int offset(int chunk) {
    return slabs.offset(chunk);
  }

  /**
   * Stores a reserved chunk under {@code key}. The chunk is consumed in every outcome (linked, or
   * freed when not stored), also when the item lock refuses the request.
   *
   * @param exptime memcached's exptime: 0 never, ≤ 30 days relative seconds, else Unix time;
   *     negative: already expired
   * @param casIn the CAS value for {@link Mode#CAS}
   * @throws BudgetExceededException if the item lock's queue exceeds the budget in scope
   */
  public StoreResult store(Mode mode, byte[] key, int flags, long exptime, long casIn, int chunk,
      int length, long now) {
    int hash = hash(key);
    BudgetedLock lock = itemLocks[hash & (itemLocks.length - 1)];
    try {
      lock.acquireWithinBudget();
    } catch (BudgetExceededException e) {
      slabs.free(chunk);
      throw e;
    }
    try {
      cmdSet.increment();
      int b = hash & (buckets.length - 1);
      Item old = findLive(b, key, hash, now);
      switch (mode) {
        case ADD -> {
          if (old != null) {
            bumpLocked(old, now);
            slabs.free(chunk);
            return StoreResult.NOT_STORED;
          }
        }
        case REPLACE, APPEND, PREPEND -> {
          if (old == null) {
            slabs.free(chunk);
            return StoreResult.NOT_STORED;
          }
        }
        case CAS -> {
          if (old == null) {
            slabs.free(chunk);
            return StoreResult.NOT_FOUND;
          }
          if (old.cas != casIn) {
            slabs.free(chunk);
            return StoreResult.EXISTS;
          }
        }
        case SET -> { }
      }
      if (mode == Mode.APPEND || mode == Mode.PREPEND) {
        int total = old.length + length;
        // memcached allocates the joined item, with the old flags, and answers NOT_STORED when it
        // cannot: over the item limit, or no memory (do_store_item)
        if (itemSize(key.length, old.flags & 0xFFFFFFFFL, total) > SlabAllocator.PAGE_SIZE) {
          slabs.free(chunk);
          return StoreResult.NOT_STORED;
        }
        int joined;
        try {
          joined = reserve(total, now);
        } catch (StoreFailure e) {
          slabs.free(chunk);
          return StoreResult.NOT_STORED;
        } catch (RuntimeException e) {
          slabs.free(chunk);
          throw e;
        }
        byte[] dst = slabs.page(joined);
        int at = slabs.offset(joined);
        int first = mode == Mode.APPEND ? old.chunk : chunk;
        int firstLength = mode == Mode.APPEND ? old.length : length;
        int second = mode == Mode.APPEND ? chunk : old.chunk;
        int secondLength = mode == Mode.APPEND ? length : old.length;
        System.arraycopy(slabs.page(first), slabs.offset(first), dst, at, firstLength);
        System.arraycopy(slabs.page(second), slabs.offset(second), dst, at + firstLength, secondLength);
        slabs.free(chunk);
        chunk = joined;
        length = total;
        flags = old.flags;
        exptime = Long.MIN_VALUE; // keep the old expiry
      }
      Item item = new Item(key, hash);
      item.flags = flags;
      item.expiresAt = exptime == Long.MIN_VALUE ? old.expiresAt : expiresAt(exptime, now);
      item.storedAt = now;
      item.lastBump = now;
      item.cas = casCounter.incrementAndGet();
      item.chunk = chunk;
      item.length = length;
      item.slabClass = slabs.classOf(chunk);
      if (old != null) {
        unlinkLocked(b, old);
      }
      linkLocked(b, item);
      return StoreResult.STORED;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Looks {@code key} up and hands a hit to {@code sink} under the item lock; counts a get.
   *
   * @return whether it was a hit
   * @throws BudgetExceededException if the item lock's queue exceeds the budget in scope
   */
  public boolean get(byte[] key, long now, ValueSink sink) {
    int hash = hash(key);
    BudgetedLock lock = itemLocks[hash & (itemLocks.length - 1)];
    lock.acquireWithinBudget();
    try {
      cmdGet.increment();
      Item item = findLive(hash & (buckets.length - 1), key, hash, now);
      if (item == null) {
        getMisses.increment();
        return false;
      }
      getHits.increment();
      bumpLocked(item, now);
      sink.value(item.key, item.flags, item.cas, slabs.page(item.chunk), slabs.offset(item.chunk),
          item.length);
      return true;
    } finally {
      lock.unlock();
    }
  }

  /** Removes {@code key}; whether it was there. */
  public boolean delete(byte[] key, long now) {
    int hash = hash(key);
    BudgetedLock lock = itemLocks[hash & (itemLocks.length - 1)];
    lock.acquireWithinBudget();
    try {
      int b = hash & (buckets.length - 1);
      Item item = findLive(b, key, hash, now);
      if (item == null) {
        return false;
      }
      unlinkLocked(b, item);
      return true;
    } finally {
      lock.unlock();
    }
  }

  /** Sets a new expiry on {@code key}; whether it was there. */
  public boolean touch(byte[] key, long exptime, long now) {
    int hash = hash(key);
    BudgetedLock lock = itemLocks[hash & (itemLocks.length - 1)];
    lock.acquireWithinBudget();
    try {
      cmdTouch.increment();
      Item item = findLive(hash & (buckets.length - 1), key, hash, now);
      if (item == null) {
        return false;
      }
      item.expiresAt = expiresAt(exptime, now);
      bumpLocked(item, now);
      return true;
    } finally {
      lock.unlock();
    }
  }

  /** The outcome of incr/decr: the new value, or why there is none. */
  public sealed interface Delta permits Delta.Value, Delta.NotFound, Delta.NonNumeric {
    record Value(long unsigned) implements Delta { }
    record NotFound() implements Delta { }
    record NonNumeric() implements Delta { }
  }

  private static final Delta NOT_FOUND = new Delta.NotFound();
  private static final Delta NON_NUMERIC = new Delta.NonNumeric();

  /**
   * memcached's incr/decr on the decimal value of {@code key}: 64-bit unsigned, incr wraps, decr
   * stops at 0. The value is read as memcached's {@code safe_strtoull} reads it ({@link
   * #strtoull}). As memcached's {@code do_add_delta}, the new digits overwrite the value in place
   * when they fit, padded with spaces to its old length ({@code decr} of {@code 100} leaves
   * {@code "99 "}), and otherwise become the value (20 digits fit the smallest chunk).
   */
  public Delta incrDecr(byte[] key, boolean incr, long delta, long now) {
    int hash = hash(key);
    BudgetedLock lock = itemLocks[hash & (itemLocks.length - 1)];
    lock.acquireWithinBudget();
    try {
      Item item = findLive(hash & (buckets.length - 1), key, hash, now);
      if (item == null) {
        return NOT_FOUND;
      }
      byte[] page = slabs.page(item.chunk);
      int off = slabs.offset(item.chunk);
      long[] parsed = new long[1];
      if (!strtoull(page, off, off + item.length, parsed)) {
        return NON_NUMERIC;
      }
      long value = parsed[0];
      long next;
      if (incr) {
        next = value + delta;
      } else {
        next = Long.compareUnsigned(value, delta) < 0 ? 0 : value - delta;
      }
      byte[] digits = Long.toUnsignedString(next).getBytes(java.nio.charset.StandardCharsets.US_ASCII);
      System.arraycopy(digits, 0, page, off, digits.length);
      if (digits.length <= item.length) {
        Arrays.fill(page, off + digits.length, off + item.length, (byte) ' ');
      } else {
        item.length = digits.length;
      }
      item.cas = casCounter.incrementAndGet();
      bumpLocked(item, now);
      return new Delta.Value(next);
    } finally {
      lock.unlock();
    }
  }

  /**
   * memcached's {@code safe_strtoull} over {@code b[from, to)}: C's {@code strtoull} in base 10
   * (leading white space, an optional sign, decimal digits; a minus negates modulo 2^64; a
   * magnitude over 2^64 − 1 is not a number), which must end at white space, a NUL or {@code to}
   * (memcached's value is followed by its {@code \r\n}, a token by its NUL); and a minus is refused
   * when the result is negative as a signed 64-bit number. Stores the value in {@code out[0]}.
   *
   * @return whether {@code b[from, to)} is a number by that rule
   */
  static boolean strtoull(byte[] b, int from, int to, long[] out) {
    int i = from;
    while (i < to && isSpace(b[i])) {
      i++;
    }
    boolean minus = false;
    if (i < to && (b[i] == '+' || b[i] == '-')) {
      minus = b[i] == '-';
      i++;
    }
    int digits = i;
    long v = 0;
    boolean overflow = false;
    while (i < to && b[i] >= '0' && b[i] <= '9') {
      int d = b[i] - '0';
      if (Long.compareUnsigned(v, Long.divideUnsigned(-1L - d, 10)) > 0) {
        overflow = true; // strtoull's ERANGE; it still consumes the digits
      }
      v = v * 10 + d;
      i++;
    }
    if (i == digits || overflow || (i < to && !isSpace(b[i]) && b[i] != 0)) {
      return false;
    }
    long r = minus ? -v : v;
    if (minus && r < 0) {
      return false;
    }
    out[0] = r;
    return true;
  }

  /** C's {@code isspace} in the C locale. */
  static boolean isSpace(byte c) {
    return c == ' ' || (c >= '\t' && c <= '\r');
  }

  /**
   * memcached's {@code flush_all [delay]}: every item stored before the flush time is gone once
   * that time comes; with no delay, at once. The delay is an expiration time (protocol.txt, "Other
   * commands": "after the expiration specified"), read as an exptime is: up to 30 days relative
   * seconds, beyond that a Unix time, so one already past flushes at once.
   */
  public void flushAll(long delaySeconds, long now) {
    long relative = delaySeconds <= RELATIVE_EXPIRY_LIMIT_S ? delaySeconds
        : delaySeconds - epochSeconds.getAsLong();
    if (relative <= 0) {
      flushCas = casCounter.get();
      flushPending = false;
    } else {
      flushAt = now + Math.min(relative, Long.MAX_VALUE / 4 / 1_000_000_000L) * 1_000_000_000L;
      flushPending = true;
    }
  }

  private long expiresAt(long exptime, long now) {
    if (exptime == 0) {
      return Long.MAX_VALUE;
    }
    if (exptime < 0) {
      return now - 1;
    }
    long relative = exptime <= RELATIVE_EXPIRY_LIMIT_S ? exptime : exptime - epochSeconds.getAsLong();
    if (relative <= 0) {
      return now - 1;
    }
    return now + Math.min(relative, Long.MAX_VALUE / 4 / 1_000_000_000L) * 1_000_000_000L;
  }

  private boolean isLive(Item item, long now) {
    if (item.expiresAt != Long.MAX_VALUE && now - item.expiresAt >= 0) {
      return false;
    }
    if (item.cas <= flushCas) {
      return false;
    }
    if (flushPending && now - flushAt >= 0 && item.storedAt - flushAt < 0) {
      return false;
    }
    return true;
  }

  /** The live item for {@code key} in bucket {@code b}; a dead one found on the way is reclaimed. */
  private Item findLive(int b, byte[] key, int hash, long now) {
    for (Item it = buckets[b]; it != null; it = it.hashNext) {
      if (it.hash == hash && Arrays.equals(it.key, key)) {
        if (isLive(it, now)) {
          return it;
        }
        if (it.expiresAt != Long.MAX_VALUE && now - it.expiresAt >= 0) {
          expiredUnfetched.increment();
        }
        reclaimed.increment();
        unlinkLocked(b, it);
        return null;
      }
    }
    return null;
  }

  private void linkLocked(int b, Item item) {
    item.hashNext = buckets[b];
    buckets[b] = item;
    item.linked = true;
    currItems.incrementAndGet();
    totalItems.increment();
    BudgetedLock lru = lruLocks[item.slabClass];
    try (BudgetedLock.Held ignored = lru.acquire()) {
      lruPushHead(item);
    }
  }

  /** Unlinks from the hash chain and the LRU and frees the chunk; caller holds the item lock. */
  private void unlinkLocked(int b, Item item) {
    Item prev = null;
    for (Item it = buckets[b]; it != null; prev = it, it = it.hashNext) {
      if (it == item) {
        if (prev == null) {
          buckets[b] = it.hashNext;
        } else {
          prev.hashNext = it.hashNext;
        }
        break;
      }
    }
    item.hashNext = null;
    BudgetedLock lru = lruLocks[item.slabClass];
    try (BudgetedLock.Held ignored = lru.acquire()) {
      if (!item.linked) {
        return; // evicted meanwhile cannot happen under the item lock; kept for safety
      }
      lruRemove(item);
      item.linked = false;
    }
    currItems.decrementAndGet();
    slabs.free(item.chunk);
  }

  private void bumpLocked(Item item, long now) {
    if (now - item.lastBump < BUMP_INTERVAL_NANOS) {
      return;
    }
    BudgetedLock lru = lruLocks[item.slabClass];
    if (lru.tryLock()) { // memcached skips a bump when the LRU is busy
      try {
        if (item.linked) {
          lruRemove(item);
          lruPushHead(item);
          item.lastBump = now;
        }
      } finally {
        lru.unlock();
      }
    }
  }

  /**
   * Evicts one item from the tail of class {@code c}'s LRU (expired ones first count as
   * reclaimed); whether one was. Budgeted: the request has not committed yet.
   */
  private boolean evictOne(int c, long now) {
    BudgetedLock lru = lruLocks[c];
    try (BudgetedLock.Held ignored = lru.acquireWithinBudget()) {
      Item it = lruTail[c];
      for (int tries = 0; it != null && tries < EVICTION_TRIES; tries++, it = it.lruPrev) {
        if (tryEvict(it, now)) {
          return true;
        }
      }
      return false;
    }
  }

  /** How many pages one reserve may try to empty. */
  private static final int PAGE_TRIES = 3;

  /**
   * Evicts the items of another class's page (the one {@link SlabAllocator#pageToEmpty} names) so
   * that the page can move to class {@code c}; whether a page is now wholly free. Items whose
   * stripe is busy are skipped, and a chunk reserved for a SET still being read (or one a closed
   * connection has yet to give back) keeps its page; the next page is then tried, up to {@value
   * #PAGE_TRIES} (memcached's {@code slab_rebalance} comes back for busy items in a later pass).
   * Walks the donor class's LRU under its lock: linear in that class's items, paid only by a class
   * that could neither allocate nor evict. Budgeted: the request has not committed yet.
   */
  private boolean evictPage(int c, long now) {
    java.util.BitSet tried = new java.util.BitSet();
    for (int attempt = 0; attempt < PAGE_TRIES; attempt++) {
      int page = slabs.pageToEmpty(c, tried);
      if (page < 0) {
        return false;
      }
      tried.set(page);
      int d = slabs.classOf(page << 16);
      BudgetedLock lru = lruLocks[d];
      try (BudgetedLock.Held ignored = lru.acquireWithinBudget()) {
        Item it = lruTail[d];
        while (it != null) {
          Item next = it.lruPrev; // read first: eviction unlinks it
          if (it.chunk >>> 16 == page) {
            tryEvict(it, now);
          }
          it = next;
        }
      }
      if (slabs.isFree(page)) {
        return true;
      }
    }
    return false;
  }

  /**
   * Unlinks {@code it} from its hash chain and LRU and frees its chunk, if its stripe's lock can be
   * taken at once; the caller holds the item's LRU lock (memcached's {@code lru_pull_tail} order).
   */
  private boolean tryEvict(Item it, long now) {
    BudgetedLock itemLock = itemLocks[it.hash & (itemLocks.length - 1)];
    if (itemLock.isHeldByCurrentThread() || !itemLock.tryLock()) {
      return false;
    }
    try {
      if (!it.linked) {
        return false;
      }
      int b = it.hash & (buckets.length - 1);
      Item prev = null;
      for (Item h = buckets[b]; h != null; prev = h, h = h.hashNext) {
        if (h == it) {
          if (prev == null) {
            buckets[b] = h.hashNext;
          } else {
            prev.hashNext = h.hashNext;
          }
          break;
        }
      }
      it.hashNext = null;
      lruRemove(it);
      it.linked = false;
      currItems.decrementAndGet();
      if (isLive(it, now)) {
        evictions.increment();
      } else {
        reclaimed.increment();
      }
      slabs.free(it.chunk);
      return true;
    } finally {
      itemLock.unlock();
    }
  }

  private void lruPushHead(Item item) {
    int c = item.slabClass;
    item.lruPrev = null;
    item.lruNext = lruHead[c];
    if (lruHead[c] != null) {
      lruHead[c].lruPrev = item;
    }
    lruHead[c] = item;
    if (lruTail[c] == null) {
      lruTail[c] = item;
    }
  }

  private void lruRemove(Item item) {
    int c = item.slabClass;
    if (item.lruPrev != null) {
      item.lruPrev.lruNext = item.lruNext;
    } else {
      lruHead[c] = item.lruNext;
    }
    if (item.lruNext != null) {
      item.lruNext.lruPrev = item.lruPrev;
    } else {
      lruTail[c] = item.lruPrev;
    }
    item.lruPrev = null;
    item.lruNext = null;
  }

  /** Items linked now. */
  public long items() {
    return currItems.get();
  }

  /** Bytes of values held by linked items (chunk sizes). */
  long linkedChunkBytes() {
    long total = 0;
    for (int c = 0; c < lruHead.length; c++) {
      try (BudgetedLock.Held ignored = lruLocks[c].acquire()) {
        for (Item it = lruHead[c]; it != null; it = it.lruNext) {
          total += slabs.chunkSize(c);
        }
      }
    }
    return total;
  }

  /** The ticker this store measures with. */
  Ticker ticker() {
    return ticker;
  }
}
