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
 * cardinality is the number of overrides plus two), and for the gRPC servers per method:
 *
 * <table>
 *   <caption>Meters</caption>
 *   <tr><th>name</th><th>type</th><th>tags</th></tr>
 *   <tr><td>{@code spillway.requests.admitted}</td><td>counter</td><td>endpoint, method</td></tr>
 *   <tr><td>{@code spillway.requests.rejected}</td><td>counter</td><td>endpoint, method, reason
 *       (aqm, limit, no_credit, price, budget)</td></tr>
 *   <tr><td>{@code spillway.requests.completed}</td><td>counter</td><td>endpoint, method, outcome
 *       (success, dropped, failed, timed_out, aborted; every refusal ends as dropped)</td></tr>
 *   <tr><td>{@code spillway.budget.aborts}</td><td>counter</td><td>endpoint, method</td></tr>
 *   <tr><td>{@code spillway.credits.pool}, {@code spillway.credits.issued}</td><td>gauge</td>
 *       <td>endpoint: the credit pool and the credits its sessions hold, at the last report</td></tr>
 *   <tr><td>{@code spillway.limit}, {@code spillway.limit.waiting}</td><td>gauge</td>
 *       <td>endpoint: the limit for clients without credits and the admitted requests it counts,
 *       those not yet started, at the last report (the default scheme runs both)</td></tr>
 *   <tr><td>{@code spillway.price}</td><td>gauge</td><td>endpoint: the local price a price
 *       scheme (Rajomon) last set, once per update interval; 0 for schemes without prices</td></tr>
 *   <tr><td>{@code spillway.queue.delay}</td><td>gauge, seconds</td><td>endpoint: the queueing
 *       delay its gate reads (an HTTP endpoint's is the HTTP server's, the same for all of them;
 *       {@code grpc}'s the longest of the gRPC servers', as the Actuator endpoint shows it)</td></tr>
 * </table>
 *
 * <p>{@code method}: on {@code grpc}, the full gRPC method name ({@code package.Service/Method}),
 * bounded by the methods the servers serve ({@link GrpcServerStats}); {@value #NO_METHOD} on HTTP
 * endpoints, which are not counted by method. Every meter of one name carries the same tag keys,
 * because Prometheus refuses a meter whose name another meter holds with other keys (Micrometer's
 * Prometheus registry drops it with a warning): so the HTTP counters carry {@code method} too, and
 * the queueing delay {@code endpoint}. A total is the sum over {@code method}: {@code sum by
 * (endpoint) (spillway_requests_admitted_total)}.
 *
 * <p>The gRPC counters are counted by method where each call ends, by an interceptor around
 * Spillway's: a call is admitted once Spillway lets it through (the gate counts it as it arrives,
 * before it waits for a worker), refused as Spillway answers it, and completed as it closes or
 * its client cancels it. A call whose client cancelled it while it waited for a worker is let
 * through too, as gRPC starts it all the same, and completed by that cancel. So the sums over
 * methods are the Actuator endpoint's totals, less the calls still waiting for a worker.
 *
 * <p>Counters and gauges read the gates' {@link GateStats} when the registry polls them: counting
 * a request costs one {@code LongAdder} increment (on gRPC, a lookup of the method's counters by
 * the name gRPC holds, and their increments) and allocates no meter or tag, whatever the
 * registry. A gRPC method's counters are registered with its first call, or at binding if it came
 * first.
 *
 * <p>Thread-safe.
 */
public final class SpillwayMeterBinder implements MeterBinder {

  /** The {@code method} tag of the HTTP endpoints' counters. */
  public static final String NO_METHOD = "none";

  private static final Status[] REJECTIONS = {Status.REJECTED_AQM, Status.REJECTED_LIMIT,
      Status.REJECTED_NO_CREDIT, Status.REJECTED_PRICE, Status.REJECTED_BUDGET};

  private final SpillwayHttpGate gate;
  private final List<GrpcServerStats> grpc;

  /** The meters of {@code gate}'s endpoints. */
  public SpillwayMeterBinder(SpillwayHttpGate gate) {
    this(Objects.requireNonNull(gate, "gate"), List.of());
  }

  /**
   * The meters of {@code gate}'s endpoints, if there is an HTTP gate ({@code null} if not), and
   * of {@code grpc} (the gRPC servers'), with the same names, tagged with each one's {@link
   * GrpcServerStats#endpoint()} and method.
   */
  public SpillwayMeterBinder(SpillwayHttpGate gate, List<GrpcServerStats> grpc) {
    this.gate = gate;
    this.grpc = List.copyOf(grpc);
  }

  @Override
  public void bindTo(MeterRegistry registry) {
    if (gate != null) {
      for (SpillwayHttpGate.Endpoint e : gate.endpoints()) {
        counters(registry, e.stats(), e.name(), NO_METHOD);
        gauges(registry, e.stats(), e.name());
        Gauge.builder("spillway.queue.delay", gate,
                g -> g.queueDelay().queueingDelayNanos(g.ticker().read()) / 1e9)
            .description("The server's queueing delay, as the gates read it").baseUnit("seconds")
            .tags("endpoint", e.name()).register(registry);
      }
    }
    for (GrpcServerStats servers : grpc) {
      String endpoint = servers.endpoint();
      gauges(registry, servers.gate(), endpoint);
      Gauge.builder("spillway.queue.delay", servers, s -> s.queueDelayNanos() / 1e9)
          .description("The server's queueing delay, as the gates read it").baseUnit("seconds")
          .tags("endpoint", endpoint).register(registry);
      servers.forEachMethod(m -> counters(registry, m, endpoint, m.endpoint()));
    }
  }

  private static void counters(MeterRegistry registry, GateStats stats, String endpoint,
      String method) {
    Tags tags = Tags.of("endpoint", endpoint, "method", method);
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
  }

  private static void gauges(MeterRegistry registry, GateStats stats, String endpoint) {
    Tags tags = Tags.of("endpoint", endpoint);
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
