package io.spillway.grpc;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ConnectivityState;
import io.grpc.Context;
import io.grpc.Deadline;
import io.grpc.EquivalentAddressGroup;
import io.grpc.LoadBalancerRegistry;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.NameResolver;
import io.grpc.Status;
import io.spillway.api.Cancellable;
import io.spillway.api.OverloadScheme;
import io.spillway.api.RetryBudget;
import io.spillway.api.Scheduler;
import io.spillway.api.Ticker;
import java.lang.System.Logger.Level;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * Spillway sessions for a {@link ManagedChannel} that balances over several backends: one session,
 * with its own credit account and credit stream, per backend the channel's name resolution gives
 * (docs/design.md, "A request's path on a client": credits are per client session and per
 * backend). A single {@link SpillwayClientInterceptor} on such a channel would be one session for
 * all of them: N servers' credit deltas would feed one window, the credit stream would reach one
 * server, and one server's credits would release calls that the load balancer then sends to
 * another.
 *
 * <pre>{@code
 * ManagedChannelBuilder<?> builder = ManagedChannelBuilder.forTarget("dns:///search:8080").usePlaintext();
 * PerBackendSessions sessions = SpillwayGrpc.perBackend().slo(Duration.ofMillis(5)).build().install(builder);
 * ManagedChannel channel = sessions.closeOnShutdown(builder.build());
 * }</pre>
 *
 * <p>{@link #install} sets the channel's load-balancing policy to {@code spillway_per_backend}
 * ({@link PerBackendLoadBalancerProvider}) and adds this interceptor. A unary call is assigned to a
 * backend first, as {@link SpillwayBalancedChannel} assigns it (the ready backend whose session has
 * the fewest calls queued, from a rotating start), waits in that backend's session, and is then
 * sent to that backend's subchannel. Backends follow the channel's name resolution; one that
 * leaves takes no new call and its session closes once nothing waits in it. Streaming calls go as
 * plain calls through a backend's session, as {@link SpillwayClientInterceptor} sends them. With
 * {@link Builder#retryToReplica}, a unary call that its backend refuses fast is sent once to
 * another, within a retry budget (protego-nsdi23 §5.3; {@link SpillwayBalancedChannel}'s policy).
 *
 * <p>{@link #install} also hands these sessions to the channel's balancer (a name-resolver
 * argument, which gRPC passes to the balancer it makes), so a call made while no backend is ready
 * (the channel's first, one made while it reconnects, or after it idled) waits for a backend
 * instead of going out without a session: it is held, as gRPC holds a call while its channel
 * connects, until a backend turns ready, and then waits in that backend's session like any
 * other. A held call whose deadline passes, or one made or held while every backend is failing,
 * goes as a plain call, so gRPC fails it or waits as it would have (wait-for-ready). An idle
 * channel is woken with a call the balancer drops before it is sent (interceptors added to the
 * builder before {@code install} see it: a call to {@code spillway.PerBackendSessions/Wake} that
 * ends UNAVAILABLE, {@code "spillway: woke the channel's balancer"}). If the channel runs another
 * policy (a service config that names one overrides the default {@code install} sets), the first
 * calls are held for up to the SLO, and every call after goes plain; that is logged once at
 * WARNING. (The wake-up call then reaches the server: one call to the method {@code
 * spillway.PerBackendSessions/Wake}, which it answers as unknown.)
 *
 * <p>Thread-safe. Use one per channel. Close it, or hand it the built channel
 * ({@link #closeOnShutdown}): a channel's graceful shutdown waits for its open calls, the
 * sessions' credit streams among them.
 */
public final class PerBackendSessions implements ClientInterceptor, AutoCloseable {

  private static final System.Logger LOG = System.getLogger(PerBackendSessions.class.getName());
  /** Calls without a balancer after which the channel is taken to run another policy. */
  private static final int PLAIN_CALLS_BEFORE_WARNING = 1_000;

  /**
   * The sessions a call went through, so the channel's balancer can find them, and the backend it
   * waited for ({@code null} for a plain call), read by the balancer's picker. One option, so a
   * call's options are copied once.
   */
  static final CallOptions.Key<Route> ROUTE = CallOptions.Key.create("spillway-route");

  /**
   * A call's {@link #ROUTE}: the backend it waited for ({@code null} for a plain call); {@code
   * wake} for the call that only wakes an idle channel's balancer, which drops it unsent.
   */
  record Route(PerBackendSessions sessions, EquivalentAddressGroup backend, boolean wake) { }

  /**
   * The name-resolver argument under which {@link #install} hands these sessions to the channel's
   * balancer, so that it knows them from its making, before any call.
   */
  static final NameResolver.Args.Key<PerBackendSessions> SESSIONS =
      NameResolver.Args.Key.create("spillway-per-backend-sessions");

  /** The method of the call that wakes an idle channel; never sent under this policy. */
  static final String WAKE_METHOD = "spillway.PerBackendSessions/Wake";
  /** The status description with which the balancer drops a wake-up call. */
  static final String WAKE_DROPPED = "spillway: woke the channel's balancer";
  private static final MethodDescriptor<byte[], byte[]> WAKE =
      MethodDescriptor.<byte[], byte[]>newBuilder().setType(MethodDescriptor.MethodType.UNARY)
          .setFullMethodName(WAKE_METHOD).setRequestMarshaller(ControlMarshallers.BYTES)
          .setResponseMarshaller(ControlMarshallers.BYTES).build();

  /** The route of plain calls. */
  private final Route plainRoute = new Route(this, null, false);
  private final Route wakeRoute = new Route(this, null, true);

  static {
    LoadBalancerRegistry registry = LoadBalancerRegistry.getDefaultRegistry();
    if (registry.getProvider(PerBackendLoadBalancerProvider.POLICY) == null) {
      registry.register(new PerBackendLoadBalancerProvider());
    }
  }

  /** A backend as the channel's balancer last reported it. */
  record BackendState(EquivalentAddressGroup group, ConnectivityState state) { }

  /** A backend's session and the channel view that sends its calls to that backend. */
  private record Backend(EquivalentAddressGroup group, SpillwayClientInterceptor session,
      Channel routed) { }

  private final Supplier<SpillwayClientInterceptor> newSession;
  private final Scheduler scheduler;
  private final long drainCheckNanos;
  private final Map<EquivalentAddressGroup, Backend> backends = new ConcurrentHashMap<>();
  /** Backends that left the resolution and wait for their sessions' queues to empty. */
  private final Set<EquivalentAddressGroup> draining = ConcurrentHashMap.newKeySet();
  private final AtomicInteger next = new AtomicInteger();
  private final AtomicInteger plainCalls = new AtomicInteger();
  private final RetryBudget retryBudget; // null when retries are off
  private final AtomicInteger retries = new AtomicInteger();
  /** The backends as a retrying call sees them, over the channel of the first call. */
  private volatile ReplicaRetryingCall.Backends<Backend> retrying;
  /** The balancer of the channel, once a call has told it of these sessions. */
  private volatile PerBackendLoadBalancer balancer;
  /** Whether a balancer of this policy ever attached (a channel's balancer is remade after idling). */
  private volatile boolean everAttached;
  /** The backends it reported last, in resolution order; empty while none is attached. */
  private volatile List<BackendState> view = List.of();
  private volatile boolean closed;
  private volatile ManagedChannel watched;
  /** The one session of a channel to a single direct address ({@link #install}). */
  private volatile SpillwayClientInterceptor single;
  /** Whether {@link #install} handed these sessions to the balancer, so calls may be held. */
  private volatile boolean holds;
  /** Whether the channel turned out to run another policy: calls are no longer held. */
  private volatile boolean foreign;
  /** Whether every backend was failing at the balancer's last report. */
  private volatile boolean failing;
  /** Calls held until a backend is ready, oldest first. */
  private final Queue<Waiting<?, ?>> waiting = new ConcurrentLinkedQueue<>();
  private final AtomicBoolean waking = new AtomicBoolean();
  private volatile ClientCall<byte[], byte[]> wakeCall;

  /** Whether calls go to the first ready backend in resolution order ({@link Builder#pickFirst}). */
  private final boolean pickFirst;

  private PerBackendSessions(Supplier<SpillwayClientInterceptor> newSession, Scheduler scheduler,
      long drainCheckNanos, double retryShare, boolean pickFirst) {
    this.pickFirst = pickFirst;
    this.retryBudget = retryShare > 0 ? RetryBudget.of(retryShare) : null;
    this.newSession = newSession;
    this.scheduler = scheduler;
    this.drainCheckNanos = drainCheckNanos;
  }

  /** A builder; see {@link SpillwayGrpc#perBackend()}. */
  static Builder builder(OverloadScheme scheme) {
    return new Builder(scheme);
  }

  /**
   * Sets {@code builder}'s load-balancing policy to {@code spillway_per_backend} and adds these
   * sessions as an interceptor; returns this. The policy replaces the one the builder had, gRPC's
   * default {@code pick_first} included: calls then spread over every resolved backend, each
   * connected. A channel meant to use one backend at a time keeps that with
   * {@link Builder#pickFirst}.
   */
  public PerBackendSessions install(ManagedChannelBuilder<?> builder) {
    try {
      builder.defaultLoadBalancingPolicy(PerBackendLoadBalancerProvider.POLICY);
    } catch (IllegalStateException directAddress) {
      // A builder for one address given directly (forAddress(SocketAddress), in-process by
      // name) takes no policy: its channel has one backend, so one session is exact.
      single = newSession.get();
    }
    if (single == null) {
      try {
        builder.setNameResolverArg(SESSIONS, this);
        holds = true;
      } catch (UnsupportedOperationException notForwarded) {
        // a builder that does not pass arguments on: the balancer meets these sessions through
        // the first call instead, and calls made before that go plain
      }
    }
    builder.intercept(this);
    return this;
  }

  /**
   * The sessions, by the addresses of their backends, in resolution order; for a channel to one
   * address given directly, its one session under an empty list.
   */
  public Map<List<SocketAddress>, SpillwayClientInterceptor> sessions() {
    Map<List<SocketAddress>, SpillwayClientInterceptor> m = new LinkedHashMap<>();
    SpillwayClientInterceptor one = single;
    if (one != null) {
      m.put(List.of(), one); // the channel's one address is not known here
      return m;
    }
    for (BackendState s : view) {
      Backend b = backends.get(s.group());
      if (b != null) {
        m.put(s.group().getAddresses(), b.session());
      }
    }
    return m;
  }

  /** Calls retried on another backend so far. */
  public int retries() {
    return retries.get();
  }

  /** Calls sent without a session so far (before the balancer attached, or without it). */
  public int plainCalls() {
    return plainCalls.get();
  }

  @Override
  public <ReqT, RespT> ClientCall<ReqT, RespT> interceptCall(MethodDescriptor<ReqT, RespT> method,
      CallOptions callOptions, Channel next) {
    SpillwayClientInterceptor one = single;
    if (one != null) {
      return one.interceptCall(method, callOptions, next);
    }
    if (!closed) {
      Backend b = pick(view, next, null);
      if (b != null) {
        return routed(b, method, callOptions, next);
      }
      if (holds && !foreign && !failing) {
        return hold(method, callOptions, next);
      }
    }
    return plain(method, callOptions, next);
  }

  /** {@code method}'s call through backend {@code b}'s session. */
  private <ReqT, RespT> ClientCall<ReqT, RespT> routed(Backend b,
      MethodDescriptor<ReqT, RespT> method, CallOptions callOptions, Channel next) {
    if (retryBudget == null || view.size() < 2
        || method.getType() != MethodDescriptor.MethodType.UNARY) {
      return b.session().interceptCall(method, callOptions, b.routed());
    }
    retryBudget.onCall();
    return new ReplicaRetryingCall<>(retrying(next), method, callOptions, b);
  }

  /** {@code method}'s call without a session: the server admits it as any client's. */
  private <ReqT, RespT> ClientCall<ReqT, RespT> plain(MethodDescriptor<ReqT, RespT> method,
      CallOptions callOptions, Channel next) {
    if (plainCalls.incrementAndGet() == PLAIN_CALLS_BEFORE_WARNING && !everAttached && !closed
        && !foreign) {
      warnForeign(next);
    }
    return next.newCall(method, callOptions.withOption(ROUTE, plainRoute));
  }

  private void warnForeign(Channel next) {
    LOG.log(Level.WARNING, "calls on {0} go without a Spillway session: the channel''s "
        + "load-balancing policy is not {1} (a service config that names a policy overrides "
        + "the default install() sets), so its calls go as plain calls", next.authority(),
        PerBackendLoadBalancerProvider.POLICY);
  }

  // ---- calls held while no backend is ready ----

  /**
   * A held call, and what it needs to be made once a backend is ready: its caller's gRPC context
   * among them, since gRPC takes a call's context deadline and its cancellation from the context
   * current where the call is made ({@code Channel.newCall}), and a held call is made later, on
   * the thread that reports a ready backend.
   */
  private final class Waiting<ReqT, RespT> {
    final MethodDescriptor<ReqT, RespT> method;
    final CallOptions options;
    final Channel next;
    final HeldCall<ReqT, RespT> call;
    final Context context = Context.current();
    /** Ends the hold when the caller's context is cancelled (its deadline included). */
    final Context.CancellationListener onCallerCancelled = cancelled -> {
      if (waiting.remove(this)) {
        release(true); // made in the cancelled context, gRPC ends it unsent, as it would have
      }
    };
    volatile Cancellable timer;

    Waiting(MethodDescriptor<ReqT, RespT> method, CallOptions options, Channel next) {
      this.method = method;
      this.options = options;
      this.next = next;
      this.call = new HeldCall<>(() -> {
        waiting.remove(this);
        release(true); // cancelled while held: a plain call that is never sent ends it
      });
    }

    /**
     * Makes the real call, through a ready backend's session unless {@code plain}; false, and
     * still held, if no backend can take it now.
     */
    boolean release(boolean plain) {
      Backend b = plain || closed ? null : pick(view, next, null);
      if (b == null && !plain && !closed) {
        return false;
      }
      if (!call.claim()) {
        return true;
      }
      Cancellable t = timer;
      if (t != null) {
        t.cancel();
      }
      context.removeListener(onCallerCancelled);
      Context previous = context.attach();
      try {
        call.drain(b != null ? routed(b, method, options, next) : plain(method, options, next));
      } finally {
        context.detach(previous);
      }
      return true;
    }
  }

  private <ReqT, RespT> ClientCall<ReqT, RespT> hold(MethodDescriptor<ReqT, RespT> method,
      CallOptions callOptions, Channel next) {
    Waiting<ReqT, RespT> w = new Waiting<>(method, callOptions, next);
    waiting.add(w);
    Deadline deadline = earlier(callOptions.getDeadline(), Context.current().getDeadline());
    if (deadline != null) {
      w.timer = scheduler.schedule(() -> deadlineReached(w),
          Math.max(0, deadline.timeRemaining(TimeUnit.NANOSECONDS)));
    }
    w.context.addListener(w.onCallerCancelled, Runnable::run); // at once if already cancelled
    if (balancer == null) {
      wake(next);
    }
    // the balancer may have reported a ready backend (or failure, or the sessions closed)
    // between the pick above and the add: the report's release did not see this call
    if (closed || failing || foreign || pickable(view)) {
      releaseWaiting(closed || failing || foreign);
    }
    return w.call;
  }

  private static boolean ready(BackendState s) {
    return s.state() == ConnectivityState.READY;
  }

  /** Whether {@link #pick} finds a backend in {@code list}. */
  private static boolean pickable(List<BackendState> list) {
    return list.stream().anyMatch(PerBackendSessions::ready);
  }

  /** Whether every call goes to one backend ({@link Builder#pickFirst}); read by the balancer. */
  boolean pickFirst() {
    return pickFirst;
  }

  private void releaseWaiting(boolean plain) {
    List<Waiting<?, ?>> still = new java.util.ArrayList<>();
    for (Waiting<?, ?> w; (w = waiting.poll()) != null; ) {
      if (!w.release(plain)) {
        still.add(w);
      }
    }
    if (!still.isEmpty()) {
      waiting.addAll(still);
      // a report that made them pickable between the polls and the add did not see them
      if (pickable(view)) {
        releaseWaiting(false);
      }
    }
  }

  private static Deadline earlier(Deadline a, Deadline b) {
    return a == null ? b : b == null ? a : a.minimum(b);
  }

  /**
   * A held call whose deadline passed goes plain, and gRPC fails it at once, as it fails a call
   * whose deadline passes while it waits for a connection. (A call without one waits as gRPC's
   * own calls wait, until a backend is ready or every backend fails.)
   */
  private void deadlineReached(Waiting<?, ?> w) {
    if (waiting.remove(w)) {
      w.release(true);
    }
  }

  /**
   * One SLO after the channel was woken, if its balancer has never come, the channel runs another
   * policy: nothing more is held. (Spillway's balancer comes as the channel leaves idle, before
   * name resolution.)
   */
  private void noBalancerCame(Channel next) {
    if (!everAttached && !closed) {
      foreign(next);
    }
  }

  private void foreign(Channel next) {
    if (foreign) {
      return;
    }
    foreign = true;
    warnForeign(next);
    ClientCall<byte[], byte[]> wake = wakeCall;
    if (wake != null) {
      wake.cancel("spillway: the channel runs another load-balancing policy", null);
    }
    releaseWaiting(true);
  }

  /**
   * Wakes an idle channel: a call that makes the channel create its balancer, which knows these
   * sessions from its making and drops the call before it is sent. If anything else answers it,
   * another policy took it.
   */
  private void wake(Channel next) {
    if (!waking.compareAndSet(false, true)) {
      return;
    }
    if (!everAttached) {
      scheduler.schedule(() -> noBalancerCame(next), drainCheckNanos);
    }
    // In the root context: the wake-up is the channel's, not the caller's whose call set it off;
    // that caller's deadline or cancellation must not end it, and with it every call held.
    ClientCall<byte[], byte[]> call;
    Context previous = Context.ROOT.attach();
    try {
      call = next.newCall(WAKE, CallOptions.DEFAULT.withOption(ROUTE, wakeRoute));
    } finally {
      Context.ROOT.detach(previous);
    }
    wakeCall = call;
    call.start(new ClientCall.Listener<>() {
      @Override
      public void onClose(Status status, Metadata trailers) {
        wakeCall = null;
        waking.set(false);
        if (WAKE_DROPPED.equals(status.getDescription()) || closed) {
          return;
        }
        if (!everAttached && status.getCode() != Status.Code.UNAVAILABLE
            && status.getCode() != Status.Code.CANCELLED) {
          foreign(next); // answered by a server: another policy sent it
        } else {
          releaseWaiting(true); // the channel is shutting down, or cannot connect
        }
      }
    }, new Metadata());
  }

  private ReplicaRetryingCall.Backends<Backend> retrying(Channel channel) {
    ReplicaRetryingCall.Backends<Backend> r = retrying;
    if (r != null) {
      return r;
    }
    r = new ReplicaRetryingCall.Backends<>() {
      @Override
      public Backend other(Backend avoid) {
        // none ready but the one that refused, or the sessions closed: no retry
        return closed ? null : pick(view, channel, avoid);
      }

      @Override
      public <ReqT, RespT> ClientCall<ReqT, RespT> newCall(Backend backend,
          MethodDescriptor<ReqT, RespT> method, CallOptions options) {
        return backend.session().interceptCall(method, options, backend.routed());
      }

      @Override
      public boolean tryRetry() {
        return retryBudget.tryRetry();
      }

      @Override
      public void retried() {
        retries.incrementAndGet();
      }
    };
    retrying = r;
    return r;
  }

  /**
   * The backend for a call: from a rotating start, the one whose connection is ready and whose
   * session has the fewest calls queued, not {@code avoid} (the one that just refused it);
   * {@code null} while no such backend is connected. With {@link Builder#pickFirst}, the ready
   * one: the balancer then keeps one connection, to the first backend in resolution order that
   * could be reached ({@link PerBackendLoadBalancer}).
   */
  private Backend pick(List<BackendState> list, Channel channel, Backend avoid) {
    int n = list.size();
    if (n == 0) {
      return null;
    }
    if (pickFirst) {
      // the balancer connects in order and keeps one connection; while none is ready, calls wait
      for (BackendState s : list) {
        if (ready(s) && (avoid == null || !avoid.group().equals(s.group()))) {
          return backend(s.group(), channel);
        }
      }
      return null;
    }
    int start = Math.floorMod(next.getAndIncrement(), n);
    Backend best = null;
    int bestQueued = Integer.MAX_VALUE;
    for (int k = 0; k < n; k++) {
      BackendState s = list.get((start + k) % n);
      if (s.state() != ConnectivityState.READY || avoid != null && avoid.group().equals(s.group())) {
        continue;
      }
      Backend b = backend(s.group(), channel);
      int queued = b.session().queued();
      if (queued < bestQueued) {
        best = b;
        bestQueued = queued;
        if (queued == 0) {
          break;
        }
      }
    }
    return best;
  }

  private Backend backend(EquivalentAddressGroup group, Channel channel) {
    Backend b = backends.get(group);
    if (b != null) {
      return b;
    }
    b = backends.computeIfAbsent(group, g -> {
      SpillwayClientInterceptor session = newSession.get();
      ManagedChannel w = watched;
      if (w != null) {
        session.closeOnShutdown(w);
      }
      return new Backend(g, session, new Routed(g, channel));
    });
    if (closed) {
      b.session().close(); // made while close() ran: its sweep of the sessions may have missed it
    }
    return b;
  }

  /** The channel's calls, sent to one backend's subchannel. */
  private final class Routed extends Channel {
    private final Route route;
    private final Channel channel;

    Routed(EquivalentAddressGroup group, Channel channel) {
      this.route = new Route(PerBackendSessions.this, group, false);
      this.channel = channel;
    }

    @Override
    public <ReqT, RespT> ClientCall<ReqT, RespT> newCall(MethodDescriptor<ReqT, RespT> method,
        CallOptions options) {
      return channel.newCall(method, options.withOption(ROUTE, route));
    }

    @Override
    public String authority() {
      return channel.authority();
    }
  }

  // ---- from the balancer, in the channel's synchronization context ----

  PerBackendLoadBalancer balancer() {
    return balancer;
  }

  void attached(PerBackendLoadBalancer lb, List<BackendState> backendsNow,
      ConnectivityState aggregate) {
    balancer = lb;
    everAttached = true;
    backendsChanged(lb, backendsNow, aggregate);
  }

  void detached(PerBackendLoadBalancer lb) {
    if (balancer == lb) {
      balancer = null;
      view = List.of();
      failing = false;
    }
  }

  /**
   * The balancer's backends changed: calls are assigned among these from now on, and a session
   * whose backend left is closed once nothing waits in it (first checked one SLO later, by when
   * its queued calls have been sent or have expired). Held calls go to a backend that is ready
   * now, or plain if every backend is failing ({@code aggregate} {@code TRANSIENT_FAILURE}).
   */
  void backendsChanged(PerBackendLoadBalancer lb, List<BackendState> backendsNow,
      ConnectivityState aggregate) {
    if (balancer != lb) {
      return;
    }
    view = backendsNow;
    failing = aggregate == ConnectivityState.TRANSIENT_FAILURE;
    if (!waiting.isEmpty() && (failing || pickable(backendsNow))) {
      releaseWaiting(failing);
    }
    for (EquivalentAddressGroup group : backends.keySet()) {
      if (backendsNow.stream().noneMatch(s -> s.group().equals(group)) && draining.add(group)) {
        scheduler.schedule(() -> drain(group), drainCheckNanos);
      }
    }
  }

  private void drain(EquivalentAddressGroup group) {
    Backend b = backends.get(group);
    if (b == null || view.stream().anyMatch(s -> s.group().equals(group))) {
      draining.remove(group); // closed, or resolved again meanwhile
      return;
    }
    if (b.session().queued() > 0) {
      scheduler.schedule(() -> drain(group), drainCheckNanos);
      return;
    }
    draining.remove(group);
    if (backends.remove(group, b)) {
      b.session().close();
    }
  }

  /**
   * Closes every session when {@code managed} is shut down, and returns it; see
   * {@link SpillwayClientInterceptor#closeOnShutdown}.
   */
  public <C extends ManagedChannel> C closeOnShutdown(C managed) {
    watched = Objects.requireNonNull(managed, "channel");
    SpillwayClientInterceptor one = single;
    if (one != null) {
      one.closeOnShutdown(managed);
    }
    for (Backend b : backends.values()) {
      b.session().closeOnShutdown(managed);
    }
    watch(managed);
    return managed;
  }

  private void watch(ManagedChannel managed) {
    ConnectivityState state = managed.getState(false);
    if (state == ConnectivityState.SHUTDOWN) {
      close();
    } else if (!closed) {
      managed.notifyWhenStateChanged(state, () -> watch(managed));
    }
  }

  /** Ends every session ({@link SpillwayClientInterceptor#close()}); later calls go plain. */
  @Override
  public void close() {
    closed = true;
    releaseWaiting(true);
    SpillwayClientInterceptor one = single;
    if (one != null) {
      one.close();
    }
    for (Backend b : backends.values()) {
      b.session().close();
    }
  }

  /** Configures {@link PerBackendSessions}. Not thread-safe. */
  public static final class Builder {
    private final OverloadScheme scheme;
    private long sloNanos;
    private Ticker ticker;
    private Scheduler scheduler;
    private double retryShare;
    private boolean pickFirst;

    private Builder(OverloadScheme scheme) {
      this.scheme = scheme;
    }

    /** The SLO of the calls (required). */
    public Builder slo(Duration value) {
      sloNanos = value.toNanos();
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

    /**
     * Retry a fast-rejected unary call once on another backend, at most {@code share} of calls
     * (for example 0.1), as {@link SpillwayBalancedChannel.Builder#retryToReplica}; off by default.
     */
    public Builder retryToReplica(double share) {
      if (!(share > 0 && share <= 1)) {
        throw new IllegalArgumentException("share must be in (0, 1]: " + share);
      }
      retryShare = share;
      return this;
    }

    /**
     * Send every call to one backend, as gRPC's {@code pick_first} does, instead of spreading
     * calls over the ready backends (the default, as {@code round_robin}); for a channel built to
     * use one server at a time (a primary and its fail-overs, or one of many addresses a name
     * resolves to). As {@code pick_first}, the channel keeps one connection: it tries the
     * backends in resolution order until one connects (calls made meanwhile wait), closes the
     * others' connections, and stays on that backend while it is connected, a new resolution
     * that still holds it included; when the connection is lost it starts again from the first.
     * A backend's session is made with its first call. {@link #retryToReplica} has no other
     * connected backend to retry on.
     */
    public Builder pickFirst() {
      pickFirst = true;
      return this;
    }

    /** @throws IllegalStateException if the SLO is missing */
    public PerBackendSessions build() {
      if (sloNanos <= 0) {
        throw new IllegalStateException("the sessions need an SLO: slo(Duration)");
      }
      Supplier<SpillwayClientInterceptor> make =
          SpillwayClientInterceptor.maker(scheme, sloNanos, ticker, scheduler);
      return new PerBackendSessions(make, scheduler != null ? scheduler : SharedTimer.scheduler(),
          sloNanos, retryShare, pickFirst);
    }
  }
}
