package io.spillway.grpc;

import io.spillway.api.OverloadScheme;

/**
 * Where to start: a protected server, client sessions, and balanced channels.
 *
 * <pre>{@code
 * // server: one call protects it, for Spillway-aware and plain clients alike
 * ServerBuilder<?> builder = ServerBuilder.forPort(port).addService(new GreeterService());
 * SpillwayGrpcServer spillway = SpillwayGrpc.server().slo(Duration.ofMillis(5)).install(builder);
 * Server server = builder.build().start();
 *
 * // client: a session (credits instead of rejects); its id is generated
 * SpillwayClientInterceptor session = SpillwayGrpc.client().slo(Duration.ofMillis(5)).build();
 * ManagedChannel channel = ManagedChannelBuilder.forAddress("localhost", port).usePlaintext()
 *     .intercept(session).build();
 *
 * // several backends: one session per backend, retry to a replica after a fast reject
 * SpillwayBalancedChannel replicas = SpillwayGrpc.balanced().slo(Duration.ofMillis(5))
 *     .target("dns:///search.internal:8080").retryToReplica(0.1).build();
 * }</pre>
 *
 * <p>Any other scheme: {@code SpillwayGrpc.server(scheme)}, {@code SpillwayGrpc.client(scheme)}.
 * Inside a service that calls others, put {@link #downstream()} on the channels to the callees.
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

  /**
   * Sessions of the default scheme for a {@code ManagedChannel} that balances over several
   * backends, one session per backend; {@link PerBackendSessions#install} puts them on the
   * channel's builder. Give them the SLO.
   */
  public static PerBackendSessions.Builder perBackend() {
    return PerBackendSessions.builder(null);
  }

  /** As {@link #perBackend()}, with sessions of {@code scheme}. */
  public static PerBackendSessions.Builder perBackend(OverloadScheme scheme) {
    return PerBackendSessions.builder(java.util.Objects.requireNonNull(scheme, "scheme"));
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
