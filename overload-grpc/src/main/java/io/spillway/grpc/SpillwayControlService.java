package io.spillway.grpc;

import io.spillway.grpc.ControlMarshallers.CreditMessage;

import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServiceDescriptor;
import io.grpc.Status;
import io.spillway.api.ControlChannel;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ServerGate;
import io.spillway.api.Ticker;
import java.lang.System.Logger.Level;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The control messages no gRPC response can carry (docs/design.md, "Wire metadata",
 * control row), as a small gRPC service, {@code spillway.Control}, defined by hand (no protobuf):
 *
 * <table>
 *   <caption>Methods</caption>
 *   <tr><th>method</th><th>kind</th><th>request</th><th>what the server does</th></tr>
 *   <tr><td>{@code Credits}</td><td>server streaming</td><td>empty message; header
 *       {@code spillway-session}</td><td>registers the stream as the session's explicit credit
 *       channel, sends response headers at once (the client waits for them before its first
 *       request, so no credit can be sent before the stream exists), then streams one message per
 *       explicit credit: the signed delta as ASCII decimal. Cancelling the stream deregisters the
 *       session (its connection is gone, Breakwater §3).</td></tr>
 *   <tr><td>{@code Demand}</td><td>unary</td><td>empty; headers {@code spillway-session},
 *       {@code spillway-demand}</td><td>{@link ServerGate#onDemand} (demand synchronisation,
 *       breakwater-osdi20 §5.2); answers an empty message.</td></tr>
 *   <tr><td>{@code Deregister}</td><td>unary</td><td>empty; header {@code spillway-session}</td>
 *       <td>{@link ServerGate#deregister}: the session's unused credits return to the pool;
 *       answers an empty message.</td></tr>
 * </table>
 *
 * <p>Why a stream: a gRPC server can only answer calls, and Breakwater must hand a credit to a
 * drained session that has nothing in flight (breakwater-osdi20 §3.2.1: "explicit credit messages
 * are only generated when piggybacking is not possible"). A client that issues credits-based
 * requests keeps one {@code Credits} call open per session; {@link SpillwayClientInterceptor} does
 * so when its scheme {@link io.spillway.api.OverloadScheme#issuesCredits() issues credits}.
 *
 * <p>This object is the gate's {@link ControlChannel}: create it first, pass it in the gate's
 * {@link io.spillway.api.ServerEnvironment}, then {@link #bind} the gate.
 * {@link SpillwayGrpc#server} does all of this.
 *
 * <p>A session's credit stream binds it to the connection the stream came on (its remote
 * address, {@link SpillwayServerInterceptor#originOf}), as the native transport binds a session
 * to its connection: another connection's {@code Credits}, {@code Demand} or {@code Deregister}
 * for the session is refused with {@code PERMISSION_DENIED}, so a client that names another's
 * session id cannot take its credits, end its stream or return its credits to the pool. A client
 * whose connection broke starts again under a new id ({@link SpillwayClientInterceptor}). At most
 * {@value #MAX_STREAMS_PER_CONNECTION} credit streams are open per connection (the native
 * transport's default cap of sessions per connection); beyond it {@code RESOURCE_EXHAUSTED}.
 * In-process calls have no connection and are all one.
 *
 * <p>Thread-safe. {@link #sendCredit} never blocks: gRPC buffers the message, or, while the
 * stream is not ready for it (a client that does not read), it is added to the credits the
 * session gets once it is. A credit for a session without a stream (a client that does not subscribe) is dropped, as a credit for a gone
 * connection is in the native transport.
 */
public final class SpillwayControlService implements ControlChannel, AutoCloseable {

  /** The gRPC service name, {@code spillway.Control}. */
  public static final String SERVICE_NAME = "spillway.Control";

  static final MethodDescriptor<byte[], CreditMessage> CREDITS =
      MethodDescriptor.<byte[], CreditMessage>newBuilder()
          .setType(MethodDescriptor.MethodType.SERVER_STREAMING)
          .setFullMethodName(MethodDescriptor.generateFullMethodName(SERVICE_NAME, "Credits"))
          .setRequestMarshaller(ControlMarshallers.BYTES)
          .setResponseMarshaller(ControlMarshallers.CREDIT)
          .build();

  static final MethodDescriptor<byte[], byte[]> DEMAND = unary("Demand");

  static final MethodDescriptor<byte[], byte[]> DEREGISTER = unary("Deregister");

  static final ServiceDescriptor SERVICE =
      ServiceDescriptor.newBuilder(SERVICE_NAME).addMethod(CREDITS).addMethod(DEMAND)
          .addMethod(DEREGISTER).build();

  private static final System.Logger LOG = System.getLogger(SpillwayControlService.class.getName());

  private final Ticker ticker;
  private final ConcurrentHashMap<Long, CreditStream> streams = new ConcurrentHashMap<>();
  /** Credit streams open per connection (origin); an entry goes when its count would be 0. */
  private final ConcurrentHashMap<Long, Integer> streamsPerConnection = new ConcurrentHashMap<>();

  /** The most credit streams one connection may have open. */
  public static final int MAX_STREAMS_PER_CONNECTION = 16_384;
  private volatile ServerGate gate;
  private volatile boolean closed;

  /** A control service reading {@code ticker} for the times it hands the gate. */
  public SpillwayControlService(Ticker ticker) {
    this.ticker = Objects.requireNonNull(ticker, "ticker");
  }

  private static MethodDescriptor<byte[], byte[]> unary(String name) {
    return MethodDescriptor.<byte[], byte[]>newBuilder()
        .setType(MethodDescriptor.MethodType.UNARY)
        .setFullMethodName(MethodDescriptor.generateFullMethodName(SERVICE_NAME, name))
        .setRequestMarshaller(ControlMarshallers.BYTES)
        .setResponseMarshaller(ControlMarshallers.BYTES)
        .build();
  }

  /**
   * Names the gate that demand reports, deregistrations and closed credit streams go to.
   *
   * @throws IllegalStateException if a gate is already bound
   */
  public synchronized void bind(ServerGate gate) {
    if (this.gate != null) {
      throw new IllegalStateException("a gate is already bound");
    }
    this.gate = Objects.requireNonNull(gate, "gate");
  }

  /** The service to add to the gRPC server. */
  public ServerServiceDefinition serviceDefinition() {
    return ServerServiceDefinition.builder(SERVICE)
        .addMethod(CREDITS, this::startCredits)
        .addMethod(DEMAND, answer(true))
        .addMethod(DEREGISTER, answer(false))
        .build();
  }

  @Override
  public void sendCredit(long sessionId, int creditDelta) {
    sendCredit(sessionId, creditDelta, 0, 0);
  }

  @Override
  public void sendCredit(long sessionId, int creditDelta, int window, long seq) {
    CreditStream stream = streams.get(sessionId);
    if (stream != null) {
      stream.send(creditDelta, window, seq);
    }
  }

  /**
   * Ends the session's credit stream ({@code NOT_FOUND}): the gate dropped the session as idle,
   * and its client, hearing the stream end, starts again under a new id
   * ({@link SpillwayClientInterceptor}), so a window that had drifted from the server's is not
   * kept (ControlChannel#sessionEnded).
   */
  @Override
  public void sessionEnded(long sessionId) {
    CreditStream stream = streams.get(sessionId);
    if (stream != null && forget(stream)) {
      stream.end(Status.NOT_FOUND.withDescription("spillway: session " + sessionId
          + " was idle past the server's timeout and is gone; start again under a new id"));
    }
  }

  /** Sessions with an open credit stream. */
  public int subscribers() {
    return streams.size();
  }

  /** Ends every credit stream ({@code UNAVAILABLE}); later subscriptions are refused. */
  @Override
  public void close() {
    closed = true;
    for (CreditStream stream : streams.values()) {
      if (forget(stream)) {
        stream.end(Status.UNAVAILABLE.withDescription("spillway: server shutting down"));
      }
    }
  }

  private ServerGate gate() {
    ServerGate g = gate;
    if (g == null) {
      throw new IllegalStateException("no gate bound to the spillway control service");
    }
    return g;
  }

  private ServerCall.Listener<byte[]> startCredits(ServerCall<byte[], CreditMessage> call,
      Metadata headers) {
    long session = sessionOf(headers);
    if (session == 0 || closed) {
      call.close(session == 0
          ? Status.INVALID_ARGUMENT.withDescription("spillway: Credits needs a spillway-session header")
          : Status.UNAVAILABLE.withDescription("spillway: server shutting down"), new Metadata());
      return new ServerCall.Listener<>() { };
    }
    long origin = SpillwayServerInterceptor.originOf(call);
    CreditStream stream = new CreditStream(session, call, origin);
    CreditStream[] previous = new CreditStream[1];
    Status refused;
    synchronized (stream) {
      // Registered before the headers go: the client starts sending once it has them, and a
      // credit for the session sent before the registration would be dropped, leaving the gate
      // counting a credit the session never got. A credit sent meanwhile waits for the headers.
      Status[] why = new Status[1];
      streams.compute(session, (id, before) -> {
        if (before != null && before.origin != origin) {
          why[0] = anotherConnections(id);
          return before;
        }
        if (before == null && !countStream(origin)) {
          why[0] = Status.RESOURCE_EXHAUSTED.withDescription("spillway: at most "
              + MAX_STREAMS_PER_CONNECTION + " credit streams per connection");
          return null;
        }
        previous[0] = before; // the same connection's earlier stream: this one replaces it
        return stream;
      });
      refused = why[0];
      if (refused == null) {
        call.request(1); // the empty request message
        stream.open();
      }
    }
    if (refused != null) {
      call.close(refused, new Metadata());
      return new ServerCall.Listener<>() { };
    }
    if (previous[0] != null) {
      previous[0].end(Status.ABORTED.withDescription("spillway: superseded by a newer Credits stream"));
    }
    return stream;
  }

  /** Counts a new stream on {@code origin}'s connection; {@code false} if it has its most. */
  private boolean countStream(long origin) {
    boolean[] counted = {false};
    streamsPerConnection.compute(origin, (o, n) -> {
      int open = n == null ? 0 : n;
      if (open >= MAX_STREAMS_PER_CONNECTION) {
        return n;
      }
      counted[0] = true;
      return open + 1;
    });
    return counted[0];
  }

  /** Removes {@code stream} if it is still its session's; returns whether it was. */
  private boolean forget(CreditStream stream) {
    if (!streams.remove(stream.sessionId, stream)) {
      return false;
    }
    streamsPerConnection.computeIfPresent(stream.origin, (o, n) -> n <= 1 ? null : n - 1);
    return true;
  }

  /** The refusal of a control call for a session whose credit stream came on another connection. */
  private static Status anotherConnections(long session) {
    return Status.PERMISSION_DENIED.withDescription(
        "spillway: session " + session + " has its credit stream on another connection");
  }

  /**
   * Whether {@code call} may act on {@code session}: it has no credit stream here, or its stream
   * came on the call's connection.
   */
  private boolean owns(ServerCall<?, ?> call, long session) {
    CreditStream stream = streams.get(session);
    return stream == null || stream.origin == SpillwayServerInterceptor.originOf(call);
  }

  private ServerCallHandler<byte[], byte[]> answer(boolean demand) {
    return (call, headers) -> {
      RequestMetadata fields = new RequestMetadata();
      String problem = SpillwayMetadata.readRequest(headers, fields);
      if (fields.sessionId() == 0) {
        call.close(Status.INVALID_ARGUMENT.withDescription("spillway: "
            + call.getMethodDescriptor().getBareMethodName() + " needs a spillway-session header"
            + (problem == null ? "" : "; " + problem)), new Metadata());
        return new ServerCall.Listener<>() { };
      }
      if (!owns(call, fields.sessionId())) {
        call.close(anotherConnections(fields.sessionId()), new Metadata());
        return new ServerCall.Listener<>() { };
      }
      long now = ticker.read();
      if (demand) {
        gate().onDemand(fields.sessionId(), fields.demand(), now);
      } else {
        gate().deregister(fields.sessionId(), now);
      }
      call.sendHeaders(new Metadata());
      call.sendMessage(ControlMarshallers.EMPTY);
      call.close(Status.OK, new Metadata());
      return new ServerCall.Listener<>() { };
    };
  }

  private static long sessionOf(Metadata headers) {
    String value = headers.get(SpillwayMetadata.SESSION);
    if (value == null) {
      return 0;
    }
    long session = SpillwayMetadata.parseLong(value, Long.MIN_VALUE + 1);
    return session == Long.MIN_VALUE ? 0 : session;
  }

  /**
   * One session's open Credits call. Sends are serialised by the monitor. While the stream is not
   * ready (its client is not reading, or its connection is backed up) credits are added up
   * rather than sent: gRPC would buffer every message for a client that never reads, and deltas
   * sum, so the client loses nothing by hearing their sum once it reads again; of the stamped
   * windows only the newest is kept, which supersedes the others.
   */
  private final class CreditStream extends ServerCall.Listener<byte[]> {
    final long sessionId;
    /** The connection it came on ({@link SpillwayServerInterceptor#originOf}). */
    final long origin;
    private final ServerCall<byte[], CreditMessage> call;
    private boolean ended;
    /** Credits not sent yet, the stream not being ready for them. */
    private long pending;
    /** The newest stamped window not sent yet; {@link #pendingSeq} 0 if none. */
    private int pendingWindow;
    private long pendingSeq;

    CreditStream(long sessionId, ServerCall<byte[], CreditMessage> call, long origin) {
      this.sessionId = sessionId;
      this.call = call;
      this.origin = origin;
    }

    synchronized void open() {
      call.sendHeaders(new Metadata()); // tells the client its credits can now reach it
    }

    synchronized void send(int delta, int window, long seq) {
      if (ended) {
        return;
      }
      pending += delta;
      if (io.spillway.api.ResponseMetadata.isNewerCredit(seq, pendingSeq)) {
        pendingWindow = window;
        pendingSeq = seq;
      }
      flush();
    }

    /** Sends what is pending if the stream is ready; under the monitor. */
    private void flush() {
      try {
        while ((pending != 0 || pendingSeq != 0) && call.isReady()) {
          int next = (int) Math.clamp(pending, Integer.MIN_VALUE, Integer.MAX_VALUE);
          pending -= next;
          // The stamp is the window after all that is pending, so it rides on the last part of a
          // sum beyond an int: a client that takes its window from it applies no delta after it.
          boolean last = pending == 0;
          call.sendMessage(last ? new CreditMessage(next, pendingWindow, pendingSeq)
              : new CreditMessage(next, 0, 0));
          if (last) {
            pendingSeq = 0;
          }
        }
      } catch (RuntimeException e) { // closed under us: the session is on its way out
        ended = true;
        LOG.log(Level.DEBUG, "credit for session {0} not sent: {1}", sessionId, e.toString());
      }
    }

    @Override
    public synchronized void onReady() {
      if (!ended) {
        flush();
      }
    }

    synchronized void end(Status status) {
      if (!ended) {
        ended = true;
        try {
          call.close(status, new Metadata());
        } catch (RuntimeException alreadyCancelled) {
          // nothing to tell
        }
      }
    }

    @Override
    public void onCancel() {
      synchronized (this) {
        ended = true;
      }
      // The client went away (closed, or its connection broke): like a closed connection in the
      // native transport, the session leaves and its credits return. Not if a newer stream has
      // taken over the session.
      if (forget(this)) {
        ServerGate g = gate;
        if (g != null) {
          g.deregister(sessionId, ticker.read());
        }
      }
    }
  }
}
