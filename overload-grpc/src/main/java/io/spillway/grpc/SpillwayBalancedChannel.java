package io.spillway.grpc;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptors;
import io.grpc.ForwardingClientCallListener;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.spillway.api.OverloadScheme;
import io.spillway.api.RetryBudget;
import io.spillway.api.Scheduler;
import io.spillway.api.Ticker;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.IntUnaryOperator;

/**
 * A channel that balances over several backends and keeps one Spillway session, with its own
 * credit account and control stream, per backend (docs/design.md, "A request's path on a
 * client": credits are per client session and per backend). A call is assigned to a backend
 * first and then waits in that backend's session only, so one server's credits never release
 * calls bound for another; a channel that balanced after the session (an interceptor on a
 * {@code round_robin} channel) would feed N servers' credit deltas into one window and open one
 * control stream to whichever server it reached first.
 *
 * <p>Assignment ({@link Policy}): {@code ROUND_ROBIN} takes, from a rotating start, the backend
 * whose session has the fewest calls queued (so a slower backend, which grants fewer credits, is
 * given fewer calls once its queue builds); {@code PICK_FIRST} uses the first backend and moves to
 * the next only while the first is shedding. Backends are the addresses a target resolves to
 * ({@code dns:///host:port} resolves every address of the host once, at build) or a list.
 *
 * <p>Retry to a replica (protego-nsdi23 §5.3): a unary call that one backend rejects fast (a
 * {@code RESOURCE_EXHAUSTED} carrying a Spillway status, answered before any response message) is
 * sent once more to another backend, if the retry budget allows ({@link RetryBudget}: each call adds
 * {@code retryShare} of a token, at most 10 are kept, each retry spends one, so retries stay below
 * {@code retryShare} of calls over any long stretch, as gRPC's retry throttling bounds them, gRFC
 * A6). Never more than one retry, never after anything but a fast reject. Off unless
 * {@link Builder#retryToReplica} is set.
 *
 * <p>Thread-safe. {@link #close()} ends every session and shuts the backends' channels down.
 */
public final class SpillwayBalancedChannel extends Channel implements AutoCloseable {

  /** How calls are assigned to backends. */
  public enum Policy { ROUND_ROBIN, PICK_FIRST }

  private final List<Backend> backends;
  private final Policy policy;
  private final double retryShare;
  private final AtomicInteger next = new AtomicInteger();
  private final IntUnaryOperator picker;
  private final RetryBudget retryBudget; // null when retries are off
  private final AtomicInteger retries = new AtomicInteger();
  private final AtomicInteger calls = new AtomicInteger();

  /** One backend: its channel and its session. */
  record Backend(String name, ManagedChannel channel, SpillwayClientInterceptor session,
      Channel intercepted) { }

  private SpillwayBalancedChannel(List<Backend> backends, Policy policy, double retryShare,
      IntUnaryOperator picker) {
    this.backends = List.copyOf(backends);
    this.policy = policy;
    this.retryShare = retryShare;
    this.retryBudget = retryShare > 0 ? RetryBudget.of(retryShare) : null;
    this.picker = picker;
  }

  /** A builder; see {@link SpillwayGrpc#balanced}. */
  public static Builder builder(OverloadScheme scheme) {
    return new Builder(scheme);
  }

  /** The sessions, one per backend, in backend order. */
  public List<SpillwayClientInterceptor> sessions() {
    return backends.stream().map(Backend::session).toList();
  }

  /** Calls retried on another backend so far. */
  public int retries() {
    return retries.get();
  }

  /** Calls made through this channel so far (retries not counted). */
  public int calls() {
    return calls.get();
  }

  @Override
  public String authority() {
    return backends.get(0).channel().authority();
  }

  @Override
  public <ReqT, RespT> ClientCall<ReqT, RespT> newCall(MethodDescriptor<ReqT, RespT> method,
      CallOptions options) {
    calls.incrementAndGet();
    int first = pick(-1);
    if (retryShare <= 0 || backends.size() < 2 || method.getType() != MethodDescriptor.MethodType.UNARY) {
      return backends.get(first).intercepted().newCall(method, options);
    }
    retryBudget.onCall();
    return new RetryingCall<>(method, options, first);
  }

  /** The backend for a call; {@code avoid} is one not to use (the one that just rejected it). */
  int pick(int avoid) {
    if (picker != null) {
      return picker.applyAsInt(avoid);
    }
    int n = backends.size();
    if (policy == Policy.PICK_FIRST) {
      for (int i = 0; i < n; i++) {
        if (i != avoid) {
          return i;
        }
      }
      return 0;
    }
    int start = Math.floorMod(next.getAndIncrement(), n);
    int best = -1;
    long bestScore = Long.MAX_VALUE;
    for (int k = 0; k < n; k++) {
      int i = (start + k) % n;
      if (i == avoid) {
        continue;
      }
      Backend b = backends.get(i);
      // As round_robin does, calls go to backends that are connected while any is: one that is
      // down (its connection failed, or it closed) would fail its share of them. A backend not
      // connected yet is asked to connect, and is taken only if none is connected.
      long score = b.session().queued() + healthPenalty(b.channel().getState(true));
      if (score < bestScore) {
        best = i;
        bestScore = score;
        if (score == 0) {
          break;
        }
      }
    }
    return best < 0 ? start : best;
  }

  /** Ranks a backend's connection below any connected backend's queue: ready, connecting, down. */
  private static long healthPenalty(io.grpc.ConnectivityState state) {
    return switch (state) {
      case READY -> 0;
      case IDLE, CONNECTING -> 1L << 32;
      case TRANSIENT_FAILURE, SHUTDOWN -> 1L << 33;
    };
  }

  private boolean takeRetryToken() {
    return retryBudget.tryRetry();
  }

  @Override
  public void close() {
    for (Backend b : backends) {
      b.session().close();
    }
    for (Backend b : backends) {
      b.channel().shutdown();
    }
    for (Backend b : backends) {
      try {
        if (!b.channel().awaitTermination(5, TimeUnit.SECONDS)) {
          b.channel().shutdownNow();
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        b.channel().shutdownNow();
      }
    }
  }

  /**
   * A unary call that may be sent a second time, to another backend, after a fast reject. It
   * keeps the request (one message) until the call ends; the application's listener hears only
   * the attempt that counts.
   */
  private final class RetryingCall<ReqT, RespT> extends ClientCall<ReqT, RespT> {
    private final MethodDescriptor<ReqT, RespT> method;
    private final CallOptions options;
    private final int firstBackend;
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
    /** A reject that came before the application half-closed: retried once it has. */
    private int rejectedEarlyBy = -1;

    RetryingCall(MethodDescriptor<ReqT, RespT> method, CallOptions options, int firstBackend) {
      this.method = method;
      this.options = options;
      this.firstBackend = firstBackend;
    }

    @Override
    public void start(Listener<RespT> responseListener, Metadata requestHeaders) {
      listener = responseListener;
      headers = new Metadata();
      headers.merge(requestHeaders);
      attempt = backends.get(firstBackend).intercepted().newCall(method, options);
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
        deliver = rejectedEarlyBy >= 0;
        rejectedEarlyBy = -1;
      }
      if (deliver) {
        listener.onClose(Status.CANCELLED.withDescription(why).withCause(cause), new Metadata());
        return;
      }
      attempt.cancel(why, cause);
    }

    @Override
    public void halfClose() {
      int retryOn;
      synchronized (this) {
        halfClosed = true;
        retryOn = rejectedEarlyBy;
        rejectedEarlyBy = -1;
      }
      if (retryOn >= 0) {
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

    /** The second attempt, on another backend, replaying what the application sent. */
    private void retry(int rejectedBy) {
      retries.incrementAndGet();
      ClientCall<ReqT, RespT> second = backends.get(pick(rejectedBy)).intercepted()
          .newCall(method, options);
      attempt = second;
      second.start(new AttemptListener(-1, false), headers);
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

    private final class AttemptListener extends ForwardingClientCallListener<RespT> {
      private final int backend;
      private final boolean mayRetry;
      private boolean heard;

      AttemptListener(int backend, boolean mayRetry) {
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
        if (mayRetry && !heard && !cancelled
            && status.getCode() == Status.Code.RESOURCE_EXHAUSTED
            && trailers.containsKey(SpillwayMetadata.STATUS) && takeRetryToken()) {
          boolean now;
          synchronized (RetryingCall.this) {
            now = halfClosed;
            if (!now) {
              rejectedEarlyBy = backend; // rejected on its headers: retry once the request is whole
            }
          }
          if (now) {
            retry(backend);
          }
          return;
        }
        super.onClose(status, trailers);
      }
    }
  }

  /** Configures a {@link SpillwayBalancedChannel}. Not thread-safe. */
  public static final class Builder {
    private final OverloadScheme scheme;
    private long sloNanos;
    private final List<InetSocketAddress> addresses = new ArrayList<>();
    private Function<InetSocketAddress, ManagedChannel> channels = a ->
        io.grpc.ManagedChannelBuilder.forAddress(a.getHostString(), a.getPort()).usePlaintext()
            .build();
    private Policy policy = Policy.ROUND_ROBIN;
    private double retryShare;
    private Ticker ticker;
    private Scheduler scheduler;
    private IntUnaryOperator picker;

    private Builder(OverloadScheme scheme) {
      this.scheme = scheme;
    }

    /** The SLO of the calls (required). */
    public Builder slo(Duration value) {
      sloNanos = value.toNanos();
      return this;
    }

    /**
     * The backends a target names: {@code dns:///host:port} or {@code host:port} (every address
     * the host resolves to, once, now), or {@code host1:port1,host2:port2}.
     *
     * @throws IllegalArgumentException if the target is malformed or its host does not resolve
     */
    public Builder target(String target) {
      String t = target.startsWith("dns:///") ? target.substring(7) : target;
      for (String part : t.split(",")) {
        URI uri = URI.create("//" + part.strip());
        if (uri.getHost() == null || uri.getPort() < 0) {
          throw new IllegalArgumentException("not host:port: " + part + " in " + target);
        }
        try {
          for (InetAddress a : InetAddress.getAllByName(uri.getHost())) {
            addresses.add(new InetSocketAddress(a, uri.getPort()));
          }
        } catch (UnknownHostException e) {
          throw new IllegalArgumentException("cannot resolve " + uri.getHost() + " in " + target, e);
        }
      }
      return this;
    }

    /** The backends' addresses. */
    public Builder addresses(List<InetSocketAddress> value) {
      addresses.addAll(value);
      return this;
    }

    /** Makes each backend's channel; plaintext to the address by default. */
    public Builder channelFactory(Function<InetSocketAddress, ManagedChannel> value) {
      channels = Objects.requireNonNull(value, "channelFactory");
      return this;
    }

    /** {@link Policy#ROUND_ROBIN} by default. */
    public Builder policy(Policy value) {
      policy = Objects.requireNonNull(value, "policy");
      return this;
    }

    /**
     * Retry a fast-rejected unary call once on another backend, at most {@code share} of calls
     * (for example 0.1); off by default.
     */
    public Builder retryToReplica(double share) {
      if (!(share > 0 && share <= 1)) {
        throw new IllegalArgumentException("share must be in (0, 1]: " + share);
      }
      retryShare = share;
      return this;
    }

    /** The sessions' clock; {@link Ticker#system()} by default. */
    public Builder ticker(Ticker value) {
      ticker = Objects.requireNonNull(value, "ticker");
      return this;
    }

    /** The sessions' scheduler; the shared timer by default. */
    public Builder scheduler(Scheduler value) {
      scheduler = Objects.requireNonNull(value, "scheduler");
      return this;
    }

    /** Tests: chooses the backend instead of the policy (argument: the backend to avoid, or -1). */
    Builder picker(IntUnaryOperator value) {
      picker = value;
      return this;
    }

    /** Tests: backends given as channels already made. */
    SpillwayBalancedChannel build(List<ManagedChannel> made) {
      List<Backend> list = new ArrayList<>();
      for (ManagedChannel ch : made) {
        list.add(backend(ch.authority(), ch));
      }
      return new SpillwayBalancedChannel(list, policy, retryShare, picker);
    }

    /** @throws IllegalStateException if no SLO or no backend was given */
    public SpillwayBalancedChannel build() {
      if (addresses.isEmpty()) {
        throw new IllegalStateException("no backends: target(...) or addresses(...)");
      }
      List<Backend> list = new ArrayList<>();
      for (InetSocketAddress a : addresses) {
        list.add(backend(a.toString(), channels.apply(a)));
      }
      return new SpillwayBalancedChannel(list, policy, retryShare, picker);
    }

    private Backend backend(String name, ManagedChannel ch) {
      if (sloNanos <= 0) {
        throw new IllegalStateException("the channel needs an SLO: slo(Duration)");
      }
      SpillwayClientInterceptor.Builder b = scheme == null ? SpillwayClientInterceptor.builder()
          : SpillwayClientInterceptor.builder(scheme);
      b.sloNanos(sloNanos);
      if (ticker != null) {
        b.ticker(ticker);
      }
      if (scheduler != null) {
        b.scheduler(scheduler);
      }
      SpillwayClientInterceptor session = b.build();
      return new Backend(name, ch, session, ClientInterceptors.intercept(ch, session));
    }
  }
}
