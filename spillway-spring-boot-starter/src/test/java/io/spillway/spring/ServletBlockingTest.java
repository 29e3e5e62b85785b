package io.spillway.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.Status;
import io.spillway.spring.app.MvcTestApp;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * Servlet requests whose handlers block (a database, a downstream call) hold their threads
 * without anyone waiting behind them, and the default scheme's plain-client limit counts only
 * requests waiting to run: many blocked at once are all served. The control loop never runs here
 * ({@link StandingStillScheduler}), so the limit stays at the parallelism it starts from, 2:
 * counted in flight, every request past the second was refused. The requests go in one after
 * another, each once the one before holds its handler: sent all at once, three could be between
 * admission and their handlers together on a busy machine, and the third be refused for that.
 */
@SpringBootTest(classes = {MvcTestApp.class, StandingStillScheduler.class},
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = "spillway.parallelism=2")
class ServletBlockingTest {

  @LocalServerPort
  int port;
  @Autowired
  SpillwayHttpGate gate;

  @Test
  void requestsBlockedInTheirHandlersDoNotFillTheLimit() throws Exception {
    int requests = 24;
    CountDownLatch hold = new CountDownLatch(1);
    CountDownLatch entered = new CountDownLatch(requests);
    MvcTestApp.HOLD.set(hold);
    HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    List<CompletableFuture<HttpResponse<String>>> sent = new ArrayList<>();
    try {
      // One at a time, each sent once the one before is inside its handler: so no two are ever
      // between admission and their handler together, and the limit of 2 decides only on what
      // the blocked handlers hold. Counted in flight, the third would be refused.
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      for (int i = 0; i < requests; i++) {
        CountDownLatch in = new CountDownLatch(1); // its handler counts it down on entry
        MvcTestApp.ENTERED.set(in);
        CompletableFuture<HttpResponse<String>> r = http.sendAsync(HttpRequest.newBuilder(
            URI.create("http://127.0.0.1:" + port + "/work?hold=true")).build(),
            HttpResponse.BodyHandlers.ofString());
        sent.add(r);
        // liveness only: inside its handler, or answered (refused) meanwhile
        while (!in.await(5, TimeUnit.MILLISECONDS) && !r.isDone()
            && System.nanoTime() < deadline) {
          // waiting
        }
        if (in.getCount() > 0) {
          break;
        }
        entered.countDown();
      }
      assertEquals(0, entered.getCount(), (requests - entered.getCount()) + " of " + requests
          + " handlers entered; refused for the limit: " + refusedForLimit());
    } finally {
      hold.countDown();
    }
    for (CompletableFuture<HttpResponse<String>> r : sent) {
      HttpResponse<String> response = r.get(20, TimeUnit.SECONDS);
      assertEquals(200, response.statusCode(), response.headers().map().toString());
    }
    assertTrue(refusedForLimit() == 0);
  }

  private long refusedForLimit() {
    return gate.endpoints().stream().mapToLong(e -> e.stats().decisions(Status.REJECTED_LIMIT)).sum();
  }
}
