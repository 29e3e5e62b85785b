package io.spillway.grpc;

import io.grpc.Context;
import io.spillway.api.CallGraphGate;
import io.spillway.api.RequestBudget;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ServerPermit;

/**
 * The Spillway side of the gRPC call being served: the overload fields the request arrived with
 * and the permit the server gate granted it. {@link SpillwayServerInterceptor} puts it in the
 * call's gRPC {@link Context}, so a handler, and the {@link SpillwayDownstreamInterceptor} on the
 * calls the handler makes, find it with {@link #current()}.
 *
 * <p>The permit is shown for inspection. The interceptor completes it when the call closes or is
 * cancelled; a handler that completes it itself gets its outcome recorded, but the response then
 * carries no overload fields.
 *
 * <p>Immutable, except that {@link #budget()} is the request's live queueing budget, which, like
 * every {@link RequestBudget}, belongs to the request's handler and is not thread-safe.
 */
public final class SpillwayContext {

  static final Context.Key<SpillwayContext> KEY = Context.key("spillway");

  private final RequestMetadata request;
  private final ServerPermit permit;
  private final CallGraphGate callGraph;
  private final RequestBudget budget;

  SpillwayContext(RequestMetadata request, ServerPermit permit, CallGraphGate callGraph,
      RequestBudget budget) {
    this.request = request;
    this.permit = permit;
    this.callGraph = callGraph;
    this.budget = budget;
  }

  /** The context of the call the current thread serves, or {@code null} outside a Spillway call. */
  public static SpillwayContext current() {
    return KEY.get();
  }

  /** The Spillway context stored in {@code context}, or {@code null}. */
  public static SpillwayContext from(Context context) {
    return KEY.get(context);
  }

  /** The client session the request came from; 0 if it named none. */
  public long sessionId() {
    return request.sessionId();
  }

  /** The request's id within its session; 0 if it named none. */
  public long requestId() {
    return request.requestId();
  }

  /** The interface (method) called, as this server's {@link InterfaceRegistry} numbers it. */
  public int interfaceId() {
    return request.interfaceId();
  }

  /** The tokens the request carries (Rajomon); 0 if none. */
  public long tokens() {
    return request.tokens();
  }

  /** The request's priority (DAGOR), lower is more important; 0 if none. */
  public int priority() {
    return request.priority();
  }

  /** The client's demand piggybacked on the request. */
  public int demand() {
    return request.demand();
  }

  /** The remaining queueing budget the request arrived with, {@link Long#MAX_VALUE} if none. */
  public long budgetNanos() {
    return request.budgetNanos();
  }

  /**
   * The request's queueing budget as it stands now (charged with the time spent waiting for the
   * server's executor), or {@code null} if the request carried none. Inside the handler's callbacks
   * it is also bound to {@link RequestBudget#CURRENT}.
   */
  public RequestBudget budget() {
    return budget;
  }

  /** The permit the server gate granted; completed by the interceptor when the call ends. */
  public ServerPermit permit() {
    return permit;
  }

  /** Copies the request's overload fields into {@code into}, and returns it. */
  public RequestMetadata copyTo(RequestMetadata into) {
    return into.sessionId(request.sessionId()).requestId(request.requestId())
        .demand(request.demand()).creditId(request.creditId()).tokens(request.tokens())
        .interfaceId(request.interfaceId()).budgetNanos(request.budgetNanos())
        .priority(request.priority()).flags(request.flags());
  }

  /** The server gate, if it folds downstream responses into its decisions; else {@code null}. */
  CallGraphGate callGraph() {
    return callGraph;
  }

  @Override
  public String toString() {
    return "SpillwayContext[" + request + ", " + permit.status() + "]";
  }
}
