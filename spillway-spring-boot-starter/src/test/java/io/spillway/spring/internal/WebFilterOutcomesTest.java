package io.spillway.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.spillway.api.ControlChannel;
import io.spillway.api.Outcome;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.testing.VirtualClock;
import io.spillway.credit.Spillway;
import io.spillway.spring.GateStats;
import io.spillway.spring.SpillwayHttpGate;
import io.spillway.spring.SpillwayProperties;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.http.HttpStatus;
import org.springframework.mock.http.server.reactive.MockServerHttpRequest;
import org.springframework.mock.web.server.MockServerWebExchange;
import org.springframework.web.server.ResponseStatusException;
import reactor.core.publisher.Mono;

/**
 * How the WebFilter ends the permits of exchanges whose handler signals an error, in virtual
 * time: as the servlet filter does for the same handler under Spring MVC, which resolves the
 * error into its status inside the dispatcher.
 */
class WebFilterOutcomesTest {

  private static final long MS = 1_000_000;
  private final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 1_000_000_000L);
  private final GateStats stats = new GateStats("default");
  private SpillwayHttpGate gate;

  private SpillwayWebFilter filter() {
    ServerGate g = Spillway.forSlo(Duration.ofMillis(100)).newServerGate(new ServerEnvironment(
        clock, clock, QueueDelaySignal.NONE, ControlChannel.DISCARD, stats, 2));
    gate = new SpillwayHttpGate(clock, QueueDelaySignal.NONE,
        new SpillwayHttpGate.Endpoint("default", "/**", true, g, 100 * MS, 20 * MS, stats, true),
        List.of(), List.of(), SpillwayProperties.NoBudget.UNLIMITED, false, 1);
    return new SpillwayWebFilter(gate, null, null, SpillwayProperties.DEFAULT_REJECT_STATUS);
  }

  /**
   * A handler's {@code ResponseStatusException} of a client error (a 404 for an unknown id, a
   * 400; WebFlux's own 404 for a path nothing serves is one too) is an answer, not a failure of
   * the server: under Spring MVC the dispatcher resolves it and the permit ends as a success, and
   * so it must here. Ended as failed, every such request would drop out of the throughput and
   * latency samples the gate steers by.
   */
  @Test
  void aClientErrorStatusFromTheHandlerEndsAsTheAnswerItIs() {
    SpillwayWebFilter f = filter();
    MockServerWebExchange exchange = MockServerWebExchange.from(MockServerHttpRequest.get("/x"));
    f.filter(exchange, e -> Mono.error(new ResponseStatusException(HttpStatus.NOT_FOUND)))
        .onErrorComplete().block(Duration.ofSeconds(5));

    assertThat(gate.inFlight()).isZero();
    assertThat(stats.completions(Outcome.FAILED)).as("failed").isZero();
    assertThat(stats.completions(Outcome.SUCCESS)).as("success").isOne();
  }

  /** A server error status stays a failure. */
  @Test
  void aServerErrorStatusFromTheHandlerEndsAsAFailure() {
    SpillwayWebFilter f = filter();
    MockServerWebExchange exchange = MockServerWebExchange.from(MockServerHttpRequest.get("/x"));
    f.filter(exchange, e -> Mono.error(new ResponseStatusException(HttpStatus.BAD_GATEWAY)))
        .onErrorComplete().block(Duration.ofSeconds(5));

    assertThat(gate.inFlight()).isZero();
    assertThat(stats.completions(Outcome.FAILED)).as("failed").isOne();
  }
}
