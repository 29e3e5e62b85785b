package io.spillway.harness.graph;

import io.grpc.ClientInterceptor;
import io.grpc.MethodDescriptor;
import io.grpc.ServerInterceptor;
import io.grpc.ServerServiceDefinition;
import io.spillway.api.OverloadScheme;
import io.spillway.grpc.InterfaceRegistry;
import io.spillway.grpc.SpillwayClientInterceptor;
import io.spillway.grpc.SpillwayDownstreamInterceptor;
import io.spillway.grpc.SpillwayGrpc;
import io.spillway.grpc.SpillwayGrpcServer;
import io.spillway.price.Rajomon;
import io.spillway.price.RajomonConfig;
import io.spillway.sim.CallGraph;
import io.spillway.sim.Scenario;
import io.spillway.sim.SchemeRegistry;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The schemes the call-graph harness puts on gRPC calls, by the names scenarios use, placed in the
 * graph as the simulator places them (overload-sim's {@code GraphScheme}, rajomon-nsdi25 §4
 * "Baselines"), through {@code overload-grpc}'s interceptors:
 *
 * <ul>
 *   <li>{@code none}: no interceptors anywhere (what capacity is measured with).
 *   <li>{@code X} for a scheme that issues credits ({@code breakwater}): X at the front-end
 *       services only (the roots of interfaces), as Breakwater was designed; inner services are
 *       uncontrolled and calls to them plain.
 *   <li>{@code X-d} ({@code breakwater-d}, the paper's "Breakwaterd"): X at every service, and every
 *       caller holds one client session of X with each callee service (a per-callee
 *       {@link SpillwayClientInterceptor} inside the {@link SpillwayDownstreamInterceptor}), so every
 *       sender–receiver pair is rate-limited.
 *   <li>any other {@code X} ({@code dagor}, {@code rajomon}, and every other scheme of
 *       {@link SchemeRegistry}): X at every service; sub-requests go straight to the callee,
 *       carrying the inbound request's tokens and priority, and each callee's answer is reported to
 *       the caller's gate if it is a {@link io.spillway.api.CallGraphGate} (Rajomon's price
 *       propagation, §3.4).
 * </ul>
 * End clients always hold one session of X with the front-end they call.
 *
 * <p>A scheme comes from {@link SchemeRegistry} (configured from the scenario); {@code rajomon}
 * from {@code overload-price} with {@link RajomonConfig#forSlo} while the registry has none.
 * Client gates and inner sessions take the scenario's {@code slo_us} as their SLO (one SLO per
 * session; set it to the slowest interface's, which the paper tunes on, §4 "Parameter Tuning").
 *
 * <p>Thread-safe (immutable).
 */
public final class GraphWirings {

  /**
   * Session ids of services' sessions with their callees: apart from the clients' 1 .. clients
   * (overload-grpc reserves 0 for "no session").
   */
  static final long CALLER_SESSION_BASE = 1L << 32;

  private static final String DISTRIBUTED = "-d";

  private GraphWirings() { }

  /** Every name {@link #create} accepts, sorted; each also with {@code -d}. */
  public static List<String> names() {
    TreeSet<String> names = new TreeSet<>(SchemeRegistry.names());
    names.add("rajomon");
    return List.copyOf(names);
  }

  /**
   * The wiring called {@code name}, configured from {@code scenario}.
   *
   * @throws IllegalArgumentException naming the known schemes if there is none by that name
   */
  public static GraphWiring create(String name, Scenario scenario) {
    if (name.equals("none")) {
      return None.INSTANCE;
    }
    boolean distributed = name.endsWith(DISTRIBUTED) && !names().contains(name);
    String base = distributed ? name.substring(0, name.length() - DISTRIBUTED.length()) : name;
    OverloadScheme scheme = scheme(base, name, scenario);
    boolean frontEndOnly = !distributed && scheme.issuesCredits();
    return new SchemeWiring(name, scheme, scenario, frontEndOnly, distributed);
  }

  private static OverloadScheme scheme(String base, String name, Scenario scenario) {
    if (SchemeRegistry.names().contains(base)) {
      return SchemeRegistry.create(base, scenario);
    }
    if (base.equals("rajomon")) {
      return Rajomon.of(RajomonConfig.forSlo(scenario.sloNanos(), scenario.rttNanos()));
    }
    throw new IllegalArgumentException("unknown scheme '" + name + "' for the call-graph harness; "
        + "known: " + String.join(", ", names()) + " (each also as NAME-d: at every hop)");
  }

  /** No control: no interceptors anywhere, every request admitted at every hop. */
  static final class None implements GraphWiring {

    static final None INSTANCE = new None();

    private static final ServiceWiring NO_INTERCEPTORS = new ServiceWiring() {
      @Override
      public List<ServerInterceptor> serverInterceptors() {
        return List.of();
      }

      @Override
      public List<ClientInterceptor> downstream(CallGraph.Service callee) {
        return List.of();
      }
    };

    @Override
    public String name() {
      return "none";
    }

    @Override
    public ServiceWiring service(ServiceSite site) {
      return NO_INTERCEPTORS;
    }

    @Override
    public List<ClientInterceptor> clientInterceptors(ClientSite site) {
      return List.of();
    }
  }

  /** An {@link OverloadScheme} placed in the graph by the rules in the class comment. */
  static final class SchemeWiring implements GraphWiring {
    private final String name;
    private final OverloadScheme scheme;
    private final Scenario scenario;
    private final boolean frontEndOnly;
    private final boolean callerSessions;

    SchemeWiring(String name, OverloadScheme scheme, Scenario scenario, boolean frontEndOnly,
        boolean callerSessions) {
      this.name = name;
      this.scheme = scheme;
      this.scenario = scenario;
      this.frontEndOnly = frontEndOnly;
      this.callerSessions = callerSessions;
    }

    @Override
    public String name() {
      return name;
    }

    @Override
    public ServiceWiring service(ServiceSite site) {
      if (frontEndOnly && !site.isFrontEnd()) {
        return None.NO_INTERCEPTORS;
      }
      InterfaceRegistry interfaces = InterfaceRegistry.of(site.served().stream()
          .map(MethodDescriptor::getFullMethodName).toArray(String[]::new));
      SpillwayGrpcServer server = SpillwayGrpc.server(scheme)
          .ticker(site.ticker())
          .scheduler(site.scheduler())
          .queueDelay(site.queueDelay())
          .parallelism(site.service().workers())
          .interfaces(interfaces)
          .build();
      return new SchemeService(site, server);
    }

    @Override
    public List<ClientInterceptor> clientInterceptors(ClientSite site) {
      return List.of(SpillwayGrpc.client(scheme)
          .sessionId(site.session() + 1L) // 0 means "no session" to overload-grpc
          .sloNanos(scenario.sloNanos())
          .ticker(site.ticker())
          .scheduler(site.scheduler())
          .interfaces(InterfaceRegistry.of(site.methods().stream()
              .map(MethodDescriptor::getFullMethodName).toArray(String[]::new)))
          .build());
    }

    /** The scheme on one service: its server gate, and its side of each hop to a callee. */
    private final class SchemeService implements ServiceWiring {
      private final ServiceSite site;
      private final SpillwayGrpcServer server;
      /** Numbers callee methods for the gate's CallGraphGate keys; one per service. */
      private final InterfaceRegistry callees = new InterfaceRegistry();
      private final Map<String, SpillwayClientInterceptor> sessions = new ConcurrentHashMap<>();

      SchemeService(ServiceSite site, SpillwayGrpcServer server) {
        this.site = site;
        this.server = server;
      }

      @Override
      public List<ServerInterceptor> serverInterceptors() {
        return List.of(server.interceptor());
      }

      @Override
      public List<ServerServiceDefinition> extraServices() {
        return List.of(server.controlService());
      }

      @Override
      public List<ClientInterceptor> downstream(CallGraph.Service callee) {
        if (frontEndOnly) {
          return List.of(); // inner services run no scheme: nothing to carry or report
        }
        SpillwayDownstreamInterceptor.Builder b = SpillwayGrpc.downstream().callees(callees).ticker(site.ticker());
        if (callerSessions) {
          b.perCalleeSession(sessions.computeIfAbsent(callee.name(), c -> SpillwayGrpc.client(scheme)
              .sessionId(CALLER_SESSION_BASE + site.service().index())
              .sloNanos(scenario.sloNanos())
              .ticker(site.ticker())
              .scheduler(site.scheduler())
              .build()));
        }
        return List.of(b.build());
      }

      @Override
      public void close() {
        List<SpillwayClientInterceptor> open = new ArrayList<>(sessions.values());
        open.forEach(SpillwayClientInterceptor::close);
        server.close();
      }
    }
  }
}
