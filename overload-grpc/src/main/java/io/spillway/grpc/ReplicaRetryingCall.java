package io.spillway.grpc;

import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ForwardingClientCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.spillway.api.RetryBudget;

/**
 * A unary call that may be sent a second time, to another backend, after a fast reject: retry to
 * a replica (protego-nsdi23 §5.3), never more than once, never after anything but a fast reject
 * (a {@code RESOURCE_EXHAUSTED} whose Spillway status says the server shed the call, {@link
 * RetryBudget#isRetryable}, answered before any response message), and only with a token from the
 * caller's retry budget. A call whose handler ran and answered {@code RESOURCE_EXHAUSTED} itself
 * carries the status {@code FAILED}: it may have had its effects, and is not sent again. It keeps
 * the request (one message) until the call ends; the application's listener hears only the
 * attempt that counts.
 * Used by {@link SpillwayBalancedChannel} and {@link PerBackendSessions}, which pick the backends.
 *
 * @param <B> the callers' backend type
 */
final class ReplicaRetryingCall<ReqT, RespT, B> extends ClientCall<ReqT, RespT> {

  /** What a retrying call needs from its channel. */
  interface Backends<B> {
    /** A backend other than {@code avoid} that can take the call now; {@code null} if none. */
    B other(B avoid);

    /** A call of {@code method} to {@code backend}. */
    <ReqT, RespT> ClientCall<ReqT, RespT> newCall(B backend, MethodDescriptor<ReqT, RespT> method,
        CallOptions options);

    /** Takes a token from the retry budget; whether a retry may be sent. */
    boolean tryRetry();

    /** A retry was sent. */
    void retried();
  }

  private final Backends<B> backends;
  private final MethodDescriptor<ReqT, RespT> method;
  private final CallOptions options;
  private final B firstBackend;
  // Volatile, as is cancelled: retry() writes attempt then reads cancelled, cancel() writes
  // cancelled then reads attempt, so one of the two sees the other and the retry is cancelled
  // (at worst twice, which gRPC ignores) instead of running after the application cancelled.
  private volatile ClientCall<ReqT, RespT> attempt;
  private Listener<RespT> listener;
  private Metadata headers;
  private ReqT message;
  private int requested;
  private boolean halfClosed;
  private volatile boolean cancelled;
  /** Where to retry a reject that came before the application half-closed, once it has. */
  private B retryEarlyOn;

  ReplicaRetryingCall(Backends<B> backends, MethodDescriptor<ReqT, RespT> method,
      CallOptions options, B firstBackend) {
    this.backends = backends;
    this.method = method;
    this.options = options;
    this.firstBackend = firstBackend;
  }

  @Override
  public void start(Listener<RespT> responseListener, Metadata requestHeaders) {
    listener = responseListener;
    headers = new Metadata();
    headers.merge(requestHeaders);
    attempt = backends.newCall(firstBackend, method, options);
    attempt.start(new AttemptListener(firstBackend, true), requestHeaders);
  }

  @Override
  public void request(int numMessages) {
    requested += numMessages;
    attempt.request(numMessages);
  }

  @Override
  public void cancel(String why, Throwable cause) {
    boolean deliver;
    synchronized (this) {
      cancelled = true;
      deliver = retryEarlyOn != null;
      retryEarlyOn = null;
    }
    if (deliver) {
      listener.onClose(Status.CANCELLED.withDescription(why).withCause(cause), new Metadata());
      return;
    }
    attempt.cancel(why, cause);
  }

  @Override
  public void halfClose() {
    B retryOn;
    synchronized (this) {
      halfClosed = true;
      retryOn = retryEarlyOn;
      retryEarlyOn = null;
    }
    if (retryOn != null) {
      retry(retryOn);
      return;
    }
    attempt.halfClose();
  }

  @Override
  public void sendMessage(ReqT value) {
    message = value;
    attempt.sendMessage(value);
  }

  @Override
  public boolean isReady() {
    return attempt.isReady();
  }

  /** The second attempt, on backend {@code to}, replaying what the application sent. */
  private void retry(B to) {
    backends.retried();
    ClientCall<ReqT, RespT> second = backends.newCall(to, method, options);
    attempt = second;
    second.start(new AttemptListener(null, false), headers);
    if (requested > 0) {
      second.request(requested);
    }
    if (message != null) {
      second.sendMessage(message);
    }
    if (halfClosed) {
      second.halfClose();
    }
    if (cancelled) {
      second.cancel("cancelled before the retry", null);
    }
  }

  /** Whether {@code trailers} carry a Spillway status of a call the server shed, unrun. */
  static boolean shed(Metadata trailers) {
    String value = trailers.get(SpillwayMetadata.STATUS);
    io.spillway.api.Status status = value == null ? null : SpillwayMetadata.statusOf(value);
    return status != null && RetryBudget.isRetryable(status, 0);
  }

  private final class AttemptListener extends ForwardingClientCallListener<RespT> {
    private final B backend;
    private final boolean mayRetry;
    private boolean heard;

    AttemptListener(B backend, boolean mayRetry) {
      this.backend = backend;
      this.mayRetry = mayRetry;
    }

    @Override
    protected Listener<RespT> delegate() {
      return listener;
    }

    @Override
    public void onHeaders(Metadata h) {
      heard = true;
      super.onHeaders(h);
    }

    @Override
    public void onMessage(RespT m) {
      heard = true;
      super.onMessage(m);
    }

    @Override
    public void onClose(Status status, Metadata trailers) {
      B to;
      if (mayRetry && !heard && !cancelled
          && status.getCode() == Status.Code.RESOURCE_EXHAUSTED && shed(trailers)
          && (to = backends.other(backend)) != null && backends.tryRetry()) {
        boolean now;
        boolean gone;
        synchronized (ReplicaRetryingCall.this) {
          // cancel() reads retryEarlyOn under this lock: a cancel that came after the look at
          // cancelled above would find none kept, and the call would never end
          gone = cancelled;
          now = halfClosed;
          if (!now && !gone) {
            retryEarlyOn = to; // rejected on its headers: retry once the request is whole
          }
        }
        if (!gone) {
          if (now) {
            retry(to);
          }
          return;
        }
      }
      super.onClose(status, trailers);
    }
  }
}
