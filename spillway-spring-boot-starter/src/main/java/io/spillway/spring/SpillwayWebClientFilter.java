package io.spillway.spring;

import io.spillway.api.RequestBudget;
import io.spillway.api.Ticker;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletionException;
import org.springframework.web.reactive.function.client.ClientRequest;
import org.springframework.web.reactive.function.client.ClientResponse;
import org.springframework.web.reactive.function.client.ExchangeFilterFunction;
import org.springframework.web.reactive.function.client.ExchangeFunction;
import reactor.core.publisher.Mono;

/**
 * For {@code WebClient}: the reactive twin of {@link SpillwayRestClientInterceptor}. The budget
 * comes from the Reactor context ({@link SpillwayReactor#BUDGET_KEY}, put there by the starter's
 * WebFilter); a server that asked to wait is not called until then; and, given {@link
 * SpillwayHttpSessions}, a request waits for its session's credit without blocking a thread (a
 * cancelled exchange withdraws it).
 *
 * <pre>{@code
 * WebClient client = WebClient.builder().filter(new SpillwayWebClientFilter(pushback, sessions))
 *     .build();
 * }</pre>
 *
 * <p>Thread-safe; non-blocking.
 */
public final class SpillwayWebClientFilter implements ExchangeFilterFunction {

  private final RetryPushback pushback;
  private final SpillwayHttpSessions sessions;

  /**
   * @param sessions the sessions with the servers called, or {@code null} to send at once
   *     (budget and pushback only)
   */
  public SpillwayWebClientFilter(RetryPushback pushback, SpillwayHttpSessions sessions) {
    this.pushback = Objects.requireNonNull(pushback, "pushback");
    this.sessions = sessions;
  }

  /** Budget and pushback only: requests are sent at once. */
  public SpillwayWebClientFilter(RetryPushback pushback) {
    this(pushback, null);
  }

  /** With its own pushback memory on the system clock, and no sessions. */
  public SpillwayWebClientFilter() {
    this(new RetryPushback(Ticker.system()));
  }

  @Override
  public Mono<ClientResponse> filter(ClientRequest request, ExchangeFunction next) {
    return Mono.deferContextual(context -> {
      String server = SpillwayRestClientInterceptor.server(request.url());
      pushback.checkBeforeSending(server);
      RequestBudget budget = SpillwayReactor.budget(context);
      ClientRequest withBudget = request;
      if (budget != null && !request.headers().containsHeader(SpillwayHttpHeaders.BUDGET)) {
        withBudget = ClientRequest.from(request)
            .header(SpillwayHttpHeaders.BUDGET, Long.toString(budget.remainingNanos())).build();
      }
      if (sessions == null) {
        return exchange(withBudget, next, server);
      }
      ClientRequest toSend = withBudget;
      SpillwayHttpSession session = sessions.of(request.url());
      SpillwayHttpSession.Ticket ticket = session.offer(request.url().getRawPath());
      return Mono.fromFuture(ticket.released(), true)
          .onErrorMap(CompletionException.class, Throwable::getCause)
          .timeout(Duration.ofNanos(session.maxWaitNanos()),
              Mono.error(() -> new SpillwayRejectedException(io.spillway.api.Status.EXPIRED, 0)))
          .flatMap(released -> {
            ClientRequest.Builder b = ClientRequest.from(toSend);
            SpillwayRestClientInterceptor.writeSessionHeaders(released,
                toSend.headers()::getFirst, (name, value) -> b.headers(h -> h.set(name, value)));
            return exchange(b.build(), next, server).doOnNext(response -> session.onAnswer(
                released, response.statusCode().value(),
                response.headers().asHttpHeaders()::getFirst));
          })
          .doOnError(e -> session.abandon(ticket))
          .doOnCancel(() -> session.abandon(ticket));
    });
  }

  private Mono<ClientResponse> exchange(ClientRequest request, ExchangeFunction next,
      String server) {
    return next.exchange(request).doOnNext(response -> pushback.onResponse(server,
        response.statusCode().value(),
        response.headers().asHttpHeaders().getFirst(SpillwayHttpHeaders.RETRY_PUSHBACK_MS),
        response.headers().asHttpHeaders().getFirst(SpillwayHttpHeaders.RETRY_AFTER)));
  }
}
