/**
 * Spillway on gRPC: any {@link io.spillway.api.OverloadScheme} in front of gRPC services and on
 * gRPC channels, with the overload fields in gRPC metadata.
 *
 * <ul>
 *   <li>{@link io.spillway.grpc.SpillwayGrpc}: the entry point, builders for the pieces below.
 *   <li>{@link io.spillway.grpc.SpillwayServerInterceptor}: admission at call start, fast
 *       rejects, one permit per call completed exactly once, {@link io.spillway.grpc.SpillwayContext}
 *       in the gRPC {@code Context}.
 *   <li>{@link io.spillway.grpc.SpillwayClientInterceptor}: one client session; calls wait in its
 *       gate, expire at the SLO, and feed answers and explicit credits back.
 *   <li>{@link io.spillway.grpc.SpillwayControlService}: {@code spillway.Control}, the explicit
 *       credit stream, demand reports and deregistration.
 *   <li>{@link io.spillway.grpc.SpillwayDownstreamInterceptor}: call graphs: tokens and priority
 *       inherited by sub-requests, downstream answers reported to a
 *       {@link io.spillway.api.CallGraphGate}.
 *   <li>{@link io.spillway.grpc.SpillwayMetadata} and {@link io.spillway.grpc.InterfaceRegistry}:
 *       the wire keys and the method numbering.
 * </ul>
 *
 * <p>Depends on {@code grpc-api} only (no protobuf, no transport).
 */
package io.spillway.grpc;
