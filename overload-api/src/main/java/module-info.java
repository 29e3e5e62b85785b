/**
 * Spillway's SPI: injected time and scheduling, queueing-delay signals, the admission contract
 * ({@code ServerGate}, {@code ServerPermit}, {@code ClientGate}, {@code OverloadScheme}), request
 * budgets and the wire metadata model. Depends on nothing but the JDK.
 */
module io.spillway.api {
  exports io.spillway.api;
}
