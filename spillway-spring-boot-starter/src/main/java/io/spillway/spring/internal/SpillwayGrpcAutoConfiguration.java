package io.spillway.spring.internal;

import io.grpc.ManagedChannelBuilder;
import io.grpc.ServerBuilder;
import io.spillway.api.OverloadScheme;
import io.spillway.api.Scheduler;
import io.spillway.api.Ticker;
import io.spillway.grpc.PerBackendSessions;
import io.spillway.grpc.SpillwayClientInterceptor;
import io.spillway.grpc.SpillwayGrpc;
import io.spillway.grpc.SpillwayGrpcServer;
import io.spillway.spring.GateStats;
import io.spillway.spring.GrpcServerStats;
import io.spillway.spring.SpillwayProperties;
import java.lang.System.Logger.Level;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.ApplicationListener;
import org.springframework.context.SmartLifecycle;
import org.springframework.context.annotation.Bean;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.grpc.client.GrpcChannelBuilderCustomizer;
import org.springframework.grpc.server.ServerBuilderCustomizer;
import org.springframework.grpc.server.lifecycle.GrpcServerShutdownEvent;

/**
 * Spring gRPC (spring-grpc 1.0): every gRPC server Spring builds is protected by overload-grpc's
 * {@link SpillwayGrpcServer.Builder#install}, and every channel gets a Spillway session per
 * backend.
 *
 * <p>Why a {@link ServerBuilderCustomizer} rather than a {@code @GlobalServerInterceptor}: a
 * global interceptor only decides once a call has reached the workers, after it queued behind
 * admitted work, and sees no queueing delay of its own. {@code install} decides on the transport
 * thread as each call arrives, runs admitted calls on measured workers, measures gRPC's event
 * loops, adds the credit control service, and binds deadline budgets, which is what a plain
 * ServerBuilder gets in overload-grpc's README.
 *
 * <p>A session per backend ({@link PerBackendSessions}) because Spring gRPC's channels balance
 * with {@code round_robin} by default: one session on such a channel would take every backend's
 * credits into one window, and the load balancer would send calls released by one server's credits
 * to another (docs/design.md: credits are per session and per backend). The channel customizer
 * sets the channel's load-balancing policy, so it runs after Spring gRPC's own client
 * customizer, which sets the policy from the channel's properties: it is ordered last and its
 * configuration comes after the client auto-configuration.
 *
 * <p>Thread-safe; what it creates is closed with the application context.
 */
@AutoConfiguration(after = SpillwayAutoConfiguration.class, afterName = {
    "org.springframework.grpc.autoconfigure.client.GrpcClientAutoConfiguration",
    "org.springframework.boot.grpc.client.autoconfigure.GrpcClientAutoConfiguration"})
@ConditionalOnBooleanProperty(name = "spillway.enabled", matchIfMissing = true)
@ConditionalOnClass(name = "org.springframework.grpc.server.ServerBuilderCustomizer")
@EnableConfigurationProperties(SpillwayProperties.class)
public class SpillwayGrpcAutoConfiguration {

  @Bean
  GrpcWiring spillwayGrpcWiring(SpillwayProperties properties, Ticker ticker,
      Scheduler scheduler, ObjectProvider<OverloadScheme> scheme) {
    return new GrpcWiring(properties, ticker, scheduler, scheme.getIfUnique());
  }

  @Bean
  <T extends ServerBuilder<T>> ServerBuilderCustomizer<T> spillwayGrpcServerCustomizer(
      GrpcWiring wiring) {
    return wiring::install;
  }

  /**
   * Ends the clients' credit streams as Spring gRPC starts a server's graceful shutdown (it
   * publishes the event just before {@code server.shutdown()}): each stream is a call that ends
   * only then, and the shutdown would otherwise wait its whole grace period for them.
   */
  @Bean
  @ConditionalOnClass(name = "org.springframework.grpc.server.lifecycle.GrpcServerShutdownEvent")
  ApplicationListener<GrpcServerShutdownEvent> spillwayGrpcShutdownListener(GrpcWiring wiring) {
    return event -> wiring.servers().forEach(SpillwayGrpcServer::stopCreditStreams);
  }

  @Bean
  @Order(Ordered.LOWEST_PRECEDENCE)
  @ConditionalOnClass(name = "org.springframework.grpc.client.GrpcChannelBuilderCustomizer")
  // the application's own clients, HTTP builders and gRPC channels alike, are left as they are
  @ConditionalOnBooleanProperty(name = "spillway.client.enabled", matchIfMissing = true)
  <T extends ManagedChannelBuilder<T>> GrpcChannelBuilderCustomizer<T> spillwayGrpcChannelCustomizer(
      GrpcWiring wiring, org.springframework.beans.factory.BeanFactory beans) {
    return (name, builder) -> wiring.customize(builder, configuredPolicy(beans, name));
  }

  /** Spring gRPC's client properties, under the package names its releases have used. */
  private static final List<String> CLIENT_PROPERTIES = List.of(
      "org.springframework.boot.grpc.client.autoconfigure.GrpcClientProperties",
      "org.springframework.grpc.autoconfigure.client.GrpcClientProperties");

  /**
   * The load-balancing policy Spring gRPC's properties give the channel {@code name} ({@code
   * spring.grpc.client.channels.NAME.default-load-balancing-policy}, {@code round_robin} unless
   * set), or {@code null} where they cannot be read. Read by reflection: the starter does not
   * compile against Spring gRPC's client auto-configuration, whose package has moved between its
   * releases.
   */
  static String configuredPolicy(org.springframework.beans.factory.BeanFactory beans, String name) {
    for (String className : CLIENT_PROPERTIES) {
      try {
        Class<?> type = Class.forName(className, false, SpillwayGrpcAutoConfiguration.class.getClassLoader());
        Object properties = beans.getBeanProvider(type).getIfAvailable();
        if (properties == null) {
          continue;
        }
        Object channel = type.getMethod("getChannel", String.class).invoke(properties, name);
        Object policy = channel.getClass().getMethod("getDefaultLoadBalancingPolicy").invoke(channel);
        return policy instanceof String p ? p : null;
      } catch (ReflectiveOperationException | LinkageError | RuntimeException notThere) {
        // another release's layout, or none: keep looking, then spread calls (the default)
      }
    }
    return null;
  }

  /**
   * The servers and sessions created, closed with the context. Thread-safe.
   *
   * <p>The channels' sessions close as the context stops, after every other lifecycle (the
   * lowest phase stops last: web and gRPC servers have drained, so nothing calls out any more),
   * and before any bean is destroyed. Spring gRPC's channel factory shuts its channels down when
   * it is destroyed and waits for their calls, a session's credit stream among them; the factory
   * depends on this wiring through the channel customizer, so it is destroyed first, and sessions
   * closed only at this wiring's destruction would hold each channel for the whole wait.
   */
  public static final class GrpcWiring implements DisposableBean, SmartLifecycle {
    private static final System.Logger LOG = System.getLogger(GrpcWiring.class.getName());
    private final SpillwayProperties properties;
    private final Ticker ticker;
    /**
     * The application's clock and timer (SpillwayAutoConfiguration's {@code Ticker} and {@code
     * Scheduler} beans), given to every server gate, session and downstream interceptor made
     * here, as the HTTP gates and sessions get them: a gate that reads one clock and is woken by
     * another's timer runs its control loop and its queue timeouts off the time it measures.
     */
    private final Scheduler scheduler;
    private final OverloadScheme scheme;
    private final List<AutoCloseable> created = new CopyOnWriteArrayList<>();
    private final List<SpillwayGrpcServer> servers = new CopyOnWriteArrayList<>();
    private final List<SpillwayClientInterceptor> sessions = new CopyOnWriteArrayList<>();
    private final List<PerBackendSessions> perBackend = new CopyOnWriteArrayList<>();
    /**
     * Numbers the methods the application's channels call, one registry for all of them, so that a
     * gate that prices its callees (Rajomon's call graph) never sees two callees under one key.
     */
    private final io.spillway.grpc.InterfaceRegistry callees = new io.spillway.grpc.InterfaceRegistry();
    private volatile boolean running;
    /**
     * What the gRPC servers' gates do, in all and by method, for the meters and the Actuator
     * endpoint (endpoint {@code grpc}: an application runs one gRPC server, so a tag per server
     * would only add cardinality).
     */
    private final GrpcServerStats stats;

    GrpcWiring(SpillwayProperties properties, Ticker ticker, Scheduler scheduler,
        OverloadScheme scheme) {
      this.properties = properties;
      this.ticker = ticker;
      this.stats = new GrpcServerStats(new GateStats("grpc"), () -> queueDelayNanos(ticker.read()));
      this.scheduler = scheduler;
      this.scheme = scheme;
    }

    /**
     * The scheme of a new gate or session: the application's bean, else a new one of the scheme
     * {@code spillway.scheme} names, as the HTTP endpoints run (a scheme instance of its own each,
     * as {@code SpillwayGrpc.server()} and {@code client()} would make).
     */
    private OverloadScheme scheme() {
      return scheme != null ? scheme
          : SpillwayAutoConfiguration.scheme(properties.getScheme(), properties.getSlo().toNanos());
    }

    void install(ServerBuilder<?> builder) {
      SpillwayGrpcServer.Builder b = SpillwayGrpc.server(scheme());
      SpillwayGrpcServer server = b.slo(properties.getSlo()).ticker(ticker).scheduler(scheduler)
          .parallelism(properties.getParallelism()).metrics(stats.gate()).install(builder);
      // added after Spillway's interceptor, so outside it: it sees every call Spillway closes
      builder.intercept(new GrpcCallOutcomes(stats, properties.getJfr().isEnabled()
          ? new GrpcJfrEvents(ticker, server.queueDelay(), properties.getJfr().getAdmittedSampleEvery())
          : null));
      servers.add(server);
      created.add(server);
    }

    /**
     * Sessions for a channel Spring gRPC builds: one per backend ({@link PerBackendSessions}, the
     * default), else one for the channel; and in front of them overload-grpc's downstream
     * interceptor, so a call made while serving a request carries that request's fields.
     */
    void customize(ManagedChannelBuilder<?> builder, String configuredPolicy) {
      try {
        sessions(builder, configuredPolicy);
      } finally {
        // added last, so it runs first: the inbound request's tokens, priority and what is left of
        // its budget (gRPC's SpillwayContext, or the budget an HTTP filter bound) go with the call,
        // ahead of the session's own fields
        builder.intercept(SpillwayGrpc.downstream().callees(callees).ticker(ticker).build());
      }
    }

    private void sessions(ManagedChannelBuilder<?> builder, String configuredPolicy) {
      if (!properties.getClient().isGrpcSessionPerBackend()) {
        builder.intercept(session());
        return;
      }
      PerBackendSessions.Builder b = SpillwayGrpc.perBackend(scheme()).slo(clientSlo())
          .ticker(ticker).scheduler(scheduler);
      if ("pick_first".equals(configuredPolicy)) {
        b.pickFirst(); // the channel's properties ask for one server at a time: keep that
      }
      double retryShare = properties.getClient().getGrpcRetryToReplica();
      if (retryShare > 0) {
        b.retryToReplica(retryShare);
      }
      PerBackendSessions sessions = b.build();
      created.add(sessions);
      perBackend.add(sessions);
      sessions.install(builder);
    }

    /** The SLO of the calls the channels send: spillway.client.slo, else spillway.slo. */
    private java.time.Duration clientSlo() {
      java.time.Duration slo = properties.getClient().getSlo();
      return slo != null ? slo : properties.getSlo();
    }

    SpillwayClientInterceptor session() {
      SpillwayClientInterceptor.Builder b = SpillwayGrpc.client(scheme());
      SpillwayClientInterceptor session = b.slo(clientSlo()).ticker(ticker).scheduler(scheduler)
          .build();
      created.add(session);
      sessions.add(session);
      return session;
    }

    @Override
    public void start() {
      running = true;
    }

    /** Closes the channels' sessions (their queued calls fail, their streams end). */
    @Override
    public void stop() {
      running = false;
      for (SpillwayClientInterceptor session : sessions) {
        session.close();
      }
      for (PerBackendSessions s : perBackend) {
        s.close();
      }
    }

    @Override
    public boolean isRunning() {
      return running;
    }

    @Override
    public int getPhase() {
      return Integer.MIN_VALUE;
    }

    /** The gRPC servers' counters, one set for all of them, and by method. */
    public GrpcServerStats stats() {
      return stats;
    }

    /** The longest queueing delay of the gRPC servers' gates at {@code now}; 0 without a server. */
    long queueDelayNanos(long now) {
      long delay = 0;
      for (SpillwayGrpcServer server : servers) {
        delay = Math.max(delay, server.queueDelay().queueingDelayNanos(now));
      }
      return delay;
    }

    /**
     * The gRPC side's live state for the Actuator endpoint: the servers' gates and the channels'
     * sessions; empty while neither exists.
     */
    public Map<String, Object> state() {
      Map<String, Object> m = new LinkedHashMap<>();
      if (!perBackend.isEmpty()) {
        m.put("channels", perBackend.stream().map(GrpcWiring::channelState).toList());
      }
      if (servers.isEmpty()) {
        return m;
      }
      m.put("name", stats.endpoint());
      m.put("servers", servers.size());
      long p99 = 0;
      for (SpillwayGrpcServer server : servers) {
        p99 = Math.max(p99, server.interceptor().p99ServiceNanos());
      }
      m.put("queueDelayNanos", queueDelayNanos(ticker.read()));
      m.put("p99ServiceNanos", p99);
      m.put("workers", servers.get(0).workers());
      m.putAll(stats.gate().snapshot());
      return m;
    }

    /**
     * One channel's client side: its backends' sessions, the calls waiting in them, and the calls
     * sent plain (before its balancer met them) or retried on another backend.
     */
    private static Map<String, Object> channelState(PerBackendSessions channel) {
      Map<String, Object> c = new LinkedHashMap<>();
      Map<java.util.List<java.net.SocketAddress>, SpillwayClientInterceptor> sessions = channel.sessions();
      c.put("backends", sessions.size());
      sessions.values().stream().findFirst().ifPresent(x -> c.put("sloNanos", x.sloNanos()));
      c.put("queued", sessions.values().stream().mapToInt(SpillwayClientInterceptor::queued).sum());
      c.put("plainCalls", channel.plainCalls());
      c.put("retries", channel.retries());
      return c;
    }

    /** The channels' per-backend sessions, for diagnostics. */
    public List<PerBackendSessions> channelSessions() {
      return List.copyOf(perBackend);
    }

    /** The protected gRPC servers, for diagnostics. */
    public List<SpillwayGrpcServer> servers() {
      return List.copyOf(servers);
    }

    @Override
    public void destroy() {
      for (AutoCloseable c : created) {
        try {
          c.close();
        } catch (Exception e) {
          LOG.log(Level.WARNING, "closing " + c, e);
        }
      }
    }
  }

}
