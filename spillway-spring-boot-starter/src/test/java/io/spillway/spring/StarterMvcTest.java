package io.spillway.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.Status;
import io.spillway.spring.app.ManualTicker;
import io.spillway.spring.app.MvcTestApp;
import io.spillway.spring.internal.MeasuredExecutor;
import io.spillway.spring.internal.TomcatWorkersCustomizer;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * An application with the starter and its default properties, on a real Tomcat with one worker
 * thread (so that requests queue for it), on a clock its handlers move: protected without any
 * configuration.
 */
@SpringBootTest(classes = MvcTestApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"server.tomcat.threads.max=1", "server.tomcat.threads.min-spare=1",
        "management.endpoints.web.exposure.include=spillway,metrics"})
class StarterMvcTest {

  @LocalServerPort
  int port;
  @Autowired
  SpillwayHttpGate gate;
  @Autowired
  TomcatWorkersCustomizer workers;
  @Autowired
  ManualTicker ticker;
  @Autowired
  io.spillway.spring.internal.ServletStages stages;


  @AfterEach
  void allPermitsEnded() throws Exception {
    waitUntil(() -> gate.inFlight() == 0);
  }

  @Test
  void aFloodBehindASlowHandlerIsShedWith429AndRetryAfter() throws Exception {
    MeasuredExecutor executor = workers.measured();
    assertNotNull(executor, "Tomcat's workers are measured");
    CountDownLatch hold = new CountDownLatch(1);
    CountDownLatch entered = new CountDownLatch(1);
    MvcTestApp.HOLD.set(hold);
    MvcTestApp.ENTERED.set(entered);
    long before = executor.submitted();
    long rejectedBefore = totalRejected();
    CompletableFuture<HttpResponse<String>> first = send("/work?ms=20&hold=true");
    if (!entered.await(30, java.util.concurrent.TimeUnit.SECONDS)) {
      throw new AssertionError("the held request never reached its handler: " + first.get());
    }
    // Every other request queues behind the held one for the only worker thread.
    int flood = 20;
    List<CompletableFuture<HttpResponse<String>>> rest = new ArrayList<>();
    for (int i = 0; i < flood; i++) {
      rest.add(send("/work?ms=20"));
    }
    long submittedBefore = before;
    waitUntil(() -> executor.submitted() >= submittedBefore + 1 + flood);
    hold.countDown();
    assertEquals(200, first.get().statusCode());
    int ok = 0;
    int shed = 0;
    for (CompletableFuture<HttpResponse<String>> f : rest) {
      HttpResponse<String> r = f.get();
      if (r.statusCode() == 200) {
        ok++;
      } else {
        // the default status: Tomcat keeps an HTTP/1.1 connection open after a 429 (not a 503)
        assertEquals(429, r.statusCode(), r.toString());
        assertTrue(r.headers().firstValue("Connection").isEmpty(), r.headers().toString());
        long retryAfter = Long.parseLong(r.headers().firstValue("Retry-After").orElseThrow());
        assertTrue(retryAfter >= 1, "Retry-After " + retryAfter);
        assertTrue(r.headers().firstValue(SpillwayHttpHeaders.RETRY_PUSHBACK_MS).isPresent());
        int status = Integer.parseInt(r.headers().firstValue(SpillwayHttpHeaders.STATUS).orElseThrow());
        assertTrue(Status.fromCode(status).isShed(), "status " + status);
        shed++;
      }
    }
    // Each served request spends 20 ms of virtual time while the rest wait, so the oldest waiter
    // passes the AQM threshold (2 d_t = 80 ms for the default 100 ms SLO) after a few.
    assertTrue(shed >= 1, "no request shed: ok=" + ok);
    assertTrue(ok >= 1, "nothing served after the flood: shed=" + shed);
    assertEquals(shed, totalRejected() - rejectedBefore);
  }

  private long totalRejected() {
    GateStats s = gate.endpoints().get(0).stats();
    long n = 0;
    for (Status st : Status.values()) {
      if (st.isRejection()) {
        n += s.decisions(st);
      }
    }
    return n;
  }

  @Test
  void theBudgetIsTheHeaderOrTheSloLessTheP99() throws Exception {
    HttpResponse<String> withHeader = LocalHttp.send(HttpRequest.newBuilder(uri("/budget"))
        .header(SpillwayHttpHeaders.BUDGET, "5000000").build());
    assertEquals("5000000", withHeader.body());
    HttpResponse<String> without = get("/budget");
    long budget = Long.parseLong(without.body());
    assertTrue(budget > 0 && budget <= SpillwayProperties.DEFAULT_SLO_MILLIS * 1_000_000,
        "budget " + budget + ", p99 " + gate.endpoints().get(0).p99ServiceNanos(ticker.read())
            + ", workers " + workers.route());
  }

  @Test
  void malformedHeadersAreIgnoredAndLoggedOncePerClient() throws Exception {
    long before = gate.malformedHeaderWarnings();
    for (int i = 0; i < 3; i++) {
      HttpResponse<String> r = LocalHttp.send(HttpRequest.newBuilder(uri("/budget"))
          .header(SpillwayHttpHeaders.BUDGET, "soon").header(SpillwayHttpHeaders.DEMAND, "-1")
          .build());
      assertEquals(200, r.statusCode());
      assertTrue(Long.parseLong(r.body()) > 0, "the malformed budget counts as absent");
    }
    // One client (this test's loopback address), three malformed requests: one warning.
    assertEquals(before + 1, gate.malformedHeaderWarnings());
  }

  @Test
  void aBudgetAbortInTheServiceLayerIsAFastReject() throws Exception {
    long aborts = gate.endpoints().get(0).stats().budgetAborts();
    HttpResponse<String> r = get("/abort");
    assertEquals(429, r.statusCode());
    assertEquals(Integer.toString(Status.REJECTED_BUDGET.code()),
        r.headers().firstValue(SpillwayHttpHeaders.STATUS).orElseThrow());
    assertTrue(r.headers().firstValue("Retry-After").isPresent());
    assertEquals(aborts + 1, gate.endpoints().get(0).stats().budgetAborts());
  }

  @Test
  void actuatorShowsTheStateAndTheMeters() throws Exception {
    get("/work");
    HttpResponse<String> state = get("/actuator/spillway");
    assertEquals(200, state.statusCode());
    assertTrue(state.body().contains("\"tomcat-workers\""), state.body());
    assertEquals(1, stages.threads(), "the run slots' ceiling is Tomcat's thread count");
    if (System.getProperty("os.name", "").toLowerCase().contains("linux")) {
      assertTrue(state.body().contains("\"cpu-run-queue\""), state.body());
      assertTrue(state.body().contains("\"runSlots\""), state.body());
    }
    assertTrue(state.body().contains("\"admitted\""), state.body());
    HttpResponse<String> admitted = get("/actuator/metrics/spillway.requests.admitted");
    assertEquals(200, admitted.statusCode(), admitted.body());
    assertTrue(admitted.body().contains("\"endpoint\""), admitted.body());
    for (String meter : List.of("spillway.requests.rejected", "spillway.budget.aborts",
        "spillway.queue.delay", "spillway.credits.pool", "spillway.requests.completed",
        "spillway.price", "spillway.limit", "spillway.limit.waiting")) {
      assertEquals(200, get("/actuator/metrics/" + meter).statusCode(), meter);
    }
  }

  private final java.util.concurrent.locks.ReentrantLock ledger = new java.util.concurrent.locks.ReentrantLock();
  private volatile long ledgerSum;

  /** A service-layer critical section that four threads take in turn. */
  void ledgerUpdate() {
    ledger.lock();
    try {
      long x = 0;
      for (int i = 0; i < 20_000; i++) {
        x += i * 31L;
      }
      ledgerSum = x;
    } finally {
      ledger.unlock();
    }
  }

  @Test
  void theLocksPartRanksTheLockRequestsQueueForWhileTheApplicationServes() throws Exception {
    java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      threads.add(Thread.ofPlatform().start(() -> {
        while (!stop.get()) {
          ledgerUpdate();
        }
      }));
    }
    HttpResponse<String> profile;
    try {
      profile = get("/actuator/spillway/locks?seconds=1");
    } finally {
      stop.set(true);
      for (Thread t : threads) {
        t.join();
      }
    }
    assertEquals(200, profile.statusCode(), profile.body());
    String body = profile.body();
    int firstSite = body.indexOf("\"site\"");
    assertTrue(firstSite > 0, body);
    String first = body.substring(firstSite, body.indexOf(',', firstSite));
    assertTrue(first.contains(getClass().getName() + ".ledgerUpdate"), "the ledger's lock ranks first: " + body);
    assertTrue(body.contains("\"seconds\":1"), body);

    assertEquals(400, get("/actuator/spillway/locks?seconds=0").statusCode());
    assertEquals(400, get("/actuator/spillway/locks?seconds=61").statusCode());
    assertEquals(404, get("/actuator/spillway/nothing").statusCode());
  }

  @Test
  void theRestClientFilterHonoursARejectAndCarriesTheBudget() throws Exception {
    RetryPushback pushback = new RetryPushback(ticker);
    org.springframework.web.client.RestClient client = org.springframework.web.client.RestClient
        .builder().baseUrl("http://127.0.0.1:" + port)
        .requestInterceptor(new SpillwayRestClientInterceptor(pushback)).build();
    String budget = java.lang.ScopedValue.where(io.spillway.api.RequestBudget.CURRENT,
        io.spillway.api.RequestBudget.of(4_000_000)).call(() -> client.get().uri("/budget")
            .retrieve().body(String.class));
    assertEquals("4000000", budget, "the caller's budget reaches the callee");
    long served = gate.endpoints().get(0).stats().admitted();
    int status = client.get().uri("/abort").exchange((request, response) -> response.getStatusCode().value());
    assertEquals(429, status);
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> client.get().uri("/work").retrieve()
        .body(String.class)).isInstanceOf(SpillwayRejectedException.class);
    assertEquals(served + 1, gate.endpoints().get(0).stats().admitted(),
        "the held-off request never reached the server");
  }

  private HttpResponse<String> get(String path) throws Exception {
    return LocalHttp.get(port, path);
  }

  private CompletableFuture<HttpResponse<String>> send(String path) {
    return LocalHttp.sendAsync(port, path);
  }

  private URI uri(String path) {
    return LocalHttp.uri(port, path);
  }

  static void waitUntil(java.util.function.BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + 30_000_000_000L;
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("condition not met within 30 s");
      }
      java.util.concurrent.locks.LockSupport.parkNanos(1_000_000); // polls a condition
    }
  }
}
