package io.spillway.spring.internal;

import io.spillway.api.ControlChannel;
import java.nio.charset.StandardCharsets;
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
 * : subscribed
 *
 * data: 2                        (one event per explicit credit, the signed delta)
 * </pre>
 *
 * <p>{@code DELETE} {@value #PATH} with the session's header deregisters it (its unused credits
 * return to the pool) and ends its stream; so does a stream that ends. A session's second stream
 * replaces its first. When the application stops, every stream ends first ({@link #endAll}). At most {@link #MAX_STREAMS} streams are open at once: beyond them a client
 * gets a {@code 503} and goes on without, as a session whose server has none.
 *
 * <p>This object is every endpoint gate's {@link ControlChannel}; the servlet filter and the
 * WebFilter serve the path and register their streams here. Thread-safe; {@link #sendCredit}
 * never blocks.
 */
public final class HttpCreditStreams implements ControlChannel {

  /** The path of the credit stream. */
  public static final String PATH = "/spillway/credits";
  /** The most streams open at once. */
  public static final int MAX_STREAMS = 4096;
  /** The stream's first bytes, an SSE comment, so every server sends its headers at once. */
  static final byte[] SUBSCRIBED = ": subscribed\n\n".getBytes(StandardCharsets.US_ASCII);

  private final ConcurrentHashMap<Long, Stream> streams = new ConcurrentHashMap<>();
  private volatile boolean stopped;

  /** One session's open stream, as its server writes it. */
  public interface Stream {
    /** Queues an event for the delta; never blocks. */
    void send(int creditDelta);

    /** Ends the stream from the server's side. Idempotent. */
    void end();
  }

  /** The event for {@code delta}. */
  static byte[] event(int delta) {
    return ("data: " + delta + "\n\n").getBytes(StandardCharsets.US_ASCII);
  }

  @Override
  public void sendCredit(long sessionId, int creditDelta) {
    Stream s = streams.get(sessionId);
    if (s != null) {
      s.send(creditDelta);
    }
  }

  /**
   * Makes {@code stream} the session's, ending any earlier one.
   *
   * @return {@code false} if {@link #MAX_STREAMS} are open; the caller refuses it
   */
  boolean open(long sessionId, Stream stream) {
    if (stopped || streams.size() >= MAX_STREAMS && !streams.containsKey(sessionId)) {
      return false;
    }
    Stream before = streams.put(sessionId, stream);
    if (before != null && before != stream) {
      before.end();
    }
    return true;
  }

  /**
   * Forgets {@code stream} if it is still the session's.
   *
   * @return whether it was (then the caller deregisters the session)
   */
  boolean closed(long sessionId, Stream stream) {
    return streams.remove(sessionId, stream);
  }

  /** Ends the session's stream, if any (a deregistration). */
  void end(long sessionId) {
    Stream s = streams.remove(sessionId);
    if (s != null) {
      s.end();
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
    stopped = true;
    for (Long id : streams.keySet()) {
      end(id);
    }
  }
}
