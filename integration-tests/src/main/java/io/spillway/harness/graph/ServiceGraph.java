package io.spillway.harness.graph;

import io.spillway.api.Scheduler;
import io.spillway.api.Ticker;
import io.spillway.grpc.EventLoopProbe;
import io.spillway.sim.CallGraph;
import io.spillway.sim.Scenario;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ScheduledThreadPoolExecutor;

/**
 * Every service of a scenario's call graph, each a gRPC server on its own loopback port in this
 * process ({@link GraphService}), wired with one scheme. One process rather than one per service:
 * the machine has two cores, one for the services and one for the load generator, and a JVM per
 * service would spend that core on JIT and GC threads. What separates the services is what matters
 * for overload control: each has its own socket, its own gRPC server and its own worker pool and
 * queue, and every call between them crosses loopback through gRPC.
 * A process may also run only some of the services, reaching the others' ports in another process
 * ({@link GraphPlacement}).
 *
 * <p>Thread-safe once started; {@link #close} stops every service.
 */
public final class ServiceGraph implements AutoCloseable {

  private final CallGraph graph;
  private final ScheduledThreadPoolExecutor control;
  private final List<GraphService> services = new ArrayList<>();
  private final EventLoopProbe eventLoops;

  private ServiceGraph(CallGraph graph, ScheduledThreadPoolExecutor control, EventLoopProbe eventLoops) {
    this.graph = graph;
    this.control = control;
    this.eventLoops = eventLoops;
  }

  /**
   * Starts every service of {@code scenario}'s call graph with {@code wiring}, connected to each
   * other, ready for calls.
   *
   * @throws IllegalArgumentException if the scenario describes no call graph
   */
  public static ServiceGraph start(Scenario scenario, GraphWiring wiring) throws IOException {
    return start(scenario, wiring, null, Map.of());
  }

  /**
   * Starts the services named in {@code only} ({@code null}: every service) of {@code scenario}'s
   * call graph with {@code wiring}, ready for calls: their callees among them are connected by
   * their ports here, the others by {@code remote} (services of another process, by name).
   *
   * @throws IllegalArgumentException if the scenario describes no call graph, {@code only} names a
   *     service not in it, or a callee of a service started here is neither started here nor in
   *     {@code remote}
   */
  public static ServiceGraph start(Scenario scenario, GraphWiring wiring, Collection<String> only,
      Map<String, Integer> remote) throws IOException {
    CallGraph graph = scenario.callGraph();
    if (graph == null) {
      throw new IllegalArgumentException("scenario '" + scenario.name() + "' describes no call graph "
          + "(set graph.services, graph.interfaces and graph.<interface>)");
    }
    List<CallGraph.Service> local = local(graph, only);
    checkCallees(graph, local, remote);
    ScheduledThreadPoolExecutor control = new ScheduledThreadPoolExecutor(1, r -> {
      Thread t = new Thread(r, "graph-control");
      t.setDaemon(true);
      return t;
    });
    Ticker ticker = Ticker.system();
    // The services of a process share gRPC's event loops, so they share one probe of them.
    ServiceGraph g = new ServiceGraph(graph, control, new EventLoopProbe(ticker));
    try {
      Scheduler scheduler = Scheduler.of(control);
      for (CallGraph.Service s : local) {
        GraphService service = new GraphService(graph, s, wiring, scenario, ticker, scheduler,
            g.eventLoops, scenario.seed());
        g.services.add(service);
        service.start();
      }
      Map<String, Integer> ports = new LinkedHashMap<>(remote);
      ports.putAll(g.ports());
      for (GraphService s : g.services) {
        s.connect(ports);
      }
      return g;
    } catch (IOException | RuntimeException e) {
      g.close();
      throw e;
    }
  }

  private static List<CallGraph.Service> local(CallGraph graph, Collection<String> only) {
    if (only == null) {
      return graph.services();
    }
    Set<String> known = new HashSet<>();
    graph.services().forEach(s -> known.add(s.name()));
    for (String name : only) {
      if (!known.contains(name)) {
        throw new IllegalArgumentException("no service '" + name + "' in the call graph");
      }
    }
    return graph.services().stream().filter(s -> only.contains(s.name())).toList();
  }

  private static void checkCallees(CallGraph graph, List<CallGraph.Service> local, Map<String, Integer> remote) {
    Set<String> here = new HashSet<>();
    local.forEach(s -> here.add(s.name()));
    List<String> unreachable = GraphPlacement.callsOut(graph, here,
        callee -> here.contains(callee) || remote.containsKey(callee));
    if (!unreachable.isEmpty()) {
      throw new IllegalArgumentException(unreachable.getFirst()
          + ", which is neither started here nor given a remote port");
    }
  }

  public CallGraph graph() {
    return graph;
  }

  /** The port of every service started here, by service name, in the graph's order. */
  public Map<String, Integer> ports() {
    Map<String, Integer> ports = new LinkedHashMap<>();
    for (GraphService s : services) {
      ports.put(s.service().name(), s.port());
    }
    return ports;
  }

  /** The port of the service that receives interface {@code iface}'s requests (its root). */
  public int frontEndPort(CallGraph.Interface iface) {
    return ports().get(iface.root().service().name());
  }

  /** How many calls of interface {@code iface} service {@code service} has computed for. */
  public long computed(String service, String iface) {
    return find(service).computed(graph.iface(iface).index());
  }

  /** How many of gRPC's event loops calls to these services have started on so far. */
  public int eventLoopsProbed() {
    return eventLoops.loopsProbed();
  }

  /**
   * How many calls service {@code service} has handed to its workers since start: one per call
   * its gate admitted (a rejected call never reaches them).
   */
  public long dispatched(String service) {
    return find(service).dispatched();
  }

  /**
   * Counters since start, one {@code service.interface=computed/failed} item per service started
   * here and interface it serves, space-separated (what {@link GraphServer} answers to {@code
   * stats}).
   */
  public String stats() {
    StringBuilder b = new StringBuilder();
    for (GraphService s : services) {
      for (CallGraph.Interface i : graph.interfaces()) {
        if (s.serves(i.index())) {
          if (!b.isEmpty()) {
            b.append(' ');
          }
          b.append(s.service().name()).append('.').append(i.name()).append('=')
              .append(s.computed(i.index())).append('/').append(s.failed(i.index()));
        }
      }
    }
    return b.toString();
  }

  private GraphService find(String name) {
    for (GraphService s : services) {
      if (s.service().name().equals(name)) {
        return s;
      }
    }
    throw new IllegalArgumentException("no service '" + name + "'");
  }

  @Override
  public void close() {
    for (GraphService s : services) {
      s.close();
    }
    control.shutdownNow();
  }

  @Override
  public String toString() {
    return services.toString();
  }
}
