package io.spillway.kv;

import io.spillway.api.NoControl;
import io.spillway.api.OverloadScheme;
import io.spillway.api.Ticker;
import io.spillway.transport.SpillwayClient;
import io.spillway.transport.Transport;
import java.util.Arrays;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A Java client of {@link KvServer}'s native-frame port: GET, SET and DELETE as futures, over a
 * {@link SpillwayClient} whose sessions hold the credits the server grants (docs/design.md, "A
 * request's path on a client": a call waits in its session's client queue for a credit, and
 * expires there at the scheme's queue timeout). Build it with the scheme the server runs ({@link
 * KvServer.FrameScheme#scheme}).
 *
 * <p>A future completes with the answer, or exceptionally with:
 * <ul>
 *   <li>{@code io.spillway.transport.OverloadRejectedException}: turned away, fast, by the
 *       server's gate or a lock's budget ({@code status()} says which), or expired in the client
 *       queue ({@code EXPIRED}, never sent). Nothing was stored or deleted.
 *       {@link KvReplicaClient} retries these on a replica;
 *   <li>{@link KvException}: the server's {@code CLIENT_ERROR} or {@code SERVER_ERROR};
 *   <li>{@code io.spillway.transport.ConnectionClosedException}: the connection closed first.
 * </ul>
 *
 * <p>Thread-safe: operations may be called from any thread; calls rotate over the sessions;
 * futures complete on the connection's event loop (do not block there).
 */
public final class KvClient implements AutoCloseable {

  /** A GET's hit: the flags stored with the value, and the value. */
  public record Value(int flags, byte[] data) {
    public Value {
      Objects.requireNonNull(data, "data");
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Value v && v.flags == flags && Arrays.equals(v.data, data);
    }

    @Override
    public int hashCode() {
      return 31 * flags + Arrays.hashCode(data);
    }

    @Override
    public String toString() {
      return "Value[flags=" + flags + ", " + data.length + " bytes]";
    }
  }

  private final SpillwayClient client;
  private final Ticker ticker;
  private final AtomicInteger next = new AtomicInteger();

  private KvClient(SpillwayClient client, Ticker ticker) {
    this.client = client;
    this.ticker = ticker;
  }

  /** A builder; {@link Builder#port} is required. */
  public static Builder builder() {
    return new Builder();
  }

  /** The value stored under {@code key}, or empty if there is none. */
  public CompletableFuture<Optional<Value>> get(byte[] key) {
    return get(key, ticker.read());
  }

  /**
   * As {@link #get(byte[])}, for a request that arrived at {@code arrivalNanos} on the client's
   * ticker: its wait in the client queue, and so its expiry, counts from then.
   */
  public CompletableFuture<Optional<Value>> get(byte[] key, long arrivalNanos) {
    return send(KvFrameCodec.encode(KvFrameCodec.OP_GET, key, 0, 0, null), arrivalNanos)
        .thenApply(KvClient::decodeGet);
  }

  /**
   * Stores {@code value} under {@code key} (memcached's {@code set}).
   *
   * @param exptime memcached's: 0 never, up to 30 days relative seconds, else Unix time
   */
  public CompletableFuture<Void> set(byte[] key, int flags, int exptime, byte[] value) {
    return set(key, flags, exptime, value, ticker.read());
  }

  /** As {@link #set(byte[], int, int, byte[])}, arrived at {@code arrivalNanos}. */
  public CompletableFuture<Void> set(byte[] key, int flags, int exptime, byte[] value, long arrivalNanos) {
    Objects.requireNonNull(value, "value");
    return send(KvFrameCodec.encode(KvFrameCodec.OP_SET, key, flags, exptime, value), arrivalNanos)
        .thenApply(KvClient::decodeSet);
  }

  /** Removes {@code key}; whether it was there. */
  public CompletableFuture<Boolean> delete(byte[] key) {
    return delete(key, ticker.read());
  }

  /** As {@link #delete(byte[])}, arrived at {@code arrivalNanos}. */
  public CompletableFuture<Boolean> delete(byte[] key, long arrivalNanos) {
    return send(KvFrameCodec.encode(KvFrameCodec.OP_DELETE, key, 0, 0, null), arrivalNanos)
        .thenApply(KvClient::decodeDelete);
  }

  /** Sends an encoded request on the next session; the raw response payload. */
  CompletableFuture<byte[]> send(byte[] request, long arrivalNanos) {
    int s = Math.floorMod(next.getAndIncrement(), client.sessionCount());
    return client.session(s).call(request, arrivalNanos);
  }

  /** The client's ticker (arrival times are read from it). */
  Ticker ticker() {
    return ticker;
  }

  /** The frame client underneath (tests and load generators). */
  SpillwayClient frameClient() {
    return client;
  }

  static Optional<Value> decodeGet(byte[] r) {
    int code = code(r);
    if (code == KvFrameCodec.NOT_FOUND) {
      return Optional.empty();
    }
    if (r.length < 5) {
      throw new KvException(true, "malformed GET response of " + r.length + " bytes");
    }
    return Optional.of(new Value(KvFrameCodec.getInt(r, 1), Arrays.copyOfRange(r, 5, r.length)));
  }

  static Void decodeSet(byte[] r) {
    code(r);
    return null;
  }

  static Boolean decodeDelete(byte[] r) {
    return code(r) == KvFrameCodec.OK;
  }

  /** The response's code, OK or NOT_FOUND; an error response throws {@link KvException}. */
  private static int code(byte[] r) {
    if (r.length == 0) {
      throw new KvException(true, "empty response");
    }
    int code = r[0];
    return switch (code) {
      case KvFrameCodec.OK, KvFrameCodec.NOT_FOUND -> code;
      case KvFrameCodec.CLIENT_ERROR -> throw new KvException(true, KvFrameCodec.message(r));
      case KvFrameCodec.SERVER_ERROR -> throw new KvException(false, KvFrameCodec.message(r));
      default -> throw new KvException(true, "unknown response code " + code);
    };
  }

  /** Closes the connections; calls still queued or in flight fail with a closed connection. */
  @Override
  public void close() {
    client.close();
  }

  /** Configures a {@link KvClient}. Not thread-safe. */
  public static final class Builder {
    private final SpillwayClient.Builder frame = SpillwayClient.builder().scheme(NoControl.INSTANCE);
    private Ticker ticker = Ticker.system();

    private Builder() { }

    public Builder host(String value) { frame.host(value); return this; }

    /** The server's frame port ({@link KvServer#framePort()}). */
    public Builder port(int value) { frame.port(value); return this; }

    /** The admission scheme the server's frame port runs; none by default. */
    public Builder scheme(OverloadScheme value) { frame.scheme(Objects.requireNonNull(value)); return this; }

    /** Client sessions, each with its own credits (1 by default); calls rotate over them. */
    public Builder sessions(int value) { frame.sessions(value); return this; }

    /** Connections the sessions share (1 by default). */
    public Builder connections(int value) { frame.connections(value); return this; }

    /** The first session id; ids must be unique per server, so clients of one server differ here. */
    public Builder firstSessionId(long value) { frame.firstSessionId(value); return this; }

    /** The SLO the sessions' queues expire calls against (1 ms by default). */
    public Builder sloNanos(long value) { frame.sloNanos(value); return this; }

    /** The client's clock; {@link System#nanoTime()} by default. */
    public Builder ticker(Ticker value) {
      ticker = Objects.requireNonNull(value);
      frame.ticker(value);
      return this;
    }

    public Builder transport(Transport value) { frame.transport(value); return this; }

    /**
     * Connects.
     *
     * @throws IllegalArgumentException if a value is out of range
     */
    public KvClient start() throws InterruptedException {
      return new KvClient(frame.build().start(), ticker);
    }
  }
}
