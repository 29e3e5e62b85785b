package io.spillway.api;

/**
 * A capability of a {@link ServerGate} whose decisions depend on the services it calls: the
 * server side of a call graph reports every downstream response here, so the gate can fold its
 * callees' state into its own (Rajomon §3.4 "Maximum Total Price": an interface's price is its
 * local price plus the maximum of the prices its callees last published).
 *
 * <p>The adapter that makes downstream calls (for gRPC, the downstream client interceptor) knows
 * which inbound interface the call serves because the inbound request travels with it (in the
 * gRPC {@code Context}); it calls this for every downstream response or reject that carries
 * overload fields. Implementations are thread-safe; this is called on whichever thread completes
 * the downstream call.
 */
public interface CallGraphGate {

  /**
   * A downstream call made while serving {@code inboundInterfaceId} has answered.
   *
   * @param inboundInterfaceId the interface of this server that made the call
   * @param calleeKey identifies the callee interface (service and method) within this server;
   *     small non-negative integers, stable for the server's lifetime
   * @param response the callee's response fields (status, and its price if it sent one)
   * @param nowNanos the caller's ticker reading
   */
  void onDownstreamResponse(int inboundInterfaceId, int calleeKey, ResponseMetadata response,
      long nowNanos);
}
