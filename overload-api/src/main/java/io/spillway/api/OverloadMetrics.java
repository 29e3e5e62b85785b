package io.spillway.api;

/**
 * Where gates report what they do. Every method has an empty default, and {@link #NONE} is the
 * default everywhere, so metrics cost nothing unless a caller plugs in an implementation (a
 * Micrometer or JFR adapter, or the simulator's counters).
 *
 * <p>Implementations must be thread-safe, fast and non-blocking: they are called on the hot path.
 */
public interface OverloadMetrics {

  /** Reports nothing. */
  OverloadMetrics NONE = new OverloadMetrics() { };

  /** A server gate decided on a request: {@link Status#OK} when admitted, else the rejection. */
  default void onAdmission(Status decision) { }

  /** A permit ended. */
  default void onCompletion(Outcome outcome) { }

  /** A credit pool was resized: its target size, credits currently issued, sessions registered. */
  default void onCreditPool(long total, long issued, int sessions) { }

  /**
   * A limit on requests that carry no credit was updated: the limit and the requests it counts
   * now (for the default scheme's plain-client limit, those admitted and not yet started, see
   * {@link ServerPermit#started}). A scheme that runs both (credits for sessions, a limit for
   * plain clients) reports each to its own callback, so neither reading is mistaken for the other.
   * Where the host reports starts ({@link ServerEnvironment#reportsStarts}), the default scheme's
   * limit refuses nothing until a request has waited behind another; until then it reports the
   * limit it will start from.
   */
  default void onConcurrencyLimit(long limit, long counted) { }

  /** An explicit control message (credit, demand) was sent. */
  default void onControlMessage() { }

  /**
   * A price gate set its own price for the next interval (Rajomon's local price, rajomon-nsdi25
   * §3.2): called once per price update, off the request path.
   */
  default void onPrice(long localPrice) { }
}
