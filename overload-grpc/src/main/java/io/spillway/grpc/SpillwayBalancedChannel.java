package io.spillway.grpc;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptors;
import io.grpc.ConnectivityState;
import io.grpc.EquivalentAddressGroup;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.NameResolver;
import io.grpc.NameResolverProvider;
import io.grpc.NameResolverRegistry;
import io.grpc.Status;
import io.grpc.StatusOr;
import io.grpc.SynchronizationContext;
import io.spillway.api.Cancellable;
import io.spillway.api.OverloadScheme;
import io.spillway.api.RetryBudget;
import io.spillway.api.Scheduler;
import io.spillway.api.Ticker;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.lang.System.Logger.Level;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
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
 * the next only while the first is shedding.
 *
 * <p>Backends are the addresses a target resolves to, or a fixed list. A target is followed
 * through gRPC's name resolution, as a gRPC channel follows it: a backend that appears gets its own
 * session; one that disappears takes no new call, keeps sending the calls queued in its session
 * (they expire there within the SLO, as they would have), and is closed once none is left, its
 * calls in flight finishing on its channel's graceful shutdown. No call fails because the
 * resolution changed. A failed or empty resolution keeps the backends there are.
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

  private static final System.Logger LOG = System.getLogger(SpillwayBalancedChannel.class.getName());
  /** How long {@link Builder#build()} waits for a target's first resolution. */
  private static final long FIRST_RESOLUTION_SECONDS = 10;

  /** How calls are assigned to backends. */
  public enum Policy { ROUND_ROBIN, PICK_FIRST }

  /**
   * The backends that take new calls, replaced whole when a resolution changes them; never empty.
   * Read without a lock on every call.
   */
  private volatile List<Backend> backends;
  private final Policy policy;
  private final double retryShare;
  private final AtomicInteger next = new AtomicInteger();
  private final IntUnaryOperator picker;
  private final RetryBudget retryBudget; // null when retries are off
  private final AtomicInteger retries = new AtomicInteger();
  private final AtomicInteger calls = new AtomicInteger();
  /** Makes the backend for an address a resolution adds; {@code null} for a fixed list. */
  private final Function<InetSocketAddress, Backend> newBackend;
  private final Scheduler scheduler;
  /** How often a backend that left the resolution is checked for queued calls. */
  private final long drainCheckNanos;

  private final Object membership = new Object();
  // Guarded by membership:
  /** Backends no longer resolved, closed once their sessions have no call queued. */
  private final List<Backend> draining = new ArrayList<>();
  private boolean closed;
  /** Follows the target; {@code null} for a fixed list. Set once, before any call. */
  private Resolution resolution;

  /** One backend: its address (if known), channel and session. */
  record Backend(String name, InetSocketAddress address, ManagedChannel channel,
      SpillwayClientInterceptor session, Channel intercepted) { }

  private SpillwayBalancedChannel(List<Backend> backends, Policy policy, double retryShare,
      IntUnaryOperator picker, Function<InetSocketAddress, Backend> newBackend,
      Scheduler scheduler, long drainCheckNanos) {
    this.backends = List.copyOf(backends);
    this.policy = policy;
    this.retryShare = retryShare;
    this.retryBudget = retryShare > 0 ? RetryBudget.of(retryShare) : null;
    this.picker = picker;
    this.newBackend = newBackend;
    this.scheduler = scheduler;
    this.drainCheckNanos = drainCheckNanos;
  }

  /** A builder; see {@link SpillwayGrpc#balanced}. */
  public static Builder builder(OverloadScheme scheme) {
    return new Builder(scheme);
  }

  /** The sessions of the backends that take new calls, one per backend, in backend order. */
  public List<SpillwayClientInterceptor> sessions() {
    return backends.stream().map(Backend::session).toList();
  }

  /** The addresses of the backends that take new calls, in backend order. */
  public List<InetSocketAddress> addresses() {
    return backends.stream().map(Backend::address).toList();
  }

  /** The backends that take new calls (tests). */
  List<Backend> backends() {
    return backends;
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
    Resolution r = resolution;
    return r != null ? r.resolver.getServiceAuthority() : backends.get(0).channel().authority();
  }

  @Override
  public <ReqT, RespT> ClientCall<ReqT, RespT> newCall(MethodDescriptor<ReqT, RespT> method,
      CallOptions options) {
    calls.incrementAndGet();
    List<Backend> now = backends;
    Backend first = pick(now, null);
    if (retryShare <= 0 || now.size() < 2 || method.getType() != MethodDescriptor.MethodType.UNARY) {
      return first.intercepted().newCall(method, options);
    }
    retryBudget.onCall();
    return new ReplicaRetryingCall<>(retrying, method, options, first);
  }

  /** The backends as a retrying call sees them. */
  private final ReplicaRetryingCall.Backends<Backend> retrying = new ReplicaRetryingCall.Backends<>() {
    @Override
    public Backend other(Backend avoid) {
      return pick(backends, avoid);
    }

    @Override
    public <ReqT, RespT> ClientCall<ReqT, RespT> newCall(Backend backend,
        MethodDescriptor<ReqT, RespT> method, CallOptions options) {
      return backend.intercepted().newCall(method, options);
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

  /** The backend for a call, from {@code list}; {@code avoid}: one not to use (it just rejected). */
  Backend pick(List<Backend> list, Backend avoid) {
    int n = list.size();
    int avoidIndex = avoid == null ? -1 : list.indexOf(avoid);
    if (picker != null) {
      return list.get(picker.applyAsInt(avoidIndex));
    }
    if (policy == Policy.PICK_FIRST) {
      for (int i = 0; i < n; i++) {
        if (i != avoidIndex) {
          return list.get(i);
        }
      }
      return list.get(0);
    }
    int start = Math.floorMod(next.getAndIncrement(), n);
    int best = -1;
    long bestScore = Long.MAX_VALUE;
    for (int k = 0; k < n; k++) {
      int i = (start + k) % n;
      if (i == avoidIndex) {
        continue;
      }
      Backend b = list.get(i);
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
    return list.get(best < 0 ? start : best);
  }

  /** Ranks a backend's connection below any connected backend's queue: ready, connecting, down. */
  private static long healthPenalty(ConnectivityState state) {
    return switch (state) {
      case READY -> 0;
      case IDLE, CONNECTING -> 1L << 32;
      case TRANSIENT_FAILURE, SHUTDOWN -> 1L << 33;
    };
  }

  /**
   * Makes the backends those of {@code addresses}: a backend still resolved keeps its session
   * and connection, a new address gets a new backend, and a backend no longer resolved takes no
   * new call and is closed once no call waits in its session ({@link #drain}).
   */
  void resolved(List<InetSocketAddress> addresses) {
    List<Backend> added = new ArrayList<>();
    List<Backend> removed = new ArrayList<>();
    synchronized (membership) {
      if (closed) {
        return;
      }
      Map<InetSocketAddress, Backend> kept = new HashMap<>();
      for (Backend b : backends) {
        kept.put(b.address(), b);
      }
      List<Backend> list = new ArrayList<>();
      for (InetSocketAddress a : new LinkedHashSet<>(addresses)) {
        Backend b = kept.remove(a);
        if (b == null) {
          b = newBackend.apply(a);
          added.add(b);
        }
        list.add(b);
      }
      removed.addAll(kept.values());
      draining.addAll(removed);
      backends = List.copyOf(list);
    }
    if (!added.isEmpty() || !removed.isEmpty()) {
      LOG.log(Level.INFO, "{0}: backends added {1}, removed {2}", authority(),
          added.stream().map(Backend::name).toList(), removed.stream().map(Backend::name).toList());
    }
    for (Backend b : added) {
      watchConnection(b, ConnectivityState.IDLE);
    }
    for (Backend b : removed) {
      scheduler.schedule(() -> drain(b), drainCheckNanos);
    }
  }

  /**
   * Closes a backend that left the resolution once no call waits in its session: its queued
   * calls are still sent to it or expire there, as they would have, and never fail for the
   * change. Its session deregisters (returning its credits), and its channel's graceful
   * shutdown lets the calls in flight finish. Checked first one SLO after the removal, so a call
   * that picked the backend just before it left still finds its session open.
   */
  private void drain(Backend b) {
    if (b.session().queued() > 0) {
      scheduler.schedule(() -> drain(b), drainCheckNanos);
      return;
    }
    synchronized (membership) {
      if (!draining.remove(b)) {
        return; // closed with the channel
      }
    }
    b.session().close();
    b.channel().shutdown();
  }

  /**
   * Asks the resolver for a fresh result each time a backend's connection fails, as gRPC's
   * load balancers do: a backend that went away is often one the name no longer resolves to.
   */
  private void watchConnection(Backend b, ConnectivityState seen) {
    b.channel().notifyWhenStateChanged(seen, () -> {
      ConnectivityState state = b.channel().getState(false);
      if (state == ConnectivityState.SHUTDOWN) {
        return;
      }
      if (state == ConnectivityState.TRANSIENT_FAILURE) {
        Resolution r = resolution;
        if (r != null) {
          r.refresh();
        }
      }
      watchConnection(b, state);
    });
  }

  @Override
  public void close() {
    List<Backend> all = new ArrayList<>();
    Resolution r;
    synchronized (membership) {
      if (closed) {
        return;
      }
      closed = true;
      all.addAll(backends);
      all.addAll(draining);
      draining.clear();
      r = resolution;
    }
    if (r != null) {
      r.shutdown();
    }
    for (Backend b : all) {
      b.session().close();
    }
    for (Backend b : all) {
      b.channel().shutdown();
    }
    for (Backend b : all) {
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
   * Follows a target through gRPC's name resolution ({@link NameResolverRegistry}): {@code dns}
   * by default, or any resolver the application registered (a service registry's, say). Each
   * result replaces the backends ({@link #resolved}); an error keeps the last ones. The resolver
   * is asked again every re-resolution period and whenever a backend's connection fails: gRPC's
   * DNS resolver does not poll by itself, so without the period a backend added behind the name
   * would be found only when another failed.
   */
  private final class Resolution extends NameResolver.Listener2 {
    private final String target;
    private final SynchronizationContext sync;
    private final CountDownLatch first = new CountDownLatch(1);
    private volatile Status firstError; // set before first counts down, if resolution failed
    private NameResolver resolver;
    private Cancellable periodic;
    private boolean warnedOfOtherAddresses; // in sync

    Resolution(String target) {
      this.target = target;
      this.sync = new SynchronizationContext((thread, e) ->
          LOG.log(Level.WARNING, "name resolution of " + target + " failed", e));
    }

    void start(NameResolver made, long periodNanos) {
      resolver = made;
      sync.execute(() -> resolver.start(this));
      periodic = scheduler.every(periodNanos, this::refresh);
    }

    void refresh() {
      sync.execute(() -> resolver.refresh());
    }

    void shutdown() {
      periodic.cancel();
      sync.execute(() -> resolver.shutdown());
    }

    @Override
    public void onResult(NameResolver.ResolutionResult result) {
      onResult2(result);
    }

    @Override
    public Status onResult2(NameResolver.ResolutionResult result) {
      StatusOr<List<EquivalentAddressGroup>> groups = result.getAddressesOrError();
      if (!groups.hasValue()) {
        onError(groups.getStatus());
        return groups.getStatus();
      }
      List<InetSocketAddress> addresses = new ArrayList<>();
      for (EquivalentAddressGroup group : groups.getValue()) {
        // One backend per group, as round_robin keeps one subchannel per group; a group's
        // further addresses are other routes to the same server.
        group.getAddresses().stream().filter(InetSocketAddress.class::isInstance)
            .map(InetSocketAddress.class::cast).findFirst().ifPresentOrElse(addresses::add, () -> {
              if (!warnedOfOtherAddresses) {
                warnedOfOtherAddresses = true;
                LOG.log(Level.WARNING, "{0}: skipped addresses that are not host and port: {1}",
                    target, group.getAddresses());
              }
            });
      }
      if (addresses.isEmpty()) {
        Status none = Status.UNAVAILABLE.withDescription("resolved to no address");
        onError(none);
        return none;
      }
      resolved(addresses);
      first.countDown();
      return Status.OK;
    }

    @Override
    public void onError(Status error) {
      if (first.getCount() > 0) {
        firstError = error;
        first.countDown();
        return;
      }
      LOG.log(Level.WARNING, "{0}: name resolution failed ({1}); keeping its {2} backends",
          target, error, backends.size());
    }

    /** Waits for the first result; throws if it was an error or did not come. */
    void awaitFirst() {
      try {
        if (!first.await(FIRST_RESOLUTION_SECONDS, TimeUnit.SECONDS)) {
          throw new IllegalStateException("no resolution of " + target + " within "
              + FIRST_RESOLUTION_SECONDS + " s");
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted resolving " + target, e);
      }
      Status error = firstError;
      if (error != null) {
        throw new IllegalArgumentException("cannot resolve " + target + ": " + error);
      }
    }
  }

  /** Configures a {@link SpillwayBalancedChannel}. Not thread-safe. */
  public static final class Builder {
    private final OverloadScheme scheme;
    private long sloNanos;
    private final List<InetSocketAddress> addresses = new ArrayList<>();
    private String resolvedTarget; // a target followed through name resolution
    private NameResolverRegistry registry = NameResolverRegistry.getDefaultRegistry();
    private long reresolveNanos = Duration.ofSeconds(30).toNanos();
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
     * The backends a target names.
     * <ul>
     *   <li>One name, {@code dns:///host:port} or {@code host:port}, or a target of any scheme a
     *       gRPC {@link NameResolverProvider} is registered for: followed through name resolution
     *       as a gRPC channel follows it. Every address it resolves to is a backend, and the
     *       backends follow later resolutions (asked for every {@link #reresolveEvery} and when a
     *       connection fails). {@link #build()} waits for the first resolution.
     *   <li>A list, {@code host1:port1,host2:port2} (with or without {@code dns:///}): every
     *       address each host resolves to, once, now.
     * </ul>
     *
     * @throws IllegalArgumentException if the target is malformed or a listed host does not
     *     resolve
     */
    public Builder target(String target) {
      String t = target.startsWith("dns:///") ? target.substring(7) : target;
      if (!t.contains(",")) {
        String uri = target.contains("://") ? target : "dns:///" + target;
        try {
          URI parsed = new URI(uri);
          if ("dns".equals(parsed.getScheme())) {
            hostAndPort(parsed.getPath() == null ? "" : parsed.getPath().replaceFirst("^/", ""),
                target);
          }
        } catch (URISyntaxException e) {
          throw new IllegalArgumentException("not a target: " + target, e);
        }
        resolvedTarget = uri;
        return this;
      }
      for (String part : t.split(",")) {
        URI uri = hostAndPort(part, target);
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

    private static URI hostAndPort(String part, String target) {
      URI uri;
      try {
        uri = new URI("//" + part.strip());
      } catch (URISyntaxException e) {
        throw new IllegalArgumentException("not host:port: " + part + " in " + target, e);
      }
      if (uri.getHost() == null || uri.getPort() < 0) {
        throw new IllegalArgumentException("not host:port: " + part + " in " + target);
      }
      return uri;
    }

    /** The backends' addresses, fixed. */
    public Builder addresses(List<InetSocketAddress> value) {
      addresses.addAll(value);
      return this;
    }

    /**
     * The resolvers a {@link #target} is looked up in; gRPC's default registry (with its
     * {@code dns} resolver and any provider on the class path) by default.
     */
    public Builder nameResolverRegistry(NameResolverRegistry value) {
      registry = Objects.requireNonNull(value, "registry");
      return this;
    }

    /**
     * How often a resolved target is resolved again; 30 s by default, the JVM's and gRPC's DNS
     * cache time, so a lookup is rarely answered from a cache that has not expired.
     */
    public Builder reresolveEvery(Duration value) {
      if (value.isNegative() || value.isZero()) {
        throw new IllegalArgumentException("re-resolution period must be positive: " + value);
      }
      reresolveNanos = value.toNanos();
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

    /** The sessions' and the channel's scheduler; the shared timer by default. */
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
        list.add(backend(ch.authority(), null, ch));
      }
      return new SpillwayBalancedChannel(list, policy, retryShare, picker, null, timer(), sloNanos);
    }

    /**
     * @throws IllegalStateException if no SLO or no backend was given, or a resolved target gave
     *     no answer within 10 s
     * @throws IllegalArgumentException if no resolver serves the target's scheme, or its first
     *     resolution failed
     */
    public SpillwayBalancedChannel build() {
      if (sloNanos <= 0) {
        throw new IllegalStateException("the channel needs an SLO: slo(Duration)");
      }
      if (resolvedTarget == null) {
        if (addresses.isEmpty()) {
          throw new IllegalStateException("no backends: target(...) or addresses(...)");
        }
        List<Backend> list = new ArrayList<>();
        for (InetSocketAddress a : addresses) {
          list.add(backend(a.toString(), a, channels.apply(a)));
        }
        return new SpillwayBalancedChannel(list, policy, retryShare, picker, null, timer(), sloNanos);
      }
      if (!addresses.isEmpty()) {
        throw new IllegalStateException("a resolved target and fixed addresses: give one");
      }
      URI uri = URI.create(resolvedTarget);
      NameResolverProvider provider = registry.getProviderForScheme(uri.getScheme());
      if (provider == null) {
        throw new IllegalArgumentException("no name resolver for scheme '" + uri.getScheme()
            + "' in " + resolvedTarget);
      }
      Function<InetSocketAddress, ManagedChannel> make = channels;
      SpillwayBalancedChannel channel = new SpillwayBalancedChannel(List.of(), policy, retryShare,
          picker, a -> backend(a.toString(), a, make.apply(a)), timer(), sloNanos);
      SpillwayBalancedChannel.Resolution resolution = channel.new Resolution(resolvedTarget);
      NameResolver resolver = provider.newNameResolver(uri, NameResolver.Args.newBuilder()
          .setDefaultPort(443)
          .setProxyDetector(address -> null)
          .setSynchronizationContext(resolution.sync)
          .setServiceConfigParser(new NameResolver.ServiceConfigParser() {
            @Override
            public NameResolver.ConfigOrError parseServiceConfig(Map<String, ?> raw) {
              return NameResolver.ConfigOrError.fromConfig(raw); // the channel uses no service config
            }
          })
          .setScheduledExecutorService(SharedTimer.executor())
          .setNameResolverRegistry(registry)
          .build());
      if (resolver == null) {
        throw new IllegalArgumentException("the '" + uri.getScheme()
            + "' resolver does not take " + resolvedTarget);
      }
      synchronized (channel.membership) {
        channel.resolution = resolution;
      }
      resolution.start(resolver, reresolveNanos);
      try {
        resolution.awaitFirst();
      } catch (RuntimeException e) {
        channel.close();
        throw e;
      }
      return channel;
    }

    private Scheduler timer() {
      return scheduler != null ? scheduler : SharedTimer.scheduler();
    }

    private Backend backend(String name, InetSocketAddress address, ManagedChannel ch) {
      if (sloNanos <= 0) {
        throw new IllegalStateException("the channel needs an SLO: slo(Duration)");
      }
      SpillwayClientInterceptor session =
          SpillwayClientInterceptor.maker(scheme, sloNanos, ticker, scheduler).get();
      return new Backend(name, address, ch, session, ClientInterceptors.intercept(ch, session));
    }
  }
}
