package io.spillway.transport;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.util.collection.LongObjectHashMap;
import io.spillway.api.ClientEnvironment;
import io.spillway.api.ClientGate;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.OverloadScheme;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.Status;
import io.spillway.api.Ticker;
import io.spillway.transport.internal.Frame;
import io.spillway.transport.internal.FrameException;
import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;

/**
 * A Spillway RPC client: {@code connections} connections carrying {@code sessions} logical client
 * sessions, each with its own credit account (its own {@link ClientGate} from the scheme), so
 * thousands of clients share a few sockets. Session {@code i} rides connection {@code i mod
 * connections}; its gate is confined to that connection's event loop.
 *
 * <p>A call waits in its session's gate until the scheme lets it go, expires there if it waits past
 * the gate's timeout (completing exceptionally with {@link OverloadRejectedException} of status
 * {@link Status#EXPIRED}), and completes with the response payload, or exceptionally with the
 * server's rejection, at once. If the connection closes, every call queued or in flight on it fails
 * with {@link ConnectionClosedException}: nothing is left hanging.
 *
 * <p>Thread-safe: {@link Session#call} may be called from any thread; futures complete on the
 * connection's event loop (do not block there: use the async methods, or {@link Session#callBlocking}
 * from a virtual thread).
 */
public final class SpillwayClient implements AutoCloseable {

  private static final System.Logger LOG = System.getLogger(SpillwayClient.class.getName());
  /** Far enough ahead that every queued call has "waited" past any gate's timeout. */
  private static final long FAR_FUTURE = 1L << 62;

  private final Builder config;
  private final Transport transport;
  private EventLoopGroup group;
  private final List<Connection> connections = new ArrayList<>();
  private final List<Session> sessions = new ArrayList<>();

  private SpillwayClient(Builder b) {
    this.config = b.copy(); // a builder reused or changed later must not reach a running instance
    this.transport = b.transport != null ? b.transport : Transport.select();
  }

  public static Builder builder() {
    return new Builder();
  }

  /**
   * Connects every connection and creates the sessions. If a connection cannot be made, the
   * connections made are closed and the event loops stopped, as by {@link #close()}, and the
   * failure is thrown: the caller has no started client to close, and the loops would keep the JVM
   * alive.
   */
  public synchronized SpillwayClient start() throws InterruptedException {
    try {
      return connect();
    } catch (Throwable t) {
      close();
      throw t;
    }
  }

  private SpillwayClient connect() throws InterruptedException {
    group = transport.newEventLoopGroup(config.ioThreads);
    for (int i = 0; i < config.connections; i++) {
      Connection c = new Connection(i);
      Bootstrap b = new Bootstrap().group(group).channel(transport.channelClass())
          .option(ChannelOption.TCP_NODELAY, true)
          .handler(new ChannelInitializer<>() {
            @Override
            protected void initChannel(Channel ch) {
              ch.pipeline().addLast("spillway-client", c);
            }
          });
      c.channel = b.connect(config.host, config.port).sync().channel();
      connections.add(c);
    }
    for (int i = 0; i < config.sessions; i++) {
      long id = config.firstSessionId + i;
      Connection c = connections.get(i % connections.size());
      Session s = new Session(id, c, config.scheme.newClientGate(
          new ClientEnvironment(id, config.sloNanos, config.metrics)));
      c.sessions.put(id, s);
      sessions.add(s);
    }
    return this;
  }

  /** The session with index {@code i}, 0 ≤ i &lt; sessions. */
  public Session session(int i) {
    return sessions.get(i);
  }

  /**
   * The event loop session {@code i} is confined to; its futures complete there. A load generator
   * that issues calls from this loop avoids a thread hand-off per call.
   */
  public io.netty.channel.EventLoop eventLoop(int i) {
    return sessions.get(i).connection.channel.eventLoop();
  }

  public int sessionCount() {
    return sessions.size();
  }

  public Transport transport() {
    return transport;
  }

  /** Closes every connection, failing whatever is still queued or in flight, and stops the loops. */
  @Override
  public synchronized void close() {
    for (Connection c : connections) {
      if (c.channel != null) {
        c.channel.close().syncUninterruptibly();
      }
    }
    if (group != null) {
      group.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
    }
  }

  /** One call: its payload, its future, when it was issued and sent. Confined to the loop. */
  private static final class Call {
    final byte[] payload;
    final CompletableFuture<byte[]> future = new CompletableFuture<>();
    final boolean arrivalGiven;
    final long arrivalNanos;
    long sentAt;
    /** The session that sent it, once sent. */
    Session session;

    Call(byte[] payload, boolean arrivalGiven, long arrivalNanos) {
      this.payload = payload;
      this.arrivalGiven = arrivalGiven;
      this.arrivalNanos = arrivalNanos;
    }
  }

  /** A logical client session with its own credit account. */
  public final class Session {
    private final long id;
    private final Connection connection;
    private final ClientGate<Call> gate;
    private final RequestMetadata header = new RequestMetadata();
    private long wakeupAt;
    private boolean wakeupArmed;

    private Session(long id, Connection connection, ClientGate<Call> gate) {
      this.id = id;
      this.connection = connection;
      this.gate = gate;
    }

    public long id() {
      return id;
    }

    /**
     * Sends {@code payload} when the scheme allows; the future completes with the response payload,
     * or exceptionally with {@link OverloadRejectedException} (rejected or expired) or
     * {@link ConnectionClosedException}.
     *
     * @throws IllegalArgumentException if {@code payload} is longer than {@link Builder#maxPayload}:
     *     a server refuses such a frame by closing the connection, which would fail every call on it
     */
    public CompletableFuture<byte[]> call(byte[] payload) {
      return submit(new Call(sendable(payload), false, 0));
    }

    /**
     * As {@link #call(byte[])}, for a request that arrived at {@code arrivalNanos} on the client's
     * ticker ({@link Builder#ticker}; by default {@link System#nanoTime()}): its wait in the client
     * queue, and so its expiry, counts from then (Breakwater §3.3), so a request that already
     * waited upstream, or behind a busy caller, longer than the queue timeout ends with {@link
     * Status#EXPIRED} without being sent. Latency a caller measures should count from the same
     * instant.
     */
    public CompletableFuture<byte[]> call(byte[] payload, long arrivalNanos) {
      return submit(new Call(sendable(payload), true, arrivalNanos));
    }

    private byte[] sendable(byte[] payload) {
      Objects.requireNonNull(payload, "payload");
      if (payload.length > config.maxPayload) {
        throw new IllegalArgumentException("payload of " + payload.length + " bytes exceeds the frame limit of "
            + config.maxPayload + " (Builder.maxPayload)");
      }
      return payload;
    }

    private CompletableFuture<byte[]> submit(Call call) {
      EventLoop loop = connection.channel.eventLoop();
      if (loop.inEventLoop()) {
        offer(call);
      } else {
        try {
          loop.execute(() -> offer(call));
        } catch (java.util.concurrent.RejectedExecutionException e) {
          call.future.completeExceptionally(new ConnectionClosedException("client is closed"));
        }
      }
      return call.future;
    }

    /** {@link #call} and wait: meant for virtual threads. Rethrows the failure unwrapped. */
    public byte[] callBlocking(byte[] payload) throws Exception {
      try {
        return call(payload).join();
      } catch (CompletionException e) {
        if (e.getCause() instanceof Exception cause) {
          throw cause;
        }
        throw e;
      }
    }

    /**
     * Tells the server this session has nothing more to send, returning its unused credits to the
     * pool (Breakwater §3: the deregister message). Calls already queued or in flight still end
     * normally; a later call registers the session again. Does nothing once the client is closed.
     */
    public void deregister() {
      EventLoop loop = connection.channel.eventLoop();
      Runnable send = () -> {
        if (connection.channel.isActive()) {
          connection.write(Frame.TYPE_DEREGISTER, new RequestMetadata().sessionId(id), null);
          connection.scheduleFlush();
        }
      };
      if (loop.inEventLoop()) {
        send.run();
      } else {
        try {
          loop.execute(send);
        } catch (java.util.concurrent.RejectedExecutionException closed) {
          // the client is closed: closing the connection deregistered the session at the server
        }
      }
    }

    /** Requests waiting in this session's gate (read on the loop for an exact value). */
    public int queued() {
      return gate.queued();
    }

    private void offer(Call call) {
      if (!connection.channel.isActive()) {
        call.future.completeExceptionally(new ConnectionClosedException("connection closed"));
        return;
      }
      long now = config.ticker.read();
      if (!gate.offer(call, call.arrivalGiven ? call.arrivalNanos : now, now)) {
        call.future.completeExceptionally(new OverloadRejectedException(Status.REJECTED_LIMIT));
        return;
      }
      drain();
    }

    void drain() {
      long now = config.ticker.read();
      gate.expire(now, c -> c.future.completeExceptionally(new OverloadRejectedException(Status.EXPIRED)));
      Call call;
      boolean wrote = false;
      while ((call = gate.poll(now, header.reset())) != null) {
        long requestId = ++connection.nextRequestId;
        header.requestId(requestId);
        call.sentAt = now;
        call.session = this;
        connection.inFlight.put(requestId, call);
        connection.write(Frame.TYPE_REQUEST, header, call.payload);
        wrote = true;
      }
      int demand = gate.takeDemandReport();
      if (demand >= 0) {
        header.reset().sessionId(id).demand(demand);
        connection.write(Frame.TYPE_DEMAND, header, null);
        wrote = true;
      }
      if (wrote) {
        connection.scheduleFlush();
      }
      armWakeup(now);
    }

    private void armWakeup(long now) {
      if (gate.queued() == 0) {
        return;
      }
      long at = gate.nextWakeupNanos();
      if (wakeupArmed && at - wakeupAt >= 0) {
        return;
      }
      wakeupArmed = true;
      wakeupAt = at;
      long delay = Math.max(1_000, at - now);
      connection.channel.eventLoop().schedule(() -> {
        if (wakeupArmed && wakeupAt == at) {
          wakeupArmed = false;
          drain();
        }
      }, delay, TimeUnit.NANOSECONDS);
    }

    void closed(ConnectionClosedException reason) {
      gate.expire(config.ticker.read() + FAR_FUTURE, c -> c.future.completeExceptionally(reason));
      if (gate.queued() > 0) {
        LOG.log(Level.WARNING, "session {0}: {1} calls left in a gate that does not expire by age",
            id, gate.queued());
      }
    }
  }

  /** One connection and the sessions on it. Confined to its event loop. */
  private final class Connection extends ByteToMessageDecoder {
    final int index;
    Channel channel;
    ChannelHandlerContext ctx;
    final LongObjectHashMap<Session> sessions = new LongObjectHashMap<>();
    final LongObjectHashMap<Call> inFlight = new LongObjectHashMap<>();
    final ResponseMetadata response = new ResponseMetadata();
    long nextRequestId;
    boolean flushScheduled;
    boolean failed; // a failure has closed this connection: later ones are its echo

    Connection(int index) {
      this.index = index;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
      this.ctx = ctx;
    }

    void write(int type, RequestMetadata m, byte[] payload) {
      int length = payload == null ? 0 : payload.length;
      ByteBuf out = ctx.alloc().buffer(Frame.HEADER_SIZE + length);
      Frame.writeRequest(out, type, m, length);
      if (length > 0) {
        out.writeBytes(payload);
      }
      ctx.write(out, ctx.voidPromise());
    }

    void scheduleFlush() {
      if (!flushScheduled) {
        flushScheduled = true;
        ctx.executor().execute(() -> {
          flushScheduled = false;
          ctx.flush();
        });
      }
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
      while (in.readableBytes() >= Frame.HEADER_SIZE) {
        int type = Frame.validate(in, config.maxPayload);
        int length = (int) Frame.payloadLength(in);
        if (!Frame.isWhole(in, length)) {
          return; // nothing is allocated for a payload before all of it has arrived
        }
        Frame.readResponse(in, response);
        in.skipBytes(Frame.HEADER_SIZE);
        long now = config.ticker.read();
        switch (type) {
          case Frame.TYPE_RESPONSE -> {
            byte[] body = new byte[length];
            in.readBytes(body);
            Call call = inFlight.get(response.requestId());
            if (call == null) {
              LOG.log(Level.WARNING, "response to unknown request {0} of session {1}",
                  response.requestId(), response.sessionId());
              continue;
            }
            Session s = call.session;
            if (s.id != response.sessionId()) {
              // The call stays in flight: closing the connection fails it with the others.
              throw new FrameException("response to request " + response.requestId() + " of session "
                  + s.id + " names session " + response.sessionId());
            }
            inFlight.remove(response.requestId());
            s.gate.onResponse(response, call.sentAt, now);
            if (response.status() == Status.OK) {
              call.future.complete(body);
            } else {
              call.future.completeExceptionally(new OverloadRejectedException(response.status(), call.sentAt));
            }
            s.drain();
          }
          case Frame.TYPE_CREDIT -> {
            Session s = sessions.get(response.sessionId());
            if (s != null) {
              s.gate.onControl(response, now);
              s.drain();
            }
          }
          default -> throw new FrameException("a server may not send frames of type " + type);
        }
      }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
      ConnectionClosedException reason = new ConnectionClosedException(
          "connection " + index + " to " + config.host + ":" + config.port + " closed");
      for (Call call : inFlight.values()) {
        call.future.completeExceptionally(reason);
      }
      inFlight.clear();
      for (Session s : sessions.values()) {
        s.closed(reason);
      }
      super.channelInactive(ctx);
    }

    /**
     * Closes the connection on its first failure, logged once. Writes go out with the void promise
     * (no future per frame), so each frame still buffered when the connection closes fails into this
     * method: closing a client with thousands of calls queued would otherwise log a warning for each
     * of them. Those calls are failed by {@link #channelInactive}; a write refused because the
     * connection is already closed says nothing new.
     */
    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      if (failed || (!ctx.channel().isActive() && cause instanceof java.nio.channels.ClosedChannelException)) {
        LOG.log(Level.DEBUG, "connection " + index + ", already closing: " + cause);
        return;
      }
      failed = true;
      LOG.log(Level.WARNING, "closing connection " + index + ": " + cause);
      ctx.close();
    }
  }

  /** Configures a {@link SpillwayClient}. Not thread-safe. */
  public static final class Builder implements Cloneable {
    private String host = "127.0.0.1";
    private int port;
    private OverloadScheme scheme;
    private Transport transport;
    private int connections = 1;
    private int sessions = 1;
    private long firstSessionId = 1;
    private int ioThreads = 1;
    private long sloNanos = 1_000_000;
    private Ticker ticker = Ticker.system();
    private OverloadMetrics metrics = OverloadMetrics.NONE;
    private int maxPayload = Frame.DEFAULT_MAX_PAYLOAD;

    private Builder() { }

    public Builder host(String value) { host = Objects.requireNonNull(value); return this; }

    public Builder port(int value) { port = value; return this; }

    public Builder scheme(OverloadScheme value) { scheme = value; return this; }

    public Builder transport(Transport value) { transport = value; return this; }

    public Builder connections(int value) { connections = value; return this; }

    /** Logical sessions, each with its own credit account; spread over the connections. */
    public Builder sessions(int value) { sessions = value; return this; }

    /** Session ids are firstSessionId, firstSessionId + 1, ...; unique per server. */
    public Builder firstSessionId(long value) { firstSessionId = value; return this; }

    public Builder ioThreads(int value) { ioThreads = value; return this; }

    /** The end-to-end SLO the sessions' gates expire requests against. */
    public Builder sloNanos(long value) { sloNanos = value; return this; }

    public Builder ticker(Ticker value) { ticker = Objects.requireNonNull(value); return this; }

    public Builder metrics(OverloadMetrics value) { metrics = Objects.requireNonNull(value); return this; }

    /**
     * The largest payload a frame may carry, each way: a longer response closes the connection, a
     * longer call is refused. Keep it at the server's (1 MiB by default).
     */
    public Builder maxPayload(int value) { maxPayload = value; return this; }

    /** A copy with the same values: every field is a value or an immutable reference. */
    Builder copy() {
      try {
        return (Builder) super.clone();
      } catch (CloneNotSupportedException e) {
        throw new AssertionError(e);
      }
    }

    public SpillwayClient build() {
      if (scheme == null) {
        throw new IllegalArgumentException("a client needs a scheme (NoControl.INSTANCE for none)");
      }
      if (port <= 0 || port > 65_535 || connections < 1 || sessions < 1 || ioThreads < 1 || sloNanos <= 0) {
        throw new IllegalArgumentException("out of range: port=" + port + " connections=" + connections
            + " sessions=" + sessions + " ioThreads=" + ioThreads + " slo=" + sloNanos);
      }
      return new SpillwayClient(this);
    }
  }
}
