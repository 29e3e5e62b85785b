package io.spillway.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.spillway.spring.reactive.WebFluxTestApp;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * A WebFlux handler that awaits a downstream reply holds its exchange open without a thread and
 * without anyone queued behind it. The default scheme's plain-client limit counts requests waiting
 * to run, so many such exchanges at once are all served. The control loop never runs here (a
 * scheduler that does not fire), so the limit stays at the parallelism it starts from, 2: counted
 * in flight, every exchange past the second was refused. The clock is real here, and a cold
 * server's event loops stall for tens of milliseconds while 24 connections arrive at once; a long
 * SLO keeps AQM (at 2·d_t) out of what this test is about.
 */
@SpringBootTest(classes = {WebFluxTestApp.class, StandingStillScheduler.class},
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"spring.main.web-application-type=reactive", "spillway.parallelism=2",
        "spillway.slo=60s"})
class WebFluxAwaitingTest {

  @LocalServerPort
  int port;
  @Autowired
  SpillwayHttpGate gate;

  @Test
  void exchangesAwaitingADownstreamReplyDoNotFillTheLimit() throws Exception {
    int exchanges = 24;
    CompletableFuture<String> reply = new CompletableFuture<>();
    WebFluxTestApp.downstream = reply;
    CompletableFuture<Void> allEntered = new CompletableFuture<>();
    java.util.concurrent.atomic.AtomicInteger entered = new java.util.concurrent.atomic.AtomicInteger();
    WebFluxTestApp.downstreamEntered = () -> {
      if (entered.incrementAndGet() == exchanges) {
        allEntered.complete(null);
      }
    };
    HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    try {
      List<CompletableFuture<HttpResponse<String>>> sent = new ArrayList<>();
      for (int i = 0; i < exchanges; i++) {
        sent.add(http.sendAsync(HttpRequest.newBuilder(
            URI.create("http://127.0.0.1:" + port + "/downstream")).build(),
            HttpResponse.BodyHandlers.ofString()));
      }
      SpillwayHttpGate.Endpoint endpoint = gate.endpoints().get(0);
      // every exchange in its handler at once, or one answered (refused) meanwhile
      CompletableFuture.anyOf(allEntered, CompletableFuture.anyOf(sent.toArray(CompletableFuture[]::new)))
          .get(20, TimeUnit.SECONDS);
      reply.complete("replied");
      for (CompletableFuture<HttpResponse<String>> r : sent) {
        HttpResponse<String> response = r.get(20, TimeUnit.SECONDS);
        assertEquals(200, response.statusCode(), response.headers().map().toString());
        assertEquals("replied", response.body());
      }
      assertEquals(0, endpoint.stats().decisions(io.spillway.api.Status.REJECTED_LIMIT));
    } finally {
      reply.complete("replied");
      WebFluxTestApp.downstream = CompletableFuture.completedFuture("ready");
      WebFluxTestApp.downstreamEntered = () -> { };
    }
  }
}
