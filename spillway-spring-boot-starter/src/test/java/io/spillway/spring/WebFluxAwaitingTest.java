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
 * in flight, every exchange past the second was refused.
 */
@SpringBootTest(classes = {WebFluxTestApp.class, StandingStillScheduler.class},
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"spring.main.web-application-type=reactive", "spillway.parallelism=2"})
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
    HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    try {
      List<CompletableFuture<HttpResponse<String>>> sent = new ArrayList<>();
      for (int i = 0; i < exchanges; i++) {
        sent.add(http.sendAsync(HttpRequest.newBuilder(
            URI.create("http://127.0.0.1:" + port + "/downstream")).build(),
            HttpResponse.BodyHandlers.ofString()));
      }
      SpillwayHttpGate.Endpoint endpoint = gate.endpoints().get(0);
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      // liveness only: wait until every exchange was decided on (or one was refused)
      while (endpoint.stats().decisions(io.spillway.api.Status.OK) < exchanges
          && sent.stream().noneMatch(CompletableFuture::isDone) && System.nanoTime() < deadline) {
        Thread.sleep(5);
      }
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
    }
  }
}
