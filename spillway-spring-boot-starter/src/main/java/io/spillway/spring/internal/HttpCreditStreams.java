package io.spillway.spring.internal;

import io.spillway.api.ControlChannel;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The gates' way to a drained HTTP session: Breakwater hands a credit to a session with nothing in
 * flight in an explicit message (breakwater-osdi20 §3.2.1, "explicit credit messages are only
 * generated when piggybacking is not possible"), and an HTTP server can only answer requests, so a
 * Spillway-aware client keeps one {@code GET} {@value #PATH} open per server, as a stream of
 * server-sent events (the gRPC transport's {@code spillway.Control/Credits} stream, over HTTP):
 *
 * <pre>
 * GET /spillway/credits          Spillway-Session: 8125…
 * 200 text/event-stream          (headers at once: the client waits for them before sending)
 * Spillway-Routes: - /actuator/**, 1 /orders/**, 0 /**
 * Spillway-Stream-Key: 3f9c…     (the key the stream is bound to: 128 random bits, in hex)
 * : subscribed
 *
 * window: 3/8589934597           (the window after the change and its stamp, when stamped)
 * data: 2                        (an explicit credit's signed delta, from gate 0)
 *
 * data: -1 1                     (the delta, and the gate when it is not 0)
 * </pre>
 *
 * <p>A stamped credit ({@link ControlChannel#sendCredit(long, int, int, long)}) carries the
 * session's window and the message's stamp in a {@code window:} field with the text of the
 * {@link io.spillway.spring.SpillwayHttpHeaders#CREDIT_WINDOW} header, before its {@code data:}
 * line; a server-sent events reader that does not know the field ignores it (the WHATWG
 * EventSource rules ignore unknown fields) and applies the delta. The stamp is what mends a
 * client's window that a lost answer left wrong (ResponseMetadata's class comment).
 *
 * <p>Credits sent faster than the client reads them wait merged, per gate ({@link
 * PendingCredits}): one event then carries the sum of their deltas and the newest of their
 * stamps, which leaves a client's window where the events one by one would have. So a client
 * that stops reading costs its server one waiting event per gate, not one per credit.
 *
 * <p>A server whose endpoints have gates of their own ({@code spillway.endpoints}) keeps one
 * ledger of a session's credits per gate, so a session needs one window per gate: the stream's
 * headers carry {@code Spillway-Routes}, which gate decides on which paths ({@link
 * io.spillway.spring.SpillwayHttpGate#routes}), and each explicit credit names its gate.
 *
 * <p>{@code POST} {@value #PATH} with the session's header, {@code Spillway-Demand} and, for a
 * gate other than 0, {@code Spillway-Gate} is a demand report that no request could carry
 * (breakwater-osdi20 §3.3; {@link io.spillway.api.ClientGate#takeDemandReport}): the gate's
 * {@link io.spillway.api.ServerGate#onDemand} takes it, and answers, if at all, on the session's
 * stream, as every explicit credit. A client whose window is in doubt and lets nothing go sends
 * one, and a gate that stamps its credits restates the window. It is taken only for a session
 * whose stream is open here ({@code 409} otherwise): the answer has nowhere else to go.
 *
 * <p>{@code DELETE} {@value #PATH} with the session's header deregisters it (its unused credits
 * return to the pool) and ends its stream; so does a stream that ends. A session's second stream
 * replaces its first. When the application stops, every stream ends first ({@link #endAll}). At
 * most {@link #MAX_STREAMS} streams are open at once: beyond them a client gets a {@code 503} and
 * goes on without, as a session whose server has none.
 *
 * <p>A session's stream belongs to the client that opened it. The session id rides on every
 * request and is no secret, so the server binds each stream it opens to a key of its own making
 * ({@link java.security.SecureRandom}, 128 bits), sent in the stream's answer as {@value
 * io.spillway.spring.SpillwayHttpHeaders#STREAM_KEY}. While the stream is open, a {@code POST},
 * a {@code DELETE} or a {@code GET} for the session is taken only with that key in the same
 * header; without it, or with another, it is a {@code 403} and nothing happens: the stream stays
 * open and the session's, and the session stays registered. Otherwise any client could end
 * another's stream, take its explicit credits on a stream of its own, or return them to the pool.
 * The gRPC transport binds a stream to the connection it came on ({@code SpillwayControlService});
 * an HTTP/1.1 client sends its demand reports and deregistration on other pooled connections than
 * its stream's, so here the binding is the key. A session with no stream open here needs none: a
 * {@code DELETE} deregisters it (a client whose stream ended cleans up, and its credits return),
 * a {@code GET} opens its stream, a {@code POST} is a {@code 409} as above. Keys are compared in
 * constant time ({@link java.security.MessageDigest#isEqual}).
 *
 * <p>Each endpoint gate's {@link ControlChannel} is {@link #channel} of its index; the servlet
 * filter and the WebFilter serve the path and register their streams here. Thread-safe; a
 * channel's {@code sendCredit} never blocks.
 */
public final class HttpCreditStreams {

  /** The path of the credit stream. */
  public static final String PATH = "/spillway/credits";
  /** The most streams open at once. */
  public static final int MAX_STREAMS = 4096;
  /** The stream's first bytes, an SSE comment, so every server sends its headers at once. */
  static final byte[] SUBSCRIBED = ": subscribed\n\n".getBytes(StandardCharsets.US_ASCII);

  /** Draws the streams' keys; thread-safe. */
  private static final SecureRandom KEYS = new SecureRandom();
  /** The bytes of a stream's key. */
  private static final int KEY_BYTES = 16;

  private final ConcurrentHashMap<Long, Bound> streams;
  /**
   * Makes {@link #open}'s check of {@link #stopped} and its put one step as {@link #endAll} sees
   * them: a stream is either refused or put where {@code endAll} will end it. Streams open once
   * per session, so the lock is off the requests' path ({@link #channel} takes none).
   */
  private final Object openLock = new Object();
  private boolean stopped; // guarded by openLock

  /**
   * The session id in {@code header}, or 0 if it is absent or not a positive decimal long. Here,
   * not beside the servlet stream, because the WebFilter reads it too, on class paths without the
   * servlet API.
   */
  static long sessionOf(String header) {
    if (header == null) {
      return 0;
    }
    try {
      return Math.max(0, Long.parseLong(header.trim()));
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  /** No streams yet. */
  public HttpCreditStreams() {
    this(new ConcurrentHashMap<>());
  }

  /** Keeps the streams in {@code streams}, which tests observe. */
  HttpCreditStreams(ConcurrentHashMap<Long, Bound> streams) {
    this.streams = streams;
  }

  /** A session's open stream and the key it is bound to (its ASCII bytes). */
  record Bound(Stream stream, byte[] key) {
    /** Whether {@code presented}, a request's {@code Spillway-Stream-Key}, is this key. */
    boolean keyIs(String presented) {
      return presented != null
          && MessageDigest.isEqual(key, presented.trim().getBytes(StandardCharsets.US_ASCII));
    }
  }

  /** A new stream key: {@value #KEY_BYTES} random bytes, in hex. */
  static String newKey() {
    byte[] key = new byte[KEY_BYTES];
    KEYS.nextBytes(key);
    return HexFormat.of().formatHex(key);
  }

  /** One session's open stream, as its server writes it. */
  public interface Stream {
    /**
     * Adds gate {@code endpoint}'s delta, stamped with the window after it and {@code seq} unless
     * {@code seq} is 0, to what the stream writes next, merged with what waits ({@link
     * PendingCredits}); never blocks.
     */
    void send(int endpoint, int creditDelta, int window, long seq);

    /** Ends the stream from the server's side. Idempotent. */
    void end();
  }

  /**
   * The event for gate {@code endpoint}'s {@code delta}, with its {@code window:} field when
   * {@code seq} is not 0.
   */
  static byte[] event(int endpoint, int delta, int window, long seq) {
    String data = "data: " + delta + (endpoint == 0 ? "" : " " + endpoint) + "\n\n";
    String stamp = seq == 0 ? ""
        : "window: " + io.spillway.spring.SpillwayHttpHeaders.creditWindow(window, seq) + "\n";
    return (stamp + data).getBytes(StandardCharsets.US_ASCII);
  }

  /**
   * The control channel of the gate with index {@code endpoint} in {@link
   * io.spillway.spring.SpillwayHttpGate#routes}: its explicit credits go to the session's stream,
   * named by the index.
   */
  public ControlChannel channel(int endpoint) {
    if (endpoint < 0) {
      throw new IllegalArgumentException("endpoint index must be at least 0: " + endpoint);
    }
    return new ControlChannel() {
      @Override
      public void sendCredit(long sessionId, int creditDelta) {
        sendCredit(sessionId, creditDelta, 0, 0);
      }

      @Override
      public void sendCredit(long sessionId, int creditDelta, int window, long seq) {
        Bound b = streams.get(sessionId);
        if (b != null) {
          b.stream.send(endpoint, creditDelta, window, seq);
        }
      }
    };
  }

  /**
   * Takes a demand report ({@code POST} {@value #PATH}, see the class comment) for {@code
   * sessionId} from its headers' values ({@code null} when absent).
   *
   * @return the status to answer: {@code 204} taken, {@code 400} malformed or no such gate with
   *     credits, {@code 403} {@code keyHeader} is not the key of the session's stream, {@code 409}
   *     the session has no stream open here
   */
  int demand(long sessionId, String demandHeader, String gateHeader, String keyHeader,
      io.spillway.spring.SpillwayHttpGate gate) {
    int demand = nonNegativeInt(demandHeader);
    int index = gateHeader == null ? 0 : nonNegativeInt(gateHeader);
    if (demand < 0 || index < 0) {
      return 400;
    }
    Bound b = streams.get(sessionId);
    if (b == null) {
      return 409;
    }
    if (!b.keyIs(keyHeader)) {
      return 403;
    }
    return gate.demand(index, sessionId, demand) ? 204 : 400;
  }

  /**
   * Deregisters {@code sessionId} ({@code DELETE} {@value #PATH}, see the class comment) and ends
   * its stream, if it has none open here or {@code keyHeader} is its stream's key.
   *
   * @return the status to answer: {@code 204} done, {@code 403} refused, nothing done
   */
  int deregister(long sessionId, String keyHeader, io.spillway.spring.SpillwayHttpGate gate) {
    Bound[] ended = new Bound[1];
    boolean[] refused = new boolean[1];
    // the check and the removal in one step: the stream whose key is checked is the one removed
    streams.computeIfPresent(sessionId, (id, b) -> {
      if (!b.keyIs(keyHeader)) {
        refused[0] = true;
        return b;
      }
      ended[0] = b;
      return null;
    });
    if (refused[0]) {
      return 403;
    }
    if (ended[0] != null) {
      ended[0].stream.end();
    }
    gate.deregister(sessionId);
    return 204;
  }

  /** {@code value} as an int of at least 0, or -1 if it is absent or not one. */
  private static int nonNegativeInt(String value) {
    if (value == null) {
      return -1;
    }
    String v = value.trim();
    if (v.isEmpty() || v.length() > 10 || v.charAt(0) == '+' || v.charAt(0) == '-') {
      return -1;
    }
    try {
      return Integer.parseInt(v);
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  /**
   * Makes {@code stream} the session's, bound to {@code key} ({@link #newKey}, which the caller
   * sends in the stream's answer), ending any earlier one if {@code keyHeader}, the request's
   * {@code Spillway-Stream-Key}, is that one's key.
   *
   * @return the status to answer: {@code 200} opened; {@code 403} the session has a stream open
   *     here and {@code keyHeader} is not its key (it stays the session's); {@code 503} {@link
   *     #MAX_STREAMS} are open, or every stream has ended ({@link #endAll})
   */
  int open(long sessionId, Stream stream, String key, String keyHeader) {
    Bound bound = new Bound(stream, key.getBytes(StandardCharsets.US_ASCII));
    Bound before;
    synchronized (openLock) {
      // only open puts, under this lock: what get sees stays until the put but for a removal
      before = streams.get(sessionId);
      if (stopped || streams.size() >= MAX_STREAMS && before == null) {
        return 503;
      }
      if (before != null && !before.keyIs(keyHeader)) {
        return 403;
      }
      before = streams.put(sessionId, bound);
    }
    if (before != null && before.stream != stream) {
      before.stream.end();
    }
    return 200;
  }

  /**
   * Forgets {@code stream} if it is still the session's.
   *
   * @return whether it was (then the caller deregisters the session)
   */
  boolean closed(long sessionId, Stream stream) {
    boolean[] was = new boolean[1];
    streams.computeIfPresent(sessionId, (id, b) -> {
      was[0] = b.stream == stream;
      return was[0] ? null : b;
    });
    return was[0];
  }

  /** Ends the session's stream, if any. */
  private void end(long sessionId) {
    Bound b = streams.remove(sessionId);
    if (b != null) {
      b.stream.end();
    }
  }

  /** Streams open now. */
  public int open() {
    return streams.size();
  }

  /**
   * Ends every stream and opens no more: the application is stopping. Runs before the web
   * server's graceful shutdown, which would otherwise wait its whole timeout for the streams,
   * requests that never end by themselves.
   */
  public void endAll() {
    synchronized (openLock) {
      stopped = true;
    }
    // every stream opened is in the map now, and no more will be
    for (Long id : streams.keySet()) {
      end(id);
    }
  }
}
