package io.spillway.api;

/**
 * The status a response carries back to the client: success, or why the request was turned away.
 * Every rejection is fast: the server answers as soon as it decides, so the client learns within
 * the target delay and may retry elsewhere.
 */
public enum Status {
  /** Served. */
  OK(0),
  /** Dropped by delay-based AQM: queueing delay was past the drop threshold (Breakwater §3.2.3). */
  REJECTED_AQM(1),
  /** The client sent without a credit (a misbehaving or forged client). */
  REJECTED_NO_CREDIT(2),
  /** The request's tokens did not cover the interface's price (Rajomon). */
  REJECTED_PRICE(3),
  /** A queue inside the handler would have exceeded the request's budget (Protego ASQM). */
  REJECTED_BUDGET(4),
  /** A concurrency or rate limit was reached (window, SEDA, DAGOR, peers' limiters). */
  REJECTED_LIMIT(5),
  /** Never sent: the request expired in the client queue (client side only). */
  EXPIRED(6),
  /** The server gave up on the request when its deadline passed. */
  TIMED_OUT(7),
  /** The handler failed with an error. */
  FAILED(8);

  private static final Status[] BY_CODE = values();
  private final int code;

  Status(int code) {
    this.code = code;
  }

  /** Whether this status means the request was not served. */
  public boolean isRejection() {
    return this != OK;
  }

  /** Whether the server shed the request for overload (as opposed to failing it or timing out). */
  public boolean isShed() {
    return this != OK && this != TIMED_OUT && this != FAILED;
  }

  /** The stable code used on the wire. */
  public int code() {
    return code;
  }

  /**
   * The status with the given wire code.
   *
   * @throws IllegalArgumentException for an unknown code
   */
  public static Status fromCode(int code) {
    if (code < 0 || code >= BY_CODE.length) {
      throw new IllegalArgumentException("unknown status code " + code);
    }
    return BY_CODE[code];
  }
}
