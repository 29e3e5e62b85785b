package io.spillway.grpc;

import io.spillway.api.OverloadScheme;

/**
 * Where to start: any {@link OverloadScheme} on gRPC in a few lines.
 *
 * <pre>{@code
 * OverloadScheme scheme = Breakwater.of(BreakwaterConfig.forSlo(sloNanos, rttNanos));
 *
 * // server
 * SpillwayGrpcServer spillway = SpillwayGrpc.server(scheme).queueDelay(dispatcher.queueDelay()).build();
 * Server server = ServerBuilder.forPort(8080).executor(dispatcher)
 *     .addService(spillway.intercept(new GreeterService()))
 *     .addService(spillway.controlService())
 *     .build().start();
 *
 * // client: one session per channel
 * SpillwayClientInterceptor session =
 *     SpillwayGrpc.client(scheme).sessionId(42).sloNanos(sloNanos).build();
 * Channel channel = ClientInterceptors.intercept(managedChannel, session);
 * }</pre>
 *
 * <p>Inside a service that calls others, put {@link #downstream()} on the channels to the callees.
 */
public final class SpillwayGrpc {

  private SpillwayGrpc() { }

  /**
   * A server-side setup of the default scheme ({@code io.spillway.credit.Spillway}): give it the
   * SLO and {@link SpillwayGrpcServer.Builder#install install} it on the server builder.
   */
  public static SpillwayGrpcServer.Builder server() {
    return SpillwayGrpcServer.builder();
  }

  /** A client session of the default scheme; give it the SLO. */
  public static SpillwayClientInterceptor.Builder client() {
    return SpillwayClientInterceptor.builder();
  }

  /** A server-side setup for {@code scheme}: gate, interceptor and control service. */
  public static SpillwayGrpcServer.Builder server(OverloadScheme scheme) {
    return SpillwayGrpcServer.builder(scheme);
  }

  /**
   * A channel over several backends with one session of the default scheme per backend, and
   * optional retry to a replica after a fast reject; give it the SLO and the backends.
   */
  public static SpillwayBalancedChannel.Builder balanced() {
    return SpillwayBalancedChannel.builder(null);
  }

  /** As {@link #balanced()}, with sessions of {@code scheme}. */
  public static SpillwayBalancedChannel.Builder balanced(OverloadScheme scheme) {
    return SpillwayBalancedChannel.builder(java.util.Objects.requireNonNull(scheme, "scheme"));
  }

  /** A client session of {@code scheme}, as an interceptor for one channel. */
  public static SpillwayClientInterceptor.Builder client(OverloadScheme scheme) {
    return SpillwayClientInterceptor.builder(scheme);
  }

  /** An interceptor for calls made while serving a Spillway call (call graphs). */
  public static SpillwayDownstreamInterceptor.Builder downstream() {
    return new SpillwayDownstreamInterceptor.Builder();
  }
}
