package io.spillway.spring;

import io.spillway.asqm.ContendedLockFinder;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;

/**
 * {@code /actuator/spillway}: the live state of every gate, HTTP endpoints' and the gRPC servers'
 * (decisions by reason, outcomes, budget aborts, credit pool, concurrency limit, price, p99
 * service time), the queueing delay and its stages, how the workers are
 * measured, the servlet run slots (how many, running, waiting; absent where not used), credits
 * over HTTP (the credit streams open here; the application's client sessions by server: pass-through
 * or not, requests queued), and the unknown {@code spillway.*} properties found at start-up. Expose it with
 * {@code management.endpoints.web.exposure.include=spillway}.
 *
 * <p>{@code /actuator/spillway/locks?seconds=N} ranks the locks this application's requests queue
 * for while it serves, the ones worth a {@code BudgetedLock} ({@link #locks}). It samples thread
 * dumps of this JVM, which on JDK 25 can, rarely, crash it (ContendedLockFinder's class comment):
 * profile an instance that can afford a restart.
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
  private final Supplier<Map<String, Object>> httpCredits;
  private final AtomicBoolean profiling = new AtomicBoolean();

  /** Lock profiles run this long where the request names no length. */
  public static final int DEFAULT_LOCK_PROFILE_SECONDS = 5;
  /** The longest lock profile: the request is held for its length. */
  public static final int MAX_LOCK_PROFILE_SECONDS = 60;
  /** How many locks a profile lists. */
  static final int LOCK_PROFILE_ROWS = 20;

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
    this(gate, delay, workers, runSlots, unknownProperties, grpc, Map::of);
  }

  /**
   * @param httpCredits credits over HTTP: the credit streams open at this server and the
   *     application's client sessions, or an empty map where neither exists
   */
  public SpillwayEndpoint(SpillwayHttpGate gate, ServerQueueDelay delay, Supplier<String> workers,
      Supplier<Map<String, Object>> runSlots, List<String> unknownProperties,
      Supplier<Map<String, Object>> grpc, Supplier<Map<String, Object>> httpCredits) {
    this.httpCredits = httpCredits;
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
    Map<String, Object> credits = httpCredits.get();
    if (!credits.isEmpty()) {
      m.put("httpCredits", credits);
    }
    m.put("unknownProperties", unknownProperties);
    return m;
  }

  /**
   * {@code /actuator/spillway/locks[?seconds=N]}: records this application's lock waits for
   * {@code N} seconds (default {@value #DEFAULT_LOCK_PROFILE_SECONDS}, at most {@value
   * #MAX_LOCK_PROFILE_SECONDS}) while it serves, and ranks the locks by the time requests queued
   * for them (Protego §4: measure per-lock queueing rather than guess which locks to budget).
   * Platform threads' waits come from JFR; virtual threads', which JFR does not record, from
   * thread dumps ({@link ContendedLockFinder#profile}). Call it under real load. One profile runs
   * at a time; a second request meanwhile is refused.
   *
   * @return {@code null} (404) for any selector but {@code locks}
   * @throws InvalidEndpointRequestException (400) for a length out of range, or while another
   *     profile runs
   */
  @ReadOperation
  public @Nullable Map<String, Object> locks(@Selector String part, @Nullable Integer seconds) {
    if (!part.equals("locks")) {
      return null;
    }
    int length = seconds == null ? DEFAULT_LOCK_PROFILE_SECONDS : seconds;
    if (length < 1 || length > MAX_LOCK_PROFILE_SECONDS) {
      throw new InvalidEndpointRequestException("seconds must be 1 to " + MAX_LOCK_PROFILE_SECONDS
          + ", was " + length, "seconds out of range");
    }
    if (!profiling.compareAndSet(false, true)) {
      throw new InvalidEndpointRequestException("a lock profile is already running",
          "lock profile running");
    }
    List<ContendedLockFinder.LockContention> ranked;
    try {
      ranked = ContendedLockFinder.profile(() -> {
        try {
          Thread.sleep(length * 1000L);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      });
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } finally {
      profiling.set(false);
    }
    List<Map<String, Object>> rows = new ArrayList<>();
    for (ContendedLockFinder.LockContention c : ranked.subList(0, Math.min(LOCK_PROFILE_ROWS, ranked.size()))) {
      Map<String, Object> row = new LinkedHashMap<>();
      row.put("lock", c.lock());
      row.put("site", c.site());
      row.put("waits", c.waits());
      row.put("totalWaitNanos", c.totalWaitNanos());
      if (!c.sampled()) {
        row.put("meanWaitNanos", c.meanWaitNanos());
        row.put("maxWaitNanos", c.maxWaitNanos());
      }
      row.put("sampled", c.sampled());
      rows.add(row);
    }
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("seconds", length);
    m.put("locks", rows);
    return m;
  }

  private void http(Map<String, Object> m) {
    long now = gate.ticker().read();
    m.put("queueDelayNanos", gate.queueDelay().queueingDelayNanos(now));
    m.put("queueStages", delay.stageNames());
    m.put("queueStageDelaysNanos", delay.readings(now));
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
