package io.spillway.api;

import java.util.Arrays;
import java.util.Objects;

/**
 * The price a server charges for each of its interfaces, as (interface id, price) pairs: what a
 * Rajomon server attaches to a response beside the answered interface's own price, "updating the
 * upstream services with the current local prices" (rajomon-nsdi25 §3.4, "Lazy Price
 * Propagation"). A client that calls several interfaces of one server then learns that one of
 * them got cheaper from a response of another, instead of only from a request to it that its
 * stale price keeps it from sending.
 *
 * <p>Ids are those of the side holding the list: the server's as it builds the list, the client's
 * once a transport whose ids differ between processes (gRPC numbers methods per process) has
 * translated them on the way.
 *
 * <p>Immutable and thread-safe: a server builds one per price update and attaches the same
 * instance to every response until the next.
 */
public final class InterfacePrices {

  /** No prices. */
  public static final InterfacePrices NONE = new InterfacePrices(new int[0], new long[0]);

  private final int[] ids;
  private final long[] prices;

  private InterfacePrices(int[] ids, long[] prices) {
    this.ids = ids;
    this.prices = prices;
  }

  /**
   * The pairs {@code (ids[k], prices[k])}, copied.
   *
   * @throws IllegalArgumentException if the arrays differ in length, or an id or price is negative
   */
  public static InterfacePrices of(int[] ids, long[] prices) {
    Objects.requireNonNull(ids, "ids");
    Objects.requireNonNull(prices, "prices");
    if (ids.length != prices.length) {
      throw new IllegalArgumentException(
          ids.length + " interface ids but " + prices.length + " prices");
    }
    for (int k = 0; k < ids.length; k++) {
      if (ids[k] < 0) {
        throw new IllegalArgumentException("interface id must not be negative, got " + ids[k]);
      }
      if (prices[k] < 0) {
        throw new IllegalArgumentException(
            "price of interface " + ids[k] + " must not be negative, got " + prices[k]);
      }
    }
    return ids.length == 0 ? NONE : new InterfacePrices(ids.clone(), prices.clone());
  }

  /** How many pairs. */
  public int size() {
    return ids.length;
  }

  public boolean isEmpty() {
    return ids.length == 0;
  }

  /** The interface id of pair {@code index}. */
  public int interfaceId(int index) {
    return ids[index];
  }

  /** The price of pair {@code index}. */
  public long price(int index) {
    return prices[index];
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof InterfacePrices other
        && Arrays.equals(ids, other.ids) && Arrays.equals(prices, other.prices);
  }

  @Override
  public int hashCode() {
    return 31 * Arrays.hashCode(ids) + Arrays.hashCode(prices);
  }

  @Override
  public String toString() {
    StringBuilder s = new StringBuilder("InterfacePrices[");
    for (int k = 0; k < ids.length; k++) {
      s.append(k == 0 ? "" : ", ").append(ids[k]).append('=').append(prices[k]);
    }
    return s.append(']').toString();
  }
}
