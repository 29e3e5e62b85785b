package io.spillway.spring;

import io.spillway.api.RequestBudget;
import io.spillway.api.Ticker;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.URI;
import java.util.Objects;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.springframework.http.HttpRequest;
import org.springframework.http.client.ClientHttpRequestExecution;
import org.springframework.http.client.ClientHttpRequestInterceptor;
import org.springframework.http.client.ClientHttpResponse;

/**
 * For {@code RestClient} (and {@code RestTemplate}): carries the budget of the request being
 * served ({@link RequestBudget#CURRENT}, bound by the starter's filter) to the callee as {@code
 * Spillway-Budget}, unless the caller set one, so the callee's budgeted locks see what is left of
 * the end-to-end budget; honours the callee's {@code 429}s and {@code 503}s through a {@link
 * RetryPushback}: requests to a server that asked to wait fail at once with a {@link
 * SpillwayRejectedException};
 * and, given {@link SpillwayHttpSessions}, speaks Spillway's credits with each server it calls
 * (a {@link SpillwayHttpSession} per server): a request waits on the calling thread until its
 * session holds a credit, and fails with a {@link SpillwayRejectedException} ({@code EXPIRED}) if
 * it waits past its session's queue timeout. A server that is not Spillway gets requests at once.
 *
 * <pre>{@code
 * RestClient client = RestClient.builder().baseUrl(url)
 *     .requestInterceptor(new SpillwayRestClientInterceptor(pushback, sessions)).build();
 * }</pre>
 *
 * <p>Thread-safe.
 */
public final class SpillwayRestClientInterceptor implements ClientHttpRequestInterceptor {

  private final RetryPushback pushback;
  private final SpillwayHttpSessions sessions;

  /**
   * @param sessions the sessions with the servers called, or {@code null} to send at once
   *     (budget and pushback only)
   */
  public SpillwayRestClientInterceptor(RetryPushback pushback, SpillwayHttpSessions sessions) {
    this.pushback = Objects.requireNonNull(pushback, "pushback");
    this.sessions = sessions;
  }

  /** Budget and pushback only: requests are sent at once. */
  public SpillwayRestClientInterceptor(RetryPushback pushback) {
    this(pushback, null);
  }

  /** With its own pushback memory on the system clock, and no sessions. */
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
    SpillwayHttpSession session = sessions == null ? null : sessions.of(request.getURI());
    SpillwayHttpSession.Ticket ticket = null;
    if (session != null) {
      ticket = session.offer(request.getURI().getRawPath());
      try {
        ticket.released().get(session.maxWaitNanos(), TimeUnit.NANOSECONDS);
      } catch (InterruptedException e) {
        session.abandon(ticket);
        Thread.currentThread().interrupt();
        throw new InterruptedIOException("interrupted while waiting for a credit");
      } catch (ExecutionException e) {
        throw (SpillwayRejectedException) e.getCause();
      } catch (TimeoutException e) {
        session.abandon(ticket);
        throw new SpillwayRejectedException(io.spillway.api.Status.EXPIRED, 0);
      }
      writeSessionHeaders(ticket, request.getHeaders()::getFirst, request.getHeaders()::set);
    }
    ClientHttpResponse response = null;
    int status;
    try {
      response = execution.execute(request, body);
      // may read the status line only now (HttpURLConnection after a body), and fail: a read
      // timeout ends the request as a failed connection does
      status = response.getStatusCode().value();
    } catch (IOException | RuntimeException | Error e) {
      if (ticket != null) {
        session.abandon(ticket);
      }
      if (response != null) {
        response.close(); // the caller never gets it to close
      }
      throw e;
    }
    if (ticket != null) {
      session.onAnswer(ticket, status, response.getHeaders()::getFirst);
    }
    pushback.onResponse(server, status,
        response.getHeaders().getFirst(SpillwayHttpHeaders.RETRY_PUSHBACK_MS),
        response.getHeaders().getFirst(SpillwayHttpHeaders.RETRY_AFTER));
    return response;
  }

  /**
   * Writes a released request's session fields; of two budgets, the one the request carries
   * already (the caller's, or what is left of the request being served) and the session's, the
   * nearer goes.
   */
  static void writeSessionHeaders(SpillwayHttpSession.Ticket ticket,
      java.util.function.Function<String, String> present,
      java.util.function.BiConsumer<String, String> set) {
    ticket.writeHeaders((name, value) -> {
      if (SpillwayHttpHeaders.BUDGET.equals(name)) {
        String before = present.apply(name);
        if (before != null) {
          try {
            if (Long.parseLong(before.trim()) <= Long.parseLong(value)) {
              return;
            }
          } catch (NumberFormatException malformed) {
            // the session's replaces it
          }
        }
      }
      set.accept(name, value);
    });
  }

  /** The key a server's pushback is kept under: its origin, as its session's. */
  static String server(URI uri) {
    return SpillwayHttpSessions.origin(uri);
  }
}
