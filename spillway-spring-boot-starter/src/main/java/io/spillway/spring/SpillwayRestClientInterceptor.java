package io.spillway.spring;

import io.spillway.api.RequestBudget;
import io.spillway.api.Ticker;
import java.io.IOException;
import java.net.URI;
import java.util.Objects;
import org.springframework.http.HttpRequest;
import org.springframework.http.client.ClientHttpRequestExecution;
import org.springframework.http.client.ClientHttpRequestInterceptor;
import org.springframework.http.client.ClientHttpResponse;

/**
 * For {@code RestClient} (and {@code RestTemplate}): carries the budget of the request being
 * served ({@link RequestBudget#CURRENT}, bound by the starter's filter) to the callee as {@code
 * Spillway-Budget}, unless the caller set one, so the callee's budgeted locks see what is left of
 * the end-to-end budget; and honours the callee's {@code 503}s through a {@link RetryPushback}:
 * requests to a server that asked to wait fail at once with a {@link SpillwayRejectedException}.
 *
 * <pre>{@code
 * RestClient client = RestClient.builder().baseUrl(url)
 *     .requestInterceptor(new SpillwayRestClientInterceptor(pushback)).build();
 * }</pre>
 *
 * <p>Over HTTP the client side is server-only protection's partner, not a credit session: a
 * servlet response's headers are sent before the handler's permit ends, so the credit delta cannot
 * ride on them (Spillway-aware credits between Spring services go over gRPC).
 *
 * <p>Thread-safe.
 */
public final class SpillwayRestClientInterceptor implements ClientHttpRequestInterceptor {

  private final RetryPushback pushback;

  public SpillwayRestClientInterceptor(RetryPushback pushback) {
    this.pushback = Objects.requireNonNull(pushback, "pushback");
  }

  /** With its own pushback memory on the system clock. */
  public SpillwayRestClientInterceptor() {
    this(new RetryPushback(Ticker.system()));
  }

  @Override
  public ClientHttpResponse intercept(HttpRequest request, byte[] body,
      ClientHttpRequestExecution execution) throws IOException {
    String server = server(request.getURI());
    pushback.checkBeforeSending(server);
    RequestBudget budget = RequestBudget.currentOrNull();
    if (budget != null && !request.getHeaders().containsHeader(SpillwayHttpHeaders.BUDGET)) {
      request.getHeaders().set(SpillwayHttpHeaders.BUDGET, Long.toString(budget.remainingNanos()));
    }
    ClientHttpResponse response = execution.execute(request, body);
    pushback.onResponse(server, response.getStatusCode().value(),
        response.getHeaders().getFirst(SpillwayHttpHeaders.RETRY_PUSHBACK_MS),
        response.getHeaders().getFirst(SpillwayHttpHeaders.RETRY_AFTER));
    return response;
  }

  static String server(URI uri) {
    return uri.getScheme() + "://" + uri.getHost() + ":" + uri.getPort();
  }
}
