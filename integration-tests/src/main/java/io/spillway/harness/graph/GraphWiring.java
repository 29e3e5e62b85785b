package io.spillway.harness.graph;

import io.grpc.ClientInterceptor;
import io.grpc.MethodDescriptor;
import io.grpc.ServerInterceptor;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.Scheduler;
import io.spillway.api.Ticker;
import io.spillway.harness.graph.proto.GraphReply;
import io.spillway.harness.graph.proto.GraphRequest;
import io.spillway.sim.CallGraph;
import io.spillway.sim.Scenario;
import java.util.List;

/**
 * How an overload scheme is put on the call graph's gRPC calls: the plug point between the
 * harness (which owns the servers, channels, threads and queues) and a scheme's gRPC interceptors
 * (which own every admission decision). A wiring is made by name ({@link GraphWirings}) in both
 * processes: the services' process asks it for {@link #service} once per service, the load
 * generator asks it for {@link #clientInterceptors} once per client session.
 *
 * <p>Three places a scheme can act, matching rajomon-nsdi25 Fig. 2:
 * <ul>
 *   <li><b>server side of each service</b>: {@link ServiceWiring#serverInterceptors()} run on every
 *       call the service receives (admission, AQM, price or credit updates in the response), with
 *       the service's own queueing delay ({@link ServiceSite#queueDelay()});
 *       {@link ServiceWiring#extraServices()} adds control RPCs if the scheme needs them;
 *   <li><b>each service → callee hop</b>: {@link ServiceWiring#downstream} intercepts the calls a
 *       service makes to one callee (forwarding tokens and priority, a per-hop client gate for
 *       Breakwater-d, reporting the callee's price to the service's {@code CallGraphGate});
 *   <li><b>each client session</b>: {@link #clientInterceptors} (client-side rate limiting and
 *       queueing, Rajomon's token pool, Breakwater's credits).
 * </ul>
 *
 * <p>Interceptor lists are applied <em>forward</em>: the first interceptor in a list sees a call
 * first ({@code ServerInterceptors.interceptForward}, {@code ClientInterceptors.interceptForward}).
 * Interceptors must pass {@link io.grpc.CallOptions} through unchanged to the channel below them:
 * the load generator learns from them whether a call left the client.
 *
 * <p>Implementations are thread-safe: services are wired from one thread before any call, but the
 * interceptors they return run on gRPC's threads.
 */
public interface GraphWiring {

  /** The scheme's name, as scenarios list it. */
  String name();

  /** Wires one service, in the services' process, before it starts. */
  ServiceWiring service(ServiceSite site);

  /**
   * The interceptors of one client session with one front-end service, in the load generator's
   * process. Each session has its own (a session is one of the scenario's {@code clients}); its
   * calls are multiplexed with other sessions' over a few channels. Interceptors that are {@link
   * AutoCloseable} are closed when the load generator disconnects, before its channels.
   */
  List<ClientInterceptor> clientInterceptors(ClientSite site);

  /**
   * Whether a call that left the client and failed with {@code status} was shed for overload (a
   * reject, counted as dropped) rather than an error. A callee's reject fails every caller above it
   * with the callee's status, so the client sees the status of whichever hop shed the request.
   */
  default boolean isOverloadReject(Status status) {
    Status.Code code = status.getCode();
    return code == Status.Code.RESOURCE_EXHAUSTED || code == Status.Code.UNAVAILABLE;
  }

  /**
   * What a service's wiring is given.
   *
   * @param service the service being wired
   * @param graph the whole graph, for the callees of each interface through this service
   * @param scenario the scenario, for scheme parameters (SLOs, {@code breakwater.*}, ...)
   * @param served the methods this service serves, one per interface it takes part in, in the
   *     graph's interface order ({@link GraphMethods}): register them first to number them the same
   *     way in every run
   * @param ticker the clock the service's queue stamps with
   * @param scheduler a control-loop scheduler shared by the services of this process
   * @param queueDelay now − stamp of the oldest call waiting for one of this service's workers
   */
  record ServiceSite(CallGraph.Service service, CallGraph graph, Scenario scenario,
      List<MethodDescriptor<GraphRequest, GraphReply>> served, Ticker ticker, Scheduler scheduler,
      QueueDelaySignal queueDelay) {

    /** Whether this service is the root (front-end) of any interface. */
    public boolean isFrontEnd() {
      return graph.interfaces().stream().anyMatch(i -> i.root().service().equals(service));
    }
  }

  /**
   * A client session's place: one session talking to one front-end service.
   *
   * @param session the session's number, 0 to {@code clients − 1}
   * @param frontEnd the service this session's calls go to (the root of the interfaces it calls)
   * @param graph the graph, for each interface's SLO
   * @param scenario the scenario, for scheme parameters
   * @param methods the front-end method of every interface, indexed by interface id
   * @param ticker the load generator's clock
   * @param scheduler runs on the load generator's event loop, which also completes this session's
   *     calls
   */
  record ClientSite(int session, CallGraph.Service frontEnd, CallGraph graph, Scenario scenario,
      List<MethodDescriptor<GraphRequest, GraphReply>> methods, Ticker ticker, Scheduler scheduler) {
  }

  /** A scheme on one service. */
  interface ServiceWiring extends AutoCloseable {

    /** Intercepts every call this service receives; first in the list sees the call first. */
    List<ServerInterceptor> serverInterceptors();

    /** Services added beside the graph's (e.g. a control RPC); none by default. */
    default List<ServerServiceDefinition> extraServices() {
      return List.of();
    }

    /** Intercepts the calls this service makes to {@code callee}. */
    List<ClientInterceptor> downstream(CallGraph.Service callee);

    /** Stops anything the wiring started (control loops); called after the service stopped. */
    @Override
    default void close() {
    }
  }
}
