/** A service team's module: gRPC and Spillway's public API, nothing else. */
module io.spillway.consumer {
  requires io.spillway.grpc;
}
