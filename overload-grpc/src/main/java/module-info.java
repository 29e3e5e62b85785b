/**
 * Spillway on gRPC: {@code SpillwayGrpc} for servers, client sessions and balanced channels. The
 * event-loop probe reads Netty's loops through grpc-netty-shaded or Netty itself when either is
 * present (both optional).
 */
@SuppressWarnings("requires-transitive-automatic")
module io.spillway.grpc {
  requires transitive io.spillway.api;
  requires transitive io.spillway.credit;
  requires transitive io.spillway.asqm;
  requires transitive io.spillway.threading;
  requires transitive io.grpc;
  requires static io.grpc.netty.shaded;
  requires static io.netty.common;

  exports io.spillway.grpc;

  provides io.grpc.LoadBalancerProvider with io.spillway.grpc.PerBackendLoadBalancerProvider;
}
