package io.spillway.price;

import java.util.Arrays;

/**
 * A client's view of the prices of the interfaces it calls (rajomon-nsdi25 §3.3: the client
 * controller "updates its price table based on the latest information received from the server").
 * Every entry starts at 0 (the authors' {@code initprice}) and takes the last price a response or
 * reject for that interface carried, with the time it was heard. The table has room for the
 * interfaces the session has called ({@link #track}) and the ids below the highest of them; a
 * server's list of prices updates only those ({@link #raiseIfTracked}, {@link #lowerIfTracked}),
 * so a peer cannot grow it. Each entry also keeps when it was last confirmed: by a response of
 * its own interface, or by a listed price that raised it; a listed price that lowered it is news,
 * not a confirmation, so the entry stays as old as it was (the client's rule for lowering,
 * {@link RajomonClientGate}).
 *
 * <p>Not thread-safe: owned by one {@link RajomonClientGate}.
 */
final class ClientPriceTable {

  private long[] prices = new long[1];
  private long[] heardAtNanos = new long[1];
  /** When each price was last confirmed: by its own interface's response, or by a listed rise. */
  private long[] confirmedAtNanos = new long[1];

  /** The last price heard for {@code interfaceId}, 0 if none. */
  long price(int interfaceId) {
    return interfaceId >= 0 && interfaceId < prices.length ? prices[interfaceId] : 0;
  }

  /** When the price of {@code interfaceId} was last heard (meaningless while its price is 0). */
  long heardAtNanos(int interfaceId) {
    return interfaceId >= 0 && interfaceId < heardAtNanos.length ? heardAtNanos[interfaceId] : 0;
  }

  /**
   * When the price of {@code interfaceId} was last confirmed ({@link #update}, {@link #raiseIfTracked});
   * a listed price that lowers it ({@link #lowerIfTracked}) leaves this as it was.
   */
  long confirmedAtNanos(int interfaceId) {
    return interfaceId >= 0 && interfaceId < confirmedAtNanos.length ? confirmedAtNanos[interfaceId] : 0;
  }

  /** Makes room for {@code interfaceId}, which the session calls; its price stays as it was (0 if new). */
  void track(int interfaceId) {
    Interfaces.check(interfaceId);
    if (interfaceId >= prices.length) {
      int size = Math.max(interfaceId + 1, 2 * prices.length);
      prices = Arrays.copyOf(prices, size);
      heardAtNanos = Arrays.copyOf(heardAtNanos, size);
      confirmedAtNanos = Arrays.copyOf(confirmedAtNanos, size);
    }
  }

  /**
   * Records a price heard for {@code interfaceId} at {@code nowNanos} from its own response, which
   * confirms it; negative prices are read as 0.
   */
  void update(int interfaceId, long price, long nowNanos) {
    track(interfaceId);
    set(interfaceId, price, nowNanos, true);
  }

  /**
   * A listed price at or above the known one, if the table has an entry for {@code interfaceId}:
   * taken and confirmed. Returns whether it was at or above (false also when not tracked).
   */
  boolean raiseIfTracked(int interfaceId, long price, long nowNanos) {
    if (!tracked(interfaceId) || Math.clamp(price, 0, PricePolicy.MAX_PRICE) < prices[interfaceId]) {
      return false;
    }
    set(interfaceId, price, nowNanos, true);
    return true;
  }

  /** A listed price below the known one, if tracked: taken, but not as a confirmation. */
  void lowerIfTracked(int interfaceId, long price, long nowNanos) {
    if (tracked(interfaceId)) {
      set(interfaceId, price, nowNanos, false);
    }
  }

  private boolean tracked(int interfaceId) {
    return interfaceId >= 0 && interfaceId < prices.length;
  }

  private void set(int interfaceId, long price, long nowNanos, boolean confirmed) {
    prices[interfaceId] = Math.clamp(price, 0, PricePolicy.MAX_PRICE);
    heardAtNanos[interfaceId] = nowNanos;
    if (confirmed) {
      confirmedAtNanos[interfaceId] = nowNanos;
    }
  }
}
