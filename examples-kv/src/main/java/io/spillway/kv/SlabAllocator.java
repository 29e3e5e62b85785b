package io.spillway.kv;

import io.spillway.api.Ticker;
import io.spillway.asqm.BudgetedLock;
import java.util.Arrays;

/**
 * memcached's slab allocator: values live in fixed-size chunks carved from 1 MiB pages, one size
 * class per chunk size (each class 1.25 × the previous, from 96 bytes to a whole page), pages
 * handed to a class on demand until the memory limit is reached. One global lock, memcached's
 * {@code slabs_lock}, guards every class's free list and the page supply: this is the lock a
 * SET-heavy workload saturates (protego-nsdi23 §5.3), so it is a {@link BudgetedLock}.
 *
 * <p>Allocation on a request's path ({@link #allocate}) may be refused by the budget in scope
 * ({@link BudgetedLock#acquireWithinBudget()}); freeing ({@link #free}) always uses the plain
 * acquire, as Protego keeps {@code mutex_lock} for freeing the chunk of a dropped SET, so a drop
 * never leaks memory.
 *
 * <p>A class that needs a page when none is left takes a page of another class none of whose
 * chunks is in use: a store whose value sizes shift (or that was emptied by {@code flush_all})
 * would otherwise keep every page in the classes that first took them and refuse every value of
 * another size for good ("slab calcification"; memcached 1.6 moves pages between classes for the
 * same reason, its {@code slab_reassign}). Only wholly free pages move here, so no item is
 * disturbed by a move itself. Where no page is free and the class that needs one has nothing of
 * its own to evict (it holds no page, or none with an item), the store empties one: {@link
 * #pageToEmpty} names another class's page with the fewest chunks in use, the store evicts that
 * page's items, and the page then moves as a free one, as memcached's {@code slab_rebalance}
 * evicts the items of the page it moves.
 *
 * <p>A chunk handle is {@code page << 16 | slot}: a page holds at most 1 MiB / 96 = 10,922 chunks.
 * Reads and writes of a chunk's bytes need no lock: a chunk belongs to one item (or one request
 * in flight) between its allocation and its free.
 *
 * <p>Thread-safe.
 */
public final class SlabAllocator {

  /** memcached's page size and largest item ({@code -I 1m}). */
  public static final int PAGE_SIZE = 1 << 20;
  /** Smallest chunk (memcached's 48-byte header plus a 48-byte minimum item, rounded to 8). */
  public static final int MIN_CHUNK = 96;
  /** memcached's default growth factor ({@code -f 1.25}). */
  public static final double GROWTH_FACTOR = 1.25;
  /** No chunk: the memory limit is reached and the class has no free chunk. */
  public static final int NONE = -1;

  private final int[] chunkSize;
  private final int[] chunksPerPage;
  private final int maxPages;
  private final byte[][] pages;
  private final int[] pageClass;
  private final int[][] freeSlots;
  private final int[] freeCount;
  private final long[] usedChunks;
  private final int[] pagesOfClass;
  /** Chunks of each page in use: a page with none may move to another class. */
  private final int[] usedInPage;
  /** Assigned pages none of whose chunks is in use: the search for one runs only if any. */
  private int emptyPages;
  private int pagesUsed;
  private long pagesMoved;
  private final BudgetedLock lock;

  /**
   * @param memoryBytes the memory limit for values ({@code -m}); at least one page
   * @param ticker the server's clock, for the lock's queueing delay
   */
  public SlabAllocator(long memoryBytes, Ticker ticker) {
    if (memoryBytes < PAGE_SIZE) {
      throw new IllegalArgumentException("memory limit below one page (1 MiB): " + memoryBytes);
    }
    if (memoryBytes / PAGE_SIZE > Integer.MAX_VALUE / 2) {
      throw new IllegalArgumentException("memory limit too large: " + memoryBytes);
    }
    int[] sizes = new int[64];
    int n = 0;
    double size = MIN_CHUNK;
    while (size < PAGE_SIZE / GROWTH_FACTOR) {
      int s = ((int) size + 7) & ~7;
      sizes[n++] = s;
      size = s * GROWTH_FACTOR;
    }
    sizes[n++] = PAGE_SIZE;
    this.chunkSize = Arrays.copyOf(sizes, n);
    this.chunksPerPage = new int[n];
    for (int i = 0; i < n; i++) {
      chunksPerPage[i] = PAGE_SIZE / chunkSize[i];
    }
    this.maxPages = (int) (memoryBytes / PAGE_SIZE);
    this.pages = new byte[maxPages][];
    // All pages are allocated (and zeroed by the JVM) here, as memcached's -L preallocates, so
    // that a page assigned to a class under the slab lock costs a few stores, not a 1 MiB zeroing
    // inside the critical section every budget is measured against.
    for (int i = 0; i < maxPages; i++) {
      pages[i] = new byte[PAGE_SIZE];
    }
    this.pageClass = new int[maxPages];
    this.freeSlots = new int[n][16];
    this.freeCount = new int[n];
    this.usedChunks = new long[n];
    this.pagesOfClass = new int[n];
    this.usedInPage = new int[maxPages];
    this.lock = new BudgetedLock(ticker);
  }

  /** The number of size classes. */
  public int classes() {
    return chunkSize.length;
  }

  /** The chunk size of class {@code c}. */
  public int chunkSize(int c) {
    return chunkSize[c];
  }

  /** The smallest class whose chunks hold {@code bytes}, or −1 if none does (over 1 MiB). */
  public int classFor(int bytes) {
    if (bytes < 0 || bytes > PAGE_SIZE) {
      return -1;
    }
    int lo = 0;
    int hi = chunkSize.length - 1;
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      if (chunkSize[mid] >= bytes) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    return lo;
  }

  /** The global lock ({@code slabs_lock}), for the lock finder and the KV's delay signal. */
  public BudgetedLock lock() {
    return lock;
  }

  /**
   * A chunk of class {@code c}, or {@link #NONE} when the limit is reached and the class has no
   * free chunk (the caller evicts and tries again). Takes the lock within the budget in scope.
   *
   * @throws io.spillway.api.BudgetExceededException if the lock's queue exceeds the budget in scope
   */
  public int allocate(int c) {
    try (BudgetedLock.Held ignored = lock.acquireWithinBudget()) {
      return allocateLocked(c);
    }
  }

  /** As {@link #allocate}, never refused: for maintenance. */
  public int allocateUnbudgeted(int c) {
    try (BudgetedLock.Held ignored = lock.acquire()) {
      return allocateLocked(c);
    }
  }

  private int allocateLocked(int c) {
    int handle;
    if (freeCount[c] > 0) {
      handle = freeSlots[c][--freeCount[c]];
      if (usedInPage[handle >>> 16] == 0) {
        emptyPages--;
      }
    } else {
      int page = pagesUsed < maxPages ? pagesUsed++ : takeEmptyPage(c);
      if (page < 0) {
        return NONE;
      }
      pageClass[page] = c;
      pagesOfClass[c]++;
      int slots = chunksPerPage[c];
      ensureFreeCapacity(c, slots);
      for (int s = slots - 1; s >= 1; s--) {
        freeSlots[c][freeCount[c]++] = page << 16 | s;
      }
      handle = page << 16;
    }
    usedChunks[c]++;
    usedInPage[handle >>> 16]++;
    return handle;
  }

  /**
   * A page of another class than {@code c} none of whose chunks is in use, taken out of that
   * class's free list; −1 if there is none. O(1) when there is none (a count of empty pages, so a
   * full store that evicts pays nothing under the lock); else linear in the pages and that class's
   * free chunks. An empty page of {@code c} itself cannot exist here: its chunks would be free.
   */
  private int takeEmptyPage(int c) {
    if (emptyPages == 0) {
      return -1; // the common case at the limit: every page holds an item, the caller evicts
    }
    for (int page = 0; page < pagesUsed; page++) {
      int d = pageClass[page];
      if (d != c && usedInPage[page] == 0) {
        int[] free = freeSlots[d];
        int kept = 0;
        for (int i = 0; i < freeCount[d]; i++) {
          if (free[i] >>> 16 != page) {
            free[kept++] = free[i];
          }
        }
        freeCount[d] = kept;
        pagesOfClass[d]--;
        pagesMoved++;
        emptyPages--;
        return page;
      }
    }
    return -1;
  }

  /**
   * The page of a class other than {@code c} with the fewest chunks in use, leaving out the pages
   * in {@code tried}, for the caller to empty by evicting its items so that it can move to {@code
   * c}; −1 if there is none. Linear in the pages, under the lock within the budget in scope;
   * called only when {@code c} can neither allocate nor evict.
   *
   * @throws io.spillway.api.BudgetExceededException if the lock's queue exceeds the budget in scope
   */
  public int pageToEmpty(int c, java.util.BitSet tried) {
    try (BudgetedLock.Held ignored = lock.acquireWithinBudget()) {
      int best = -1;
      for (int page = 0; page < pagesUsed; page++) {
        if (pageClass[page] != c && !tried.get(page)
            && (best < 0 || usedInPage[page] < usedInPage[best])) {
          best = page;
        }
      }
      return best;
    }
  }

  private void ensureFreeCapacity(int c, int extra) {
    int need = freeCount[c] + extra;
    if (need > freeSlots[c].length) {
      freeSlots[c] = Arrays.copyOf(freeSlots[c], Math.max(need, freeSlots[c].length * 2));
    }
  }

  /** Returns a chunk to its class. Plain acquire: freeing is never refused. */
  public void free(int handle) {
    int page = handle >>> 16;
    try (BudgetedLock.Held ignored = lock.acquire()) {
      int c = pageClass[page];
      if (page >= pagesUsed || (handle & 0xFFFF) >= chunksPerPage[c]) {
        throw new IllegalArgumentException("not a chunk: " + handle);
      }
      ensureFreeCapacity(c, 1);
      freeSlots[c][freeCount[c]++] = handle;
      usedChunks[c]--;
      if (--usedInPage[page] == 0) {
        emptyPages++;
      }
    }
  }

  /** Whether none of {@code page}'s chunks is in use. */
  public boolean isFree(int page) {
    try (BudgetedLock.Held ignored = lock.acquire()) {
      return usedInPage[page] == 0;
    }
  }

  /** The page holding chunk {@code handle}. */
  public byte[] page(int handle) {
    return pages[handle >>> 16];
  }

  /** The offset of chunk {@code handle} in its page. */
  public int offset(int handle) {
    int page = handle >>> 16;
    return (handle & 0xFFFF) * chunkSize[pageClass[page]];
  }

  /** The class of chunk {@code handle}. */
  public int classOf(int handle) {
    return pageClass[handle >>> 16];
  }

  /** Copies {@code length} bytes of chunk {@code handle} from {@code at} into {@code dst}. */
  public void read(int handle, int at, byte[] dst, int dstOffset, int length) {
    System.arraycopy(pages[handle >>> 16], offset(handle) + at, dst, dstOffset, length);
  }

  /** A snapshot of the accounting, taken under the lock. */
  public Usage usage() {
    try (BudgetedLock.Held ignored = lock.acquire()) {
      long used = 0;
      long usedBytes = 0;
      for (int c = 0; c < chunkSize.length; c++) {
        used += usedChunks[c];
        usedBytes += usedChunks[c] * chunkSize[c];
      }
      long total = 0;
      for (int c = 0; c < chunkSize.length; c++) {
        total += (long) pagesOfClass[c] * chunksPerPage[c];
      }
      long free = 0;
      for (int c = 0; c < chunkSize.length; c++) {
        free += freeCount[c];
      }
      return new Usage(pagesUsed, maxPages, used, free, total, usedBytes, pagesMoved);
    }
  }

  /**
   * Allocator accounting: every chunk of an assigned page is either used or free, so {@code
   * usedChunks + freeChunks == totalChunks} always; a leak shows as used chunks no item holds.
   * {@code pagesMoved}: pages taken from one class by another since start.
   */
  public record Usage(int pages, int maxPages, long usedChunks, long freeChunks, long totalChunks,
      long usedBytes, long pagesMoved) { }
}
