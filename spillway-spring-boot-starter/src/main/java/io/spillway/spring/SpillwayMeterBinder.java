package io.spillway.spring;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.spillway.api.Outcome;
import io.spillway.api.Status;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * Spillway's meters, per endpoint group ({@code endpoint} tag: {@code default} or the name of a
 * {@code spillway.endpoints[i]} override for HTTP, {@code grpc} for the gRPC servers, so the
 * cardinality is the number of overrides plus two):
 *
 * <table>
 *   <caption>Meters</caption>
 *   <tr><th>name</th><th>type</th><th>tags</th></tr>
 *   <tr><td>{@code spillway.requests.admitted}</td><td>counter</td><td>endpoint</td></tr>
 *   <tr><td>{@code spillway.requests.rejected}</td><td>counter</td><td>endpoint, reason (aqm,
 *       limit, no_credit, price, budget)</td></tr>
 *   <tr><td>{@code spillway.requests.completed}</td><td>counter</td><td>endpoint, outcome</td></tr>
 *   <tr><td>{@code spillway.budget.aborts}</td><td>counter</td><td>endpoint</td></tr>
 *   <tr><td>{@code spillway.credits.pool}, {@code spillway.credits.issued}</td><td>gauge</td>
 *       <td>endpoint: the credit pool and the credits its sessions hold, at the last report</td></tr>
 *   <tr><td>{@code spillway.limit}, {@code spillway.limit.waiting}</td><td>gauge</td>
 *       <td>endpoint: the limit for clients without credits and the admitted requests it counts,
 *       those not yet started, at the last report (the default scheme runs both)</td></tr>
 *   <tr><td>{@code spillway.price}</td><td>gauge</td><td>endpoint: the local price a price
 *       scheme (Rajomon) last set, once per update interval; 0 for schemes without prices</td></tr>
 *   <tr><td>{@code spillway.queue.delay}</td><td>gauge, seconds</td><td>none: the HTTP
 *       server's measured queueing delay (the gRPC servers' is in the Actuator endpoint)</td></tr>
 * </table>
 *
 * <p>Counters and gauges read the gates' {@link GateStats} when the registry polls them: counting
 * a request costs one {@code LongAdder} increment and allocates nothing, whatever the registry.
 *
 * <p>Thread-safe.
 */
public final class SpillwayMeterBinder implements MeterBinder {

  private static final Status[] REJECTIONS = {Status.REJECTED_AQM, Status.REJECTED_LIMIT,
      Status.REJECTED_NO_CREDIT, Status.REJECTED_PRICE, Status.REJECTED_BUDGET};

  private final SpillwayHttpGate gate;
  private final List<GateStats> others;

  /** The meters of {@code gate}'s endpoints. */
  public SpillwayMeterBinder(SpillwayHttpGate gate) {
    this(Objects.requireNonNull(gate, "gate"), List.of());
  }

  /**
   * The meters of {@code gate}'s endpoints, if there is an HTTP gate ({@code null} if not), and
   * of {@code others} (the gRPC servers' gates), with the same names, tagged with each one's
   * {@link GateStats#endpoint()}.
   */
  public SpillwayMeterBinder(SpillwayHttpGate gate, List<GateStats> others) {
    this.gate = gate;
    this.others = List.copyOf(others);
  }

  @Override
  public void bindTo(MeterRegistry registry) {
    if (gate != null) {
      for (SpillwayHttpGate.Endpoint e : gate.endpoints()) {
        bind(registry, e.stats(), e.name());
      }
      Gauge.builder("spillway.queue.delay", gate,
              g -> g.queueDelay().queueingDelayNanos(g.ticker().read()) / 1e9)
          .description("The server's queueing delay, as the gates read it").baseUnit("seconds")
          .register(registry);
    }
    for (GateStats stats : others) {
      bind(registry, stats, stats.endpoint());
    }
  }

  private static void bind(MeterRegistry registry, GateStats stats, String endpoint) {
    Tags tags = Tags.of("endpoint", endpoint);
    FunctionCounter.builder("spillway.requests.admitted", stats, GateStats::admitted)
        .description("Requests a Spillway gate admitted").tags(tags).register(registry);
    for (Status s : REJECTIONS) {
      FunctionCounter.builder("spillway.requests.rejected", stats, g -> g.decisions(s))
          .description("Requests a Spillway gate rejected, by reason")
          .tags(tags.and("reason", GateStats.reason(s))).register(registry);
    }
    for (Outcome o : Outcome.values()) {
      FunctionCounter.builder("spillway.requests.completed", stats, g -> g.completions(o))
          .description("Admitted requests that ended, by outcome")
          .tags(tags.and("outcome", o.name().toLowerCase(Locale.ROOT))).register(registry);
    }
    FunctionCounter.builder("spillway.budget.aborts", stats, GateStats::budgetAborts)
        .description("Admitted requests aborted because a queue would outlast their budget")
        .tags(tags).register(registry);
    Gauge.builder("spillway.credits.pool", stats, GateStats::creditPool)
        .description("The gate's credit pool").tags(tags).register(registry);
    Gauge.builder("spillway.credits.issued", stats, GateStats::creditsIssued)
        .description("Credits the gate's sessions hold").tags(tags).register(registry);
    Gauge.builder("spillway.limit", stats, GateStats::concurrencyLimit)
        .description("The limit on waiting requests from clients without credits").tags(tags)
        .register(registry);
    Gauge.builder("spillway.limit.waiting", stats, GateStats::limitWaiting)
        .description("Admitted requests without credits not yet started, held to the limit").tags(tags)
        .register(registry);
    Gauge.builder("spillway.price", stats, GateStats::price)
        .description("The price the gate last set for itself (Rajomon; 0 without prices)")
        .tags(tags).register(registry);
  }
}
