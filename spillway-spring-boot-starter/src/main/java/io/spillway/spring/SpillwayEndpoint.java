package io.spillway.spring;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;

/**
 * {@code /actuator/spillway}: the live state of every gate, HTTP endpoints' and the gRPC servers'
 * (decisions by reason, outcomes, budget aborts, credit pool, concurrency limit, price, p99
 * service time), the queueing delay and its stages, how the workers are
 * measured, the servlet run slots (how many, running, waiting; absent where not used), and the
 * unknown {@code spillway.*} properties found at start-up. Expose it with
 * {@code management.endpoints.web.exposure.include=spillway}.
 *
 * <p>Thread-safe.
 */
@Endpoint(id = "spillway")
public class SpillwayEndpoint {

  private final SpillwayHttpGate gate;
  private final ServerQueueDelay delay;
  private final Supplier<String> workers;
  private final Supplier<Map<String, Object>> runSlots;
  private final List<String> unknownProperties;
  private final Supplier<Map<String, Object>> grpc;

  public SpillwayEndpoint(SpillwayHttpGate gate, ServerQueueDelay delay, Supplier<String> workers,
      Supplier<Map<String, Object>> runSlots, List<String> unknownProperties) {
    this(gate, delay, workers, runSlots, unknownProperties, Map::of);
  }

  /**
   * @param gate the HTTP gate, or {@code null} in an application that serves no HTTP
   * @param grpc the gRPC servers' state, or an empty map where there are none
   */
  public SpillwayEndpoint(SpillwayHttpGate gate, ServerQueueDelay delay, Supplier<String> workers,
      Supplier<Map<String, Object>> runSlots, List<String> unknownProperties,
      Supplier<Map<String, Object>> grpc) {
    this.gate = gate;
    this.delay = delay;
    this.workers = workers;
    this.runSlots = runSlots;
    this.unknownProperties = List.copyOf(unknownProperties);
    this.grpc = grpc;
  }

  @ReadOperation
  public Map<String, Object> state() {
    Map<String, Object> m = new LinkedHashMap<>();
    if (gate != null) {
      http(m);
    }
    Map<String, Object> g = grpc.get();
    if (!g.isEmpty()) {
      m.put("grpc", g);
    }
    m.put("unknownProperties", unknownProperties);
    return m;
  }

  private void http(Map<String, Object> m) {
    long now = gate.ticker().read();
    m.put("queueDelayNanos", gate.queueDelay().queueingDelayNanos(now));
    m.put("queueStages", delay.stageNames());
    m.put("workers", workers.get());
    Map<String, Object> slots = runSlots.get();
    if (!slots.isEmpty()) {
      m.put("runSlots", slots);
    }
    List<Map<String, Object>> endpoints = new ArrayList<>();
    for (SpillwayHttpGate.Endpoint e : gate.endpoints()) {
      Map<String, Object> one = new LinkedHashMap<>();
      one.put("name", e.name());
      one.put("path", e.pattern());
      one.put("enabled", e.enabled());
      one.put("gate", e.gate().getClass().getSimpleName());
      one.put("sloNanos", e.sloNanos());
      one.put("p99ServiceNanos", e.p99ServiceNanos(now));
      one.putAll(e.stats().snapshot());
      endpoints.add(one);
    }
    m.put("endpoints", endpoints);
    m.put("inFlight", gate.inFlight());
    m.put("malformedHeaderClients", gate.malformedHeaderWarnings());
  }
}
