package io.spillway.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.spillway.api.Cancellable;
import io.spillway.api.Scheduler;
import io.spillway.credit.Spillway;
import io.spillway.spring.app.ManualTicker;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpMethod;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.client.ClientHttpResponse;
import org.springframework.mock.http.client.MockClientHttpRequest;

/**
 * The client filters' bookkeeping of a session's requests, driven in virtual time: a manual
 * clock, a scheduler that never runs its tasks, and a server's credit stream that answers as it
 * is opened.
 */
class HttpClientFiltersTest {

  private static final URI SERVER = URI.create("http://svc:8080/orders");
  private static final long SLO_NANOS = 50_000_000;

  private final ManualTicker ticker = new ManualTicker();
  private final List<Runnable> timers = new ArrayList<>();
  private final Scheduler scheduler = (task, delayNanos) -> {
    timers.add(task);
    return () -> timers.remove(task);
  };
  /** A Spillway server's streams: each is answered as it opens, with one gate. */
  private final SpillwayHttpSession.CreditStreams streams = new SpillwayHttpSession.CreditStreams() {
    @Override
    public Cancellable open(URI stream, long sessionId, Listener listener) {
      listener.opened(null, null);
      return () -> { };
    }

    @Override
    public void deregister(URI stream, long sessionId, String streamKey) { }

    @Override
    public void demand(URI stream, long sessionId, String streamKey, int gate, int demand) { }
  };
  private final SpillwayHttpSessions sessions = new SpillwayHttpSessions(SLO_NANOS,
      Spillway::forSloNanos, ticker, scheduler, streams);

  @AfterEach
  void close() {
    sessions.close();
  }

  /**
   * A response whose status line cannot be read (a read timeout: a {@code RestTemplate} on the
   * JDK's {@code HttpURLConnection} reads it only as the status is asked for, after the body was
   * sent) fails the call; the request it released must end with it, or the session counts it in
   * flight for good, holding the credit it took, and the next request waits for a credit that
   * never comes back.
   */
  @Test
  void aResponseWhoseStatusCannotBeReadEndsTheRequestAndReturnsItsCredit() throws IOException {
    SpillwayRestClientInterceptor interceptor = new SpillwayRestClientInterceptor(
        new RetryPushback(ticker), sessions);
    List<Boolean> closed = new ArrayList<>();
    ClientHttpResponse unreadable = new ClientHttpResponse() {
      @Override
      public HttpStatusCode getStatusCode() throws IOException {
        throw new SocketTimeoutException("Read timed out");
      }

      @Override
      public String getStatusText() throws IOException {
        throw new SocketTimeoutException("Read timed out");
      }

      @Override
      public HttpHeaders getHeaders() {
        return new HttpHeaders();
      }

      @Override
      public InputStream getBody() {
        return new ByteArrayInputStream(new byte[0]);
      }

      @Override
      public void close() {
        closed.add(true);
      }
    };

    assertThatThrownBy(() -> interceptor.intercept(
        new MockClientHttpRequest(HttpMethod.POST, SERVER), new byte[] {1},
        (request, body) -> unreadable)).isInstanceOf(SocketTimeoutException.class);

    SpillwayHttpSession session = sessions.of(SERVER);
    // the first request registered the session with its one credit: back with the failure
    SpillwayHttpSession.Ticket next = session.offer("/orders");
    assertThat(next.released()).as("the next request gets the failed one's credit").isDone();
    assertThat(session.queued()).isZero();
    assertThat(closed).as("the response the caller never gets is closed").containsExactly(true);
  }
}
