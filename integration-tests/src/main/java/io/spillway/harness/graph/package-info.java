/**
 * The call-graph harness (rajomon-nsdi25 §5 on real sockets): every service of a scenario's
 * {@link io.spillway.sim.CallGraph} is a gRPC server on loopback, and an open-loop load generator
 * drives its interfaces; any scheme goes on the calls through a {@link
 * io.spillway.harness.graph.GraphWiring}.
 *
 * <ul>
 *   <li>{@link io.spillway.harness.graph.GraphHarnessMain}: the command ({@code ./spillway graph
 *       SCENARIO}): capacity, the SLO rule, each scheme, the tables, results.json and plots.
 *   <li>{@link io.spillway.harness.graph.GraphServer} and {@link io.spillway.harness.graph.ServiceGraph}:
 *       the services process, one gRPC server, worker pool and queue per service.
 *   <li>{@link io.spillway.harness.graph.GraphWiring} and {@link io.spillway.harness.graph.GraphWirings}:
 *       where a scheme's interceptors go (server, each hop, each client session).
 *   <li>{@code GraphClient}, {@code GraphLoadGenerator}: client sessions over a few channels, Poisson
 *       arrivals per interface, per-interface recorders.
 * </ul>
 *
 * <p>The wire format is {@code src/main/proto/hotel.proto}; ghz can drive a running front-end.
 */
package io.spillway.harness.graph;
