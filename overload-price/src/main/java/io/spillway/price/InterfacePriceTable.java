package io.spillway.price;

import java.util.Arrays;
import java.util.function.LongBinaryOperator;

/**
 * A server's price table (rajomon-nsdi25 §3.4 "Maximum Total Price"): one local price for the
 * server, and for each of its interfaces the last price each callee of that interface published.
 * The total price of an interface is
 *
 * <pre>
 *   total(i) = local + max over callees c of i: lastPublished(i, c)
 * </pre>
 *
 * as the paper defines it ("the price of local computation plus the maximum of prices published
 * by relevant downstream services"). The authors' {@code "maximal"} aggregation ({@code
 * rajomon.go}, {@code LoadShedding}) uses {@code max(local, downstream)} instead; we follow the
 * paper. Their code also keeps a single local price for all interfaces ("own price is per
 * microservice", {@code tokenAndPrice.go}), and so do we: the queueing delay it is driven by is the
 * server's, shared by all interfaces. Interfaces differ by their callees.
 *
 * <p>Callees are learned as they answer: nothing is configured. Beyond the paper, a callee's price
 * that was not refreshed during a whole update interval decays as fast as the callee's own price
 * can fall, i.e. as {@link PricePolicy#next} moves it for an empty queue while unwinding ({@link
 * PricePolicy#lowestAfter}, the fall doubling at each interval): the table keeps a lower bound on
 * what the callee charges now, not the last thing it said. Without the decay, an interface whose
 * total price rose above what its callers carry would reject every request, never call the callee
 * again, and never hear that its price fell. Decaying only by the decrease step starves such an
 * interface for far longer than the callee stays congested: in the simulator's hotel graph at 2×
 * load, the front end then kept charging 1,016–1,146 tokens for search for 240 ms after the
 * hotspot's own price had fallen to 0. Underestimating costs less: an admitted
 * request the callee rejects brings its current price back.
 *
 * <p>Thread-safe. Reads ({@link #total}) take no lock: the local price and each interface's
 * downstream maximum are published in volatiles. Updates from callees lock only their interface's
 * entry; the table of entries is copied on growth (rare: once per new interface).
 */
final class InterfacePriceTable {

  /** The callees of one interface, and the maximum of their last prices. */
  private static final class Callees {
    /** What each callee last published. */
    private long[] published = new long[0];
    /** Update intervals since then (0: refreshed in the current one). */
    private int[] staleFor = new int[0];
    /** What each callee charges at least now: its published price, aged. */
    private long[] last = new long[0];
    private volatile long max;

    synchronized void publish(int calleeKey, long price) {
      if (calleeKey >= last.length) {
        int size = Math.max(calleeKey + 1, 2 * last.length);
        published = Arrays.copyOf(published, size);
        staleFor = Arrays.copyOf(staleFor, size);
        last = Arrays.copyOf(last, size);
      }
      published[calleeKey] = price;
      staleFor[calleeKey] = 0;
      last[calleeKey] = price;
      max = price >= max ? price : recomputeMax(); // a lowered maximum needs a rescan
    }

    synchronized void decayStale(LongBinaryOperator decay) {
      for (int c = 0; c < last.length; c++) {
        if (staleFor[c] > 0) {
          last[c] = Math.clamp(decay.applyAsLong(published[c], staleFor[c]), 0, published[c]);
        }
        staleFor[c] = staleFor[c] == Integer.MAX_VALUE ? staleFor[c] : staleFor[c] + 1;
      }
      max = recomputeMax();
    }

    private long recomputeMax() {
      long m = 0;
      for (long p : last) {
        m = Math.max(m, p);
      }
      return m;
    }
  }

  private volatile long localPrice;
  private volatile Callees[] byInterface = new Callees[0];

  /** The server's own price. */
  long localPrice() {
    return localPrice;
  }

  /** Sets the local price; called by the one thread that runs the update loop. */
  void localPrice(long price) {
    localPrice = price;
  }

  /** The highest last price of {@code interfaceId}'s callees, 0 if it has none. */
  long downstreamPrice(int interfaceId) {
    Callees[] table = byInterface;
    if (interfaceId < 0 || interfaceId >= table.length || table[interfaceId] == null) {
      return 0;
    }
    return table[interfaceId].max;
  }

  /** The price a request to {@code interfaceId} must pay; unknown interfaces pay the local price. */
  long total(int interfaceId) {
    return localPrice + downstreamPrice(interfaceId);
  }

  /** A callee of {@code interfaceId} published {@code price}. */
  void publish(int interfaceId, int calleeKey, long price) {
    Interfaces.check(interfaceId);
    if (calleeKey < 0 || calleeKey > Interfaces.MAX_ID) {
      throw new IllegalArgumentException("callee key must be in [0, " + Interfaces.MAX_ID
          + "], got " + calleeKey);
    }
    callees(interfaceId).publish(calleeKey, Math.clamp(price, 0, PricePolicy.MAX_PRICE));
  }

  /**
   * Ages every callee price not refreshed since the last call: {@code decay} maps a published
   * price and the whole update intervals it has gone unrefreshed (1 or more) to what it may be now
   * (no higher); once per update interval.
   */
  void decayStale(LongBinaryOperator decay) {
    for (Callees c : byInterface) {
      if (c != null) {
        c.decayStale(decay);
      }
    }
  }

  private Callees callees(int interfaceId) {
    Callees[] table = byInterface;
    if (interfaceId < table.length && table[interfaceId] != null) {
      return table[interfaceId];
    }
    synchronized (this) {
      table = byInterface;
      if (interfaceId >= table.length) {
        table = Arrays.copyOf(table, Math.max(interfaceId + 1, 2 * table.length));
      } else if (table[interfaceId] != null) {
        return table[interfaceId];
      } else {
        table = table.clone();
      }
      Callees created = new Callees();
      table[interfaceId] = created;
      byInterface = table;
      return created;
    }
  }
}
