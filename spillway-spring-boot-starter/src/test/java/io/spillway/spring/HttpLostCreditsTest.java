package io.spillway.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.spillway.api.Status;
import io.spillway.api.Ticker;
import io.spillway.spring.credits.CreditsTestApp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.http.client.ClientHttpRequestInterceptor;
import org.springframework.http.client.ClientHttpResponse;
import org.springframework.web.client.RestClient;
import org.springframework.web.reactive.function.client.ExchangeFilterFunction;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.publisher.Mono;

/**
 * A client that loses answers the server granted credits in: its caller gives up on a call just
 * after the server answered, so the answer's {@code Spillway-Credit-Delta} is never read, while it
 * reads the answers that took credits back. Its count of the window, summed from the deltas it
 * read, falls to nothing while the server holds the window open, and the server sends explicit
 * credits only to a session whose window is empty (breakwater-osdi20 §3.3): counting deltas
 * alone, the client waits for a credit that never comes and its later calls expire, until the
 * server evicts the idle session after 10 s. With the window on every credit message ({@code
 * Spillway-Credit-Window}) the client takes the server's window as it is, and its calls go on.
 *
 * <p>Real Tomcat, real sockets, the system clock, the starter's default scheme on both sides; the
 * client a {@code RestClient} (a read timeout) or a {@code WebClient} (an error in the exchange,
 * as its {@code timeout()} leaves one).
 */
@SpringBootTest(classes = CreditsTestApp.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class HttpLostCreditsTest {

  /** Bursts the lossy phase may take to drive the client's count of the window to nothing. */
  private static final int MOST_LOSSY_BURSTS = 50;
  /**
   * Calls per burst: the demand each reports (its session's queue, breakwater-osdi20 §3.2) rises
   * and falls with the burst, and the server's window with it, in grants and revocations.
   */
  private static final int BURST = 8;

  @LocalServerPort
  int port;
  @Autowired
  SpillwayHttpGate gate;

  /**
   * What a filter between Spillway's and the transport does while {@link #losing}: an answer
   * whose delta grants credits is dropped unread, and its call fails with no Spillway header
   * seen. {@link #count} is the window as a client that reads deltas alone counts it: one credit
   * for the registering call, plus every delta it read.
   */
  private static final class Losses {
    volatile boolean losing = true;
    private int count = 1;
    private int lost;

    synchronized int count() {
      return count;
    }

    synchronized int lost() {
      return lost;
    }

    /** Whether the answer with {@code delta} (its header, {@code null} if none) is lost. */
    synchronized boolean lose(String delta) {
      int d = delta == null ? 0 : Integer.parseInt(delta);
      if (losing && d > 0) {
        lost++;
        return true;
      }
      count += d;
      return false;
    }
  }

  /** Between Spillway's interceptor and the transport: a lost answer fails as a read timeout. */
  private static ClientHttpRequestInterceptor losing(Losses losses) {
    return (request, body, execution) -> {
      ClientHttpResponse response = execution.execute(request, body);
      if (losses.lose(response.getHeaders().getFirst(SpillwayHttpHeaders.CREDIT_DELTA))) {
        response.close();
        throw new java.net.SocketTimeoutException("the caller gave up; answer unread");
      }
      return response;
    };
  }

  /** Between Spillway's filter and the transport: a lost answer fails the exchange. */
  private static ExchangeFilterFunction losingExchange(Losses losses) {
    return (request, next) -> next.exchange(request).flatMap(response -> losses.lose(
        response.headers().asHttpHeaders().getFirst(SpillwayHttpHeaders.CREDIT_DELTA))
        ? response.releaseBody().then(Mono.error(
            new java.util.concurrent.TimeoutException("the caller gave up; answer unread")))
        : Mono.just(response));
  }

  @Test
  void aRestClientWhoseGrantsWereLostGoesOnCalling() throws Exception {
    Losses losses = new Losses();
    try (SpillwayHttpSessions sessions = new SpillwayHttpSessions(Duration.ofSeconds(1))) {
      RestClient client = RestClient.builder().baseUrl("http://127.0.0.1:" + port)
          .requestInterceptor(new SpillwayRestClientInterceptor(new RetryPushback(Ticker.system()),
              sessions))
          .requestInterceptor(losing(losses))
          .build();
      goesOnAfterLosingGrants(losses, () -> client.get().uri("/work").retrieve()
          .body(String.class));
    }
  }

  @Test
  void aWebClientWhoseGrantsWereLostGoesOnCalling() throws Exception {
    Losses losses = new Losses();
    try (SpillwayHttpSessions sessions = new SpillwayHttpSessions(Duration.ofSeconds(1))) {
      WebClient client = WebClient.builder().baseUrl("http://127.0.0.1:" + port)
          .filter(new SpillwayWebClientFilter(new RetryPushback(Ticker.system()), sessions))
          .filter(losingExchange(losses))
          .build();
      goesOnAfterLosingGrants(losses, () -> client.get().uri("/work").retrieve()
          .bodyToMono(String.class).block());
    }
  }

  /**
   * Calls in bursts, losing grants until the client's count of the window from the deltas it read
   * is nothing, then one at a time, reading every answer: these calls must be answered, each
   * within a bound under the server's 10 s idle eviction, which would start the session afresh.
   */
  private void goesOnAfterLosingGrants(Losses losses, Callable<String> call) throws Exception {
    ExecutorService caller = Executors.newFixedThreadPool(BURST);
    try {
      for (int i = 0; i < MOST_LOSSY_BURSTS && losses.count() > 0; i++) {
        List<Future<String>> burst = new ArrayList<>();
        for (int j = 0; j < BURST; j++) {
          burst.add(caller.submit(call));
        }
        for (Future<String> c : burst) {
          try {
            c.get(8, TimeUnit.SECONDS);
          } catch (ExecutionException lostOrExpired) {
            // a lost answer fails its call; the test is about the calls after
          }
        }
      }
      assertThat(losses.count()).as("the client's count of the window, from the deltas it read,"
          + " after %d grants lost", losses.lost()).isLessThanOrEqualTo(0);
      losses.losing = false;
      List<String> answers = new ArrayList<>();
      for (int i = 0; i < 5; i++) {
        answers.add(caller.submit(call).get(8, TimeUnit.SECONDS));
      }
      assertThat(answers).containsOnly("ok").hasSize(5);
    } finally {
      caller.shutdownNow();
    }
    assertThat(gate.endpoints().get(0).stats().decisions(Status.REJECTED_NO_CREDIT)).isZero();
  }
}
