package io.spillway.spring.internal;

import io.spillway.api.Outcome;
import io.spillway.api.RequestBudget;
import io.spillway.grpc.EventLoopProbe;
import io.spillway.spring.SpillwayHttpGate;
import io.spillway.spring.SpillwayHttpGate.Admission;
import io.spillway.spring.SpillwayReactor;
import java.net.InetSocketAddress;
import java.util.function.Consumer;
import org.springframework.core.Ordered;
import org.springframework.http.HttpStatus;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;
import reactor.core.publisher.SignalType;

/**
 * Spillway in front of WebFlux: decides on each exchange on the event loop it arrived on, before
 * any other filter; answers a reject at once ({@code 503}, {@code Retry-After}); puts an admitted
 * exchange's budget in the Reactor context ({@link SpillwayReactor#BUDGET_KEY}); and ends its permit
 * exactly once, when the exchange completes, fails or is cancelled (the client went away). A
 * {@link io.spillway.api.BudgetExceededException} becomes a fast {@code 503} if the response is not
 * committed yet. The event loop is probed on each arrival ({@link EventLoopProbe}), which is how
 * Reactor Netty's backlog enters the queueing delay.
 *
 * <p>Thread-safe.
 */
public final class SpillwayWebFilter implements WebFilter, Ordered {

  private final SpillwayHttpGate gate;
  private final EventLoopProbe probe;

  /** @param probe the event loops' probe, or {@code null} if Netty is absent */
  public SpillwayWebFilter(SpillwayHttpGate gate, EventLoopProbe probe) {
    this.gate = gate;
    this.probe = probe;
  }

  @Override
  public int getOrder() {
    return Ordered.HIGHEST_PRECEDENCE;
  }

  @Override
  public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
    SpillwayHttpGate.Endpoint endpoint =
        gate.endpointFor(exchange.getRequest().getPath().pathWithinApplication().value());
    if (endpoint == null) {
      return chain.filter(exchange);
    }
    if (probe != null) {
      probe.arrived(Long.MIN_VALUE);
    }
    InetSocketAddress remote = exchange.getRequest().getRemoteAddress();
    Admission admission = gate.admit(endpoint, exchange.getRequest().getHeaders()::getFirst,
        remote == null ? null : remote.getHostString());
    ServerHttpResponse response = exchange.getResponse();
    if (!admission.isAdmitted()) {
      response.setStatusCode(HttpStatus.SERVICE_UNAVAILABLE);
      admission.writeRejectHeaders(response.getHeaders()::set);
      return response.setComplete();
    }
    // The chain runs from here, on this thread: no queue of the server's own lies between the
    // decision and the handler, and a handler awaiting a downstream reply is not waiting in one.
    admission.started(admission.decidedAtNanos());
    Mono<Void> served = chain.filter(exchange);
    RequestBudget budget = admission.budget();
    if (budget != null) {
      served = served.contextWrite(SpillwayReactor.withBudget(budget));
    }
    End end = new End(admission, response);
    return served
        .onErrorResume(e -> SpillwayHttpGate.budgetExceeded(e) != null && !response.isCommitted(),
            e -> {
              response.setStatusCode(HttpStatus.SERVICE_UNAVAILABLE);
              admission.end(HttpStatus.SERVICE_UNAVAILABLE.value(), e);
              admission.writeAbortHeaders(response.getHeaders()::set);
              return response.setComplete();
            })
        .doOnError(end.onError)
        .doFinally(end);
  }

  /** Ends the exchange's permit, once (later calls are ignored by the admission). */
  private static final class End implements Consumer<SignalType> {
    private final Admission admission;
    private final ServerHttpResponse response;
    private volatile Throwable error;
    final Consumer<Throwable> onError = e -> error = e;

    End(Admission admission, ServerHttpResponse response) {
      this.admission = admission;
      this.response = response;
    }

    @Override
    public void accept(SignalType signal) {
      switch (signal) {
        case ON_COMPLETE -> {
          HttpStatusCode status = response.getStatusCode();
          admission.end(status == null ? 200 : status.value(), null);
        }
        case ON_ERROR -> admission.end(500, error);
        default -> admission.end(Outcome.FAILED);
      }
    }
  }
}
