/**
 * Spillway's SPI: injected time and scheduling, queueing-delay signals, the admission contract
 * ({@code ServerGate}, {@code ServerPermit}, {@code ClientGate}, {@code OverloadScheme}), request
 * budgets and the wire metadata model. Depends on nothing but the JDK.
 */
// "module": the qualified export names modules built after this one, which javac warns it cannot
// find while compiling this module alone.
@SuppressWarnings("module")
module io.spillway.api {
  exports io.spillway.api;
  // Implementation shared with Spillway's own modules only: the lock-wait estimator (ASQM's locks)
  // and client session ids (the gRPC client).
  exports io.spillway.api.internal to io.spillway.asqm, io.spillway.grpc;
}
