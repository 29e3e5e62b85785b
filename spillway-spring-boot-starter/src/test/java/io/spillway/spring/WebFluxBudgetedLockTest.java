package io.spillway.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.spillway.api.Outcome;
import io.spillway.api.Status;
import io.spillway.spring.reactive.WebFluxTestApp;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * A WebFlux service layer that blocks on a {@code BudgetedLock}, run on a worker thread as blocking
 * code is in WebFlux: {@link SpillwayReactor#fromCallable} brings the exchange's budget from the
 * Reactor context into {@code RequestBudget.CURRENT} there, so the lock refuses a request whose
 * wait would outlast it and the starter answers {@code 429}.
 */
@SpringBootTest(classes = WebFluxTestApp.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = "spring.main.web-application-type=reactive")
class WebFluxBudgetedLockTest {

  @LocalServerPort
  int port;
  @Autowired
  SpillwayHttpGate gate;

  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .build();

  @Test
  void blockingCodeOnAWorkerFindsTheExchangesBudgetInScope() throws Exception {
    HttpResponse<String> r = get("/budget-in-scope");
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(Long.parseLong(r.body())).isPositive()
        .isLessThanOrEqualTo(SpillwayProperties.DEFAULT_SLO_MILLIS * 1_000_000);
  }

  @Test
  void aLockWhoseQueueWouldOutlastTheBudgetIsRefusedAtOnce() throws Exception {
    GateStats stats = gate.endpoints().get(0).stats();
    long abortedBefore = stats.completions(Outcome.ABORTED);
    CountDownLatch waiterDone = new CountDownLatch(1);
    Thread waiter;
    WebFluxTestApp.STOCK.lock();
    try {
      // another request's thread queues behind the holder; then a second of the lock's clock passes
      waiter = Thread.ofPlatform().start(() -> {
        WebFluxTestApp.STOCK.lock();
        WebFluxTestApp.STOCK.unlock();
        waiterDone.countDown();
      });
      while (WebFluxTestApp.STOCK.waiters() == 0) {
        Thread.onSpinWait();
      }
      WebFluxTestApp.LOCK_TICKER.advanceMillis(1000); // past any budget of a 100 ms SLO

      HttpResponse<String> r = get("/stock");
      assertThat(r.statusCode()).isEqualTo(429);
      assertThat(r.headers().firstValue(SpillwayHttpHeaders.STATUS))
          .hasValue(Integer.toString(Status.REJECTED_BUDGET.code()));
      assertThat(r.headers().firstValue("Retry-After")).isPresent();
      assertThat(stats.completions(Outcome.ABORTED)).isEqualTo(abortedBefore + 1);
    } finally {
      WebFluxTestApp.STOCK.unlock();
    }
    waiterDone.await();
    waiter.join();
    // with the queue gone, the same call takes the lock
    assertThat(get("/stock").body()).isEqualTo("reserved");
  }

  private HttpResponse<String> get(String path) throws Exception {
    // the timeout only ends a request that would otherwise wait on the lock for good
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
        .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
  }
}
