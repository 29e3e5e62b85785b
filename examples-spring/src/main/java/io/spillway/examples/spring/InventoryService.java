package io.spillway.examples.spring;

import io.spillway.asqm.BudgetedLock;
import java.time.Duration;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.stereotype.Service;

/**
 * The inventory's service layer, shared by the REST endpoint ({@link ReservationController}) and
 * the gRPC one ({@link InventoryGrpcService}): a reservation prices the item, then takes one unit
 * of its stock and appends the reservation to the inventory's ledger.
 *
 * <p><b>Why a lock.</b> The ledger is a hash chain: each entry's digest covers the one before it,
 * so entries are appended one at a time, and the stock counts change together with the ledger.
 * Both are guarded by one lock, a {@link BudgetedLock} named {@code inventory}: a request whose
 * remaining budget (bound by the Spillway starter from the request, docs/design.md "Request budget
 * (ASQM)") is shorter than the lock's queue aborts before it waits (Protego §3.2) and the starter
 * answers it with a fast reject ({@code 429}); without a budget in scope (the peers'
 * configurations) the lock behaves as a plain one.
 *
 * <p><b>Cost.</b> Pricing and the ledger digest are a fixed number of rounds of a 64-bit hash
 * (SplitMix64's finalizer, a dependent chain the JIT cannot fold away), calibrated once at start so
 * that a reservation costs {@code inventory.work} of CPU on this machine (default 150 µs), of which
 * {@code inventory.locked-share} (default 0.2) is spent holding the lock. A fixed amount of work
 * rather than a timed spin: a preempted request still costs what it says, and one core has a clear
 * capacity of about one reservation per {@code inventory.work}.
 *
 * <p>Calibration runs while Spring starts, when the JIT's queue is long: the hash loop may still be
 * running its first compilation, two to three times slower than it will. So batches are timed
 * until the fastest has not improved for a second (at most ten), and {@code inventory.rounds}
 * ({@code "outside,inside"}) skips calibration: processes that are compared with each other
 * ({@code ./spillway spring-demo}'s configurations) must do the same work, whatever each one's
 * calibration would have read.
 *
 * <p>Thread-safe.
 */
@Service
public class InventoryService {

  /** Distinct SKUs; a request's SKU is taken modulo this. */
  public static final int SKUS = 4096;
  /** Units a sold-out SKU is restocked with. */
  static final long RESTOCK = 1_000;

  private final BudgetedLock lock = new BudgetedLock("inventory");
  private final long[] stock = new long[SKUS]; // guarded by lock
  private long ledgerDigest; // guarded by lock
  private long ledgerLength; // guarded by lock
  private final int quoteRounds;
  private final int ledgerRounds;
  private final double nanosPerRound;

  /**
   * @param work the CPU cost of one reservation
   * @param lockedShare the part of it spent holding the lock, in [0, 1]
   */
  public InventoryService(@Value("${inventory.work:150us}") Duration work,
      @Value("${inventory.locked-share:0.2}") double lockedShare,
      @Value("${inventory.rounds:}") String givenRounds) {
    if (work.isNegative() || lockedShare < 0 || lockedShare > 1) {
      throw new IllegalArgumentException("inventory.work must be >= 0 and inventory.locked-share in [0, 1]: "
          + work + ", " + lockedShare);
    }
    if (givenRounds != null && !givenRounds.isBlank()) {
      int[] given = parseRounds(givenRounds);
      quoteRounds = given[0];
      ledgerRounds = given[1];
      nanosPerRound = Double.NaN; // not measured
    } else {
      nanosPerRound = calibrate();
      long rounds = Math.round(work.toNanos() / nanosPerRound);
      ledgerRounds = (int) Math.round(rounds * lockedShare);
      quoteRounds = (int) (rounds - ledgerRounds);
    }
    for (int i = 0; i < SKUS; i++) {
      stock[i] = RESTOCK;
    }
  }

  /** {@code "outside,inside"}: two whole, non-negative numbers of hash rounds. */
  static int[] parseRounds(String value) {
    String[] parts = value.split(",");
    try {
      if (parts.length == 2) {
        int[] rounds = {Integer.parseInt(parts[0].strip()), Integer.parseInt(parts[1].strip())};
        if (rounds[0] >= 0 && rounds[1] >= 0) {
          return rounds;
        }
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    throw new IllegalArgumentException("inventory.rounds must be \"outside,inside\", two whole"
        + " non-negative numbers of hash rounds: " + value);
  }

  /** A reservation made: the SKU, the units left, and the ledger's length after it. */
  public record Reservation(int sku, long remaining, long ledgerLength, long digest) { }

  /**
   * Reserves one unit of {@code sku} (modulo {@link #SKUS}); a sold-out SKU is restocked first.
   *
   * @throws io.spillway.api.BudgetExceededException if the inventory lock's queue would outlast the
   *     request's remaining budget; nothing was reserved then
   */
  public Reservation reserve(long sku) {
    int item = (int) Math.floorMod(sku, (long) SKUS);
    long quote = digest(item, quoteRounds);
    try (BudgetedLock.Held _ = lock.acquireWithinBudget()) {
      long left = stock[item] > 0 ? stock[item] - 1 : RESTOCK - 1;
      stock[item] = left;
      ledgerDigest = digest(ledgerDigest ^ quote ^ item, ledgerRounds);
      ledgerLength++;
      return new Reservation(item, left, ledgerLength, ledgerDigest);
    }
  }

  /** Hash rounds per reservation, outside and inside the lock. */
  public int[] rounds() {
    return new int[] {quoteRounds, ledgerRounds};
  }

  /** The calibrated cost of one hash round, in nanoseconds; NaN where the rounds were given. */
  public double nanosPerRound() {
    return nanosPerRound;
  }

  /** The lock the service layer serializes on (for its JFR events and tests). */
  public BudgetedLock lock() {
    return lock;
  }

  static long digest(long seed, int rounds) {
    long h = seed;
    for (int i = 0; i < rounds; i++) {
      long z = h + 0x9e3779b97f4a7c15L + i;
      z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
      z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
      h = z ^ (z >>> 31);
    }
    return h;
  }

  /**
   * Nanoseconds per round: the best of several timed batches after the loop has been compiled,
   * so that a batch interrupted by start-up work does not inflate it.
   */
  private static double calibrate() {
    final int batch = 200_000;
    long sink = 0;
    for (int i = 0; i < 50; i++) {
      sink += digest(i, batch);
    }
    double best = Double.MAX_VALUE;
    long start = System.nanoTime();
    long lastBetter = start;
    for (int i = 0; ; i++) {
      long t0 = System.nanoTime();
      sink += digest(sink, batch);
      long t1 = System.nanoTime();
      double perRound = (double) (t1 - t0) / batch;
      if (perRound < best * 0.99) {
        lastBetter = t1;
      }
      best = Math.min(best, perRound);
      if (i >= 15 && (t1 - lastBetter > 1_000_000_000L || t1 - start > 10_000_000_000L)) {
        break; // a second without a faster batch (see the class comment), or ten in all
      }
    }
    if (sink == 42) { // keeps the batches' results alive; never true in practice, harmless if so
      System.getLogger(InventoryService.class.getName()).log(System.Logger.Level.TRACE, "sink");
    }
    return best;
  }
}
