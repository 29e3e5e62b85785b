package io.spillway.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.spring.reactive.WebFluxTestApp;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * The starter in front of WebFlux on Reactor Netty, default properties but for the reject status,
 * set to 503 (the servlet tests see the default, 429).
 */
@SpringBootTest(classes = WebFluxTestApp.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"spring.main.web-application-type=reactive", "spillway.reject-status=503"})
class StarterWebFluxTest {

  @LocalServerPort
  int port;
  @Autowired
  ServerQueueDelay delay;
  @Autowired
  SpillwayHttpGate gate;

  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  @AfterEach
  void reset() {
    WebFluxTestApp.STAGE_DELAY.set(0);
  }

  @Test
  void anAdmittedExchangeCarriesItsBudgetInTheReactorContext() throws Exception {
    HttpResponse<String> r = get();
    assertEquals(200, r.statusCode());
    long budget = Long.parseLong(r.body());
    assertTrue(budget > 0 && budget <= SpillwayProperties.DEFAULT_SLO_MILLIS * 1_000_000, r.body());
    assertTrue(delay.stageNames().contains("netty-event-loops"), delay.stageNames().toString());
    assertTrue(delay.stageNames().contains("downstreamPool"), delay.stageNames().toString());
  }

  @Test
  void aDelayedServerAnswers503WithRetryAfter() throws Exception {
    WebFluxTestApp.STAGE_DELAY.set(Duration.ofMillis(1500).toNanos()); // past 2 d_t = 80 ms
    HttpResponse<String> r = get();
    assertEquals(503, r.statusCode());
    assertEquals("2", r.headers().firstValue("Retry-After").orElseThrow());
    assertTrue(Long.parseLong(r.headers().firstValue(SpillwayHttpHeaders.RETRY_PUSHBACK_MS)
        .orElseThrow()) >= 1500);
    assertEquals(1, gate.endpoints().get(0).stats().decisions(io.spillway.api.Status.REJECTED_AQM));
  }

  private HttpResponse<String> get() throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/budget"))
        .build(), HttpResponse.BodyHandlers.ofString());
  }
}
