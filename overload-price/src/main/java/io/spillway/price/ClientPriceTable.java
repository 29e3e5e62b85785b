package io.spillway.price;

import java.util.Arrays;

/**
 * A client's view of the prices of the interfaces it calls (rajomon-nsdi25 §3.3: the client
 * controller "updates its price table based on the latest information received from the server").
 * Every entry starts at 0 (the authors' {@code initprice}) and takes the last price a response or
 * reject for that interface carried, with the time it was heard. The table has room for the
 * interfaces the session has called ({@link #track}) and the ids below the highest of them; a
 * server's list of prices updates only those ({@link #updateIfTracked}), so a peer cannot grow it.
 *
 * <p>Not thread-safe: owned by one {@link RajomonClientGate}.
 */
final class ClientPriceTable {

  private long[] prices = new long[1];
  private long[] heardAtNanos = new long[1];

  /** The last price heard for {@code interfaceId}, 0 if none. */
  long price(int interfaceId) {
    return interfaceId >= 0 && interfaceId < prices.length ? prices[interfaceId] : 0;
  }

  /** When the price of {@code interfaceId} was last heard (meaningless while its price is 0). */
  long heardAtNanos(int interfaceId) {
    return interfaceId >= 0 && interfaceId < heardAtNanos.length ? heardAtNanos[interfaceId] : 0;
  }

  /** Makes room for {@code interfaceId}, which the session calls; its price stays as it was (0 if new). */
  void track(int interfaceId) {
    Interfaces.check(interfaceId);
    if (interfaceId >= prices.length) {
      int size = Math.max(interfaceId + 1, 2 * prices.length);
      prices = Arrays.copyOf(prices, size);
      heardAtNanos = Arrays.copyOf(heardAtNanos, size);
    }
  }

  /** Records a price heard for {@code interfaceId} at {@code nowNanos}; negative prices are read as 0. */
  void update(int interfaceId, long price, long nowNanos) {
    track(interfaceId);
    updateIfTracked(interfaceId, price, nowNanos);
  }

  /** As {@link #update}, if the table has an entry for {@code interfaceId}; else nothing. */
  void updateIfTracked(int interfaceId, long price, long nowNanos) {
    if (interfaceId >= 0 && interfaceId < prices.length) {
      prices[interfaceId] = Math.clamp(price, 0, PricePolicy.MAX_PRICE);
      heardAtNanos[interfaceId] = nowNanos;
    }
  }
}
