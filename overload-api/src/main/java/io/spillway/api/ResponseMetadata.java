package io.spillway.api;

/**
 * The overload fields a response (or reject, or explicit control message) carries back: its
 * status, the change to the session's credit window, the price of the interface, and the prices of
 * the server's other interfaces.
 *
 * <p>Credit delta: the signed change of the session's credit window, where the window counts the
 * session's requests in flight at the server plus its unused credits (Breakwater §3.2.1; the
 * authors' implementation keeps exactly this per-session window). A negative delta revokes
 * credits.
 *
 * <p>Credit window and sequence: a server that stamps its credit messages also sends the window
 * itself, as it stood after this message's change, with a {@linkplain #creditSeq() sequence
 * number} that orders the session's messages. A client that reads a newer sequence than the last
 * it applied sets its window to {@link #creditWindow()} and ignores the delta; an older one it
 * ignores altogether, its change being part of a window it already holds. Deltas alone cannot
 * mend a window once one message is lost (a caller that gave up on a call just after the server
 * answered it never reads that answer) or arrive out of the order they were computed in; an
 * absolute window does both by the next message. A sequence of 0 means the message carries
 * deltas only.
 *
 * <p>Mutable and reusable; not thread-safe.
 */
public final class ResponseMetadata {

  /** Marks {@link #price()} as absent: prices are sent lazily (Rajomon §3.4). */
  public static final long NO_PRICE = Long.MIN_VALUE;

  private long sessionId;
  private long requestId;
  private Status status = Status.OK;
  private int creditDelta;
  private int creditWindow;
  private long creditSeq;
  private long creditId;
  private long price = NO_PRICE;
  private int threshold;
  private int interfaceId;
  private InterfacePrices interfacePrices = InterfacePrices.NONE;

  /** Clears every field to its default, for reuse. */
  public ResponseMetadata reset() {
    sessionId = 0;
    requestId = 0;
    status = Status.OK;
    creditDelta = 0;
    creditWindow = 0;
    creditSeq = 0;
    creditId = 0;
    price = NO_PRICE;
    threshold = 0;
    interfaceId = 0;
    interfacePrices = InterfacePrices.NONE;
    return this;
  }

  /**
   * The interface the answered request called. Not on the wire: the client side fills it in from
   * its record of the pending request before handing the response to its {@link ClientGate}, so
   * a gate that keeps per-interface state (Rajomon's price table, §3.3) knows which entry a
   * {@link #price()} updates.
   */
  public int interfaceId() {
    return interfaceId;
  }

  public ResponseMetadata interfaceId(int value) {
    interfaceId = value;
    return this;
  }

  public long sessionId() {
    return sessionId;
  }

  public ResponseMetadata sessionId(long value) {
    sessionId = value;
    return this;
  }

  public long requestId() {
    return requestId;
  }

  public ResponseMetadata requestId(long value) {
    requestId = value;
    return this;
  }

  public Status status() {
    return status;
  }

  public ResponseMetadata status(Status value) {
    if (value == null) {
      throw new NullPointerException("status");
    }
    status = value;
    return this;
  }

  /** The signed change of the session's credit window. */
  public int creditDelta() {
    return creditDelta;
  }

  public ResponseMetadata creditDelta(int value) {
    creditDelta = value;
    return this;
  }

  /**
   * The session's credit window after this message's change, meaningful only where {@link
   * #creditSeq()} is not 0 (see the class comment).
   */
  public int creditWindow() {
    return creditWindow;
  }

  public ResponseMetadata creditWindow(int value) {
    creditWindow = value;
    return this;
  }

  /**
   * The sequence number of this credit message within its session, 0 when it carries a delta only
   * (see the class comment). Its high 32 bits name the server's record of the session (a session
   * the server dropped and registered again starts a new record), its low 32 bits count that
   * record's messages from 1, wrapping past 2^32 − 1 to 1; compare two with {@link
   * #isNewerCredit}.
   */
  public long creditSeq() {
    return creditSeq;
  }

  public ResponseMetadata creditSeq(long value) {
    creditSeq = value;
    return this;
  }

  /** Sets {@link #creditDelta}, {@link #creditWindow} and {@link #creditSeq} at once. */
  public ResponseMetadata credit(int delta, int window, long seq) {
    creditDelta = delta;
    creditWindow = window;
    creditSeq = seq;
    return this;
  }

  /**
   * Whether a credit message stamped {@code seq} is newer than one stamped {@code last} (0: none
   * applied yet). A new server record of the session (other high 32 bits) is newer whatever its
   * count: its client is to take the window it names. Within one record the counts compare
   * modulo 2^32, so the comparison survives their wrapping.
   */
  public static boolean isNewerCredit(long seq, long last) {
    if (seq == 0) {
      return false;
    }
    if (last == 0 || (seq >>> 32) != (last >>> 32)) {
      return true;
    }
    return (int) seq - (int) last > 0;
  }

  /** Echo of the credit id the request spent, for end-to-end RTT (Protego). */
  public long creditId() {
    return creditId;
  }

  public ResponseMetadata creditId(long value) {
    creditId = value;
    return this;
  }

  /** The interface's price, or {@link #NO_PRICE} when this response carries none. */
  public long price() {
    return price;
  }

  public ResponseMetadata price(long value) {
    price = value;
    return this;
  }

  public boolean hasPrice() {
    return price != NO_PRICE;
  }

  /**
   * The prices of the server's interfaces (Rajomon §3.4, "the current local prices"), {@link
   * InterfacePrices#NONE} when this response carries none. Sent with {@link #price()}, which is
   * the fresher figure for the answered interface itself.
   */
  public InterfacePrices interfacePrices() {
    return interfacePrices;
  }

  public ResponseMetadata interfacePrices(InterfacePrices value) {
    if (value == null) {
      throw new NullPointerException("interfacePrices");
    }
    interfacePrices = value;
    return this;
  }

  /** A server-advertised admission threshold (DAGOR's priority level); zero when unused. */
  public int threshold() {
    return threshold;
  }

  public ResponseMetadata threshold(int value) {
    threshold = value;
    return this;
  }

  @Override
  public String toString() {
    return "ResponseMetadata[session=" + sessionId + ", request=" + requestId + ", status="
        + status + ", creditDelta=" + creditDelta
        + (creditSeq == 0 ? "" : ", creditWindow=" + creditWindow + ", creditSeq=" + creditSeq)
        + ", creditId=" + creditId + ", price="
        + (hasPrice() ? price : "none") + ", threshold=" + threshold
        + ", interface=" + interfaceId
        + (interfacePrices.isEmpty() ? "" : ", interfacePrices=" + interfacePrices) + "]";
  }
}
