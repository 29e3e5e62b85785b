package io.spillway.spring;

import io.spillway.api.RequestBudget;
import io.spillway.api.Ticker;
import java.util.Objects;
import org.springframework.web.reactive.function.client.ClientRequest;
import org.springframework.web.reactive.function.client.ClientResponse;
import org.springframework.web.reactive.function.client.ExchangeFilterFunction;
import org.springframework.web.reactive.function.client.ExchangeFunction;
import reactor.core.publisher.Mono;

/**
 * For {@code WebClient}: the reactive twin of {@link SpillwayRestClientInterceptor}. The budget
 * comes from the Reactor context ({@link SpillwayReactor#BUDGET_KEY}, put there by the starter's
 * WebFilter); a server that asked to wait is not called until then.
 *
 * <pre>{@code
 * WebClient client = WebClient.builder().filter(new SpillwayWebClientFilter(pushback)).build();
 * }</pre>
 *
 * <p>Thread-safe; non-blocking.
 */
public final class SpillwayWebClientFilter implements ExchangeFilterFunction {

  private final RetryPushback pushback;

  public SpillwayWebClientFilter(RetryPushback pushback) {
    this.pushback = Objects.requireNonNull(pushback, "pushback");
  }

  /** With its own pushback memory on the system clock. */
  public SpillwayWebClientFilter() {
    this(new RetryPushback(Ticker.system()));
  }

  @Override
  public Mono<ClientResponse> filter(ClientRequest request, ExchangeFunction next) {
    return Mono.deferContextual(context -> {
      String server = SpillwayRestClientInterceptor.server(request.url());
      pushback.checkBeforeSending(server);
      RequestBudget budget = SpillwayReactor.budget(context);
      ClientRequest sent = request;
      if (budget != null && !request.headers().containsHeader(SpillwayHttpHeaders.BUDGET)) {
        sent = ClientRequest.from(request)
            .header(SpillwayHttpHeaders.BUDGET, Long.toString(budget.remainingNanos())).build();
      }
      return next.exchange(sent).doOnNext(response -> pushback.onResponse(server,
          response.statusCode().value(),
          response.headers().asHttpHeaders().getFirst(SpillwayHttpHeaders.RETRY_PUSHBACK_MS),
          response.headers().asHttpHeaders().getFirst(SpillwayHttpHeaders.RETRY_AFTER)));
    });
  }
}
