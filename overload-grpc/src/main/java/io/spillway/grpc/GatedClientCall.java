package io.spillway.grpc;

import io.grpc.Attributes;
import io.grpc.ClientCall;
import io.grpc.Metadata;
import io.grpc.Status;
import io.spillway.api.InterfaceCall;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;

/**
 * A client call whose start is held in its session's {@link io.spillway.api.ClientGate} until the
 * gate releases it. Until then the application's {@code request}, {@code sendMessage},
 * {@code halfClose} are recorded, and replayed in order on the real call once it has started;
 * after that they pass straight through. A call released at once (the common case when credit is
 * available) starts inside {@link #start}, so nothing is recorded.
 *
 * <p>State changes are guarded by the call's monitor: the application thread, the thread that
 * releases the call (any thread driving the session: a response, a credit, the expiry timer) and
 * a cancellation may race. The real call is driven by one thread at a time, as gRPC requires.
 */
final class GatedClientCall<ReqT, RespT> extends ClientCall<ReqT, RespT>
    implements InterfaceCall, io.grpc.Context.CancellationListener {

  private static final int NEW = 0;
  private static final int QUEUED = 1;
  private static final int STARTED = 2;
  private static final int ENDED = 3; // failed or cancelled before it was started

  /**
   * Where a call the session ends (expired, refused, session closed) hears it when its options
   * name no executor: a virtual thread of its own. The session notices from whichever thread
   * drives it, by default the process's one timer thread, which serves every session; a listener
   * that blocks in {@code onClose} there would hold back every other session's expiries.
   */
  private static final java.util.concurrent.ThreadFactory CLOSERS =
      Thread.ofVirtual().name("spillway-grpc-close").factory();

  private final SpillwayClientInterceptor session;
  private final ClientCall<ReqT, RespT> delegate;
  private final Executor callExecutor;
  private final io.grpc.Deadline deadline;
  private final int interfaceId;
  private Listener<RespT> listener;
  private Metadata headers;
  /** When the call left the client; written under the session's lock before the call starts. */
  long sentAt;
  /** {@link #heldUntil}: no deadline ends the call while its session holds it. */
  static final long NOT_HELD = Long.MIN_VALUE;
  /**
   * While the session holds it for its credit stream: its deadline on the session's ticker, or
   * {@link #NOT_HELD}. Under the session's lock.
   */
  long heldUntil = NOT_HELD;
  /** The session's gate that released it (a renewed session's calls bring it no credit). */
  Object releasedBy;
  private int state;
  private List<Runnable> pending;
  private volatile boolean passThrough;
  /**
   * The caller's gRPC context while the call waits in its session, watched for cancellation: gRPC
   * watches a call's context only once the call has started, and a queued call has not. A caller
   * that gave up (its own call cancelled, which gRPC turns into a cancelled context) would otherwise
   * leave the call counted in the session's demand until a credit or its expiry came.
   */
  private io.grpc.Context watched;

  GatedClientCall(SpillwayClientInterceptor session, ClientCall<ReqT, RespT> delegate,
      io.grpc.CallOptions options, int interfaceId) {
    this.session = session;
    this.delegate = delegate;
    this.callExecutor = options.getExecutor();
    this.deadline = options.getDeadline();
    this.interfaceId = interfaceId;
  }

  /** Its call options' deadline, or {@code null}. */
  io.grpc.Deadline deadline() {
    return deadline;
  }

  @Override
  public int interfaceId() {
    return interfaceId;
  }

  /** The outgoing headers, for the session to add the gate's fields to. Under the session's lock. */
  Metadata headers() {
    return headers;
  }

  @Override
  public void start(Listener<RespT> responseListener, Metadata requestHeaders) {
    boolean cancelledBeforeStart;
    synchronized (this) {
      if (state != NEW && !(state == ENDED && listener == null)) {
        throw new IllegalStateException("call already started");
      }
      listener = responseListener;
      headers = requestHeaders;
      cancelledBeforeStart = state == ENDED;
      if (!cancelledBeforeStart) {
        state = QUEUED;
      }
    }
    if (cancelledBeforeStart) { // never sent, never seen by the gate
      deliverClose(Status.CANCELLED.withDescription("call cancelled before start"));
      return;
    }
    session.offer(this);
    watchCaller();
  }

  /** While the call is queued, ends it when its caller's context is cancelled. */
  private void watchCaller() {
    if (passThrough) {
      return; // released and started inside offer, the common case: no lock taken
    }
    io.grpc.Context context = io.grpc.Context.current();
    synchronized (this) {
      if (state != QUEUED) {
        return; // released at once, the common case: gRPC's own call watches the context now
      }
      watched = context;
    }
    context.addListener(this, Runnable::run); // at once if already cancelled
    synchronized (this) {
      if (watched == context) {
        return;
      }
    }
    context.removeListener(this); // released meanwhile, before the listener was added
  }

  /** Stops watching the caller's context: the call left the queue. */
  private void unwatchCaller() {
    io.grpc.Context context;
    synchronized (this) {
      context = watched;
      watched = null;
    }
    if (context != null) {
      context.removeListener(this);
    }
  }

  /**
   * Starts the real call, unless the application cancelled it meanwhile. Called by the session,
   * outside its lock.
   *
   * @return {@code false} if the call was not started (it had ended); the session must then
   *     account for it as never sent
   */
  boolean release() {
    synchronized (this) {
      if (state != QUEUED) {
        return false;
      }
      state = STARTED;
    }
    unwatchCaller();
    delegate.start(new ResponseListener(), headers);
    replay();
    return true;
  }

  /**
   * Ends a queued call that will never be sent (expired, refused, session closed), never on the
   * calling thread: on the call's executor, or else on a thread of its own ({@link #CLOSERS}).
   */
  void failQueued(Status status) {
    synchronized (this) {
      if (state != QUEUED) {
        return;
      }
      state = ENDED;
    }
    unwatchCaller();
    deliverClose(status, close -> CLOSERS.newThread(close).start());
  }

  /** Tells the application its call ended, on its thread (it cancelled) or its executor. */
  private void deliverClose(Status status) {
    deliverClose(status, Runnable::run);
  }

  /** Tells the application its call ended: on its executor, or else through {@code otherwise}. */
  private void deliverClose(Status status, Executor otherwise) {
    Listener<RespT> l = listener;
    if (l == null) {
      return;
    }
    Runnable close = () -> l.onClose(status, new Metadata());
    if (callExecutor != null) {
      callExecutor.execute(close); // e.g. a blocking stub's own executor
    } else {
      otherwise.execute(close);
    }
  }

  private void replay() {
    while (true) {
      List<Runnable> ops;
      synchronized (this) {
        if (pending == null || pending.isEmpty()) {
          pending = null;
          passThrough = true;
          return;
        }
        ops = pending;
        pending = null;
      }
      for (Runnable op : ops) {
        op.run();
      }
    }
  }

  private void whenStarted(Runnable op) {
    if (!passThrough) {
      synchronized (this) {
        if (!passThrough) {
          if (state == ENDED) {
            return;
          }
          if (pending == null) {
            pending = new ArrayList<>(4);
          }
          pending.add(op);
          return;
        }
      }
    }
    op.run();
  }

  @Override
  public void request(int numMessages) {
    if (passThrough) {
      delegate.request(numMessages);
    } else {
      whenStarted(() -> delegate.request(numMessages));
    }
  }

  @Override
  public void sendMessage(ReqT message) {
    if (passThrough) {
      delegate.sendMessage(message);
    } else {
      whenStarted(() -> delegate.sendMessage(message));
    }
  }

  @Override
  public void halfClose() {
    if (passThrough) {
      delegate.halfClose();
    } else {
      whenStarted(delegate::halfClose);
    }
  }

  @Override
  public void setMessageCompression(boolean enabled) {
    if (passThrough) {
      delegate.setMessageCompression(enabled);
    } else {
      whenStarted(() -> delegate.setMessageCompression(enabled));
    }
  }

  @Override
  public boolean isReady() {
    return passThrough && delegate.isReady();
  }

  @Override
  public Attributes getAttributes() {
    return delegate.getAttributes();
  }

  /**
   * Ends the call with {@code status} if the session has not sent it yet; a call already sent is
   * left to finish, so that its answer still brings the session its credits. The gate is told the
   * call was never sent when it reaches the head of the queue.
   */
  void cancelIfQueued(Status status) {
    synchronized (this) {
      if (state != NEW && state != QUEUED) {
        return;
      }
      state = ENDED;
    }
    unwatchCaller();
    deliverClose(status);
  }

  @Override
  public void cancel(String message, Throwable cause) {
    Status status = Status.CANCELLED;
    status = message != null ? status.withDescription(message) : status.withDescription("call cancelled");
    if (withdrawQueued(cause != null ? status.withCause(cause) : status, Runnable::run)) {
      return;
    }
    if (passThrough) {
      delegate.cancel(message, cause);
    } else {
      whenStarted(() -> delegate.cancel(message, cause));
    }
  }

  /**
   * The caller's context was cancelled while the call was queued ({@link #watchCaller}); the call
   * is its own listener, so watching costs a queued call no allocation.
   */
  @Override
  public void cancelled(io.grpc.Context context) {
    Throwable cause = context.cancellationCause();
    Status status = cause instanceof java.util.concurrent.TimeoutException
        ? Status.DEADLINE_EXCEEDED.withDescription("the caller's deadline passed while queued")
        : Status.CANCELLED.withDescription("the caller's context was cancelled while queued");
    // on a thread of its own: the one cancelling the context may be gRPC's, and must not run the
    // application's listener
    withdrawQueued(status.withCause(cause), close -> CLOSERS.newThread(close).start());
  }

  /**
   * Ends the call with {@code status} if the session has not sent it: it leaves the queue (and the
   * demand) at once; its close is delivered through {@code otherwise} unless the call names an
   * executor. Returns whether it ended the call.
   */
  private boolean withdrawQueued(Status status, Executor otherwise) {
    synchronized (this) {
      if (state != NEW && state != QUEUED) {
        return false;
      }
      state = ENDED; // a call the gate cannot withdraw is skipped when polled or expired
    }
    unwatchCaller();
    session.withdraw(this); // not queued, not counted in the demand, from now
    deliverClose(status, otherwise);
    return true;
  }

  @Override
  public String toString() {
    return "GatedClientCall[interface=" + interfaceId + ", " + delegate + "]";
  }

  /** Feeds the answer back to the session, then hands it to the application. */
  private final class ResponseListener extends Listener<RespT> {
    @Override
    public void onHeaders(Metadata responseHeaders) {
      listener.onHeaders(responseHeaders);
    }

    @Override
    public void onMessage(RespT message) {
      listener.onMessage(message);
    }

    @Override
    public void onReady() {
      listener.onReady();
    }

    @Override
    public void onClose(Status status, Metadata trailers) {
      session.answeredBy(delegate.getAttributes());
      Runnable next = session.onResponse(GatedClientCall.this, status, trailers);
      try {
        listener.onClose(status, trailers);
      } finally {
        if (next != null) {
          next.run(); // start what the answer released
        }
      }
    }
  }
}
