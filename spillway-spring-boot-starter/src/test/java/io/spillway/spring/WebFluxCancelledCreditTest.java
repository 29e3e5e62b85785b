package io.spillway.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.spillway.api.AbstractServerPermit;
import io.spillway.api.ClientEnvironment;
import io.spillway.api.ClientGate;
import io.spillway.api.Outcome;
import io.spillway.api.OverloadScheme;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.ServerPermit;
import io.spillway.api.Status;
import io.spillway.credit.Spillway;
import io.spillway.spring.internal.HttpCreditStreams;
import io.spillway.spring.reactive.WebFluxTestApp;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * A session's request whose client goes away before the answer (a {@code WebClient} whose
 * {@code timeout()} cancels it, a caller that disconnects): its permit still ends at the gate, and
 * the credit delta of that end has no answer to ride in. It must reach the session all the same,
 * on its credit stream, or the client's window and the server's ledger part for good: the client
 * counts the request as ended without a credit, the server as ended with one. Here every end
 * grants one credit, so a delta that goes nowhere cannot pass for a zero one, and stamps it with
 * the window after it, which goes along (ResponseMetadata's class comment).
 */
@SpringBootTest(classes = {WebFluxTestApp.class, WebFluxCancelledCreditTest.OneCreditPerEnd.class},
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = "spring.main.web-application-type=reactive")
class WebFluxCancelledCreditTest {

  @LocalServerPort
  int port;
  @Autowired
  SpillwayHttpGate gate;

  @Test
  void theCreditOfARequestItsClientLeftGoesOnTheSessionsStream() throws Exception {
    long session = 0x5EED_0001L;
    HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    HttpResponse<Stream<String>> stream = http.send(HttpRequest.newBuilder(URI.create(
        "http://127.0.0.1:" + port + HttpCreditStreams.PATH))
        .header(SpillwayHttpHeaders.SESSION, Long.toString(session)).GET().build(),
        HttpResponse.BodyHandlers.ofLines());
    assertThat(stream.statusCode()).isEqualTo(200);
    Iterator<String> lines = stream.body().iterator();

    CountDownLatch entered = new CountDownLatch(1);
    CompletableFuture<String> reply = new CompletableFuture<>();
    WebFluxTestApp.downstream = reply;
    WebFluxTestApp.downstreamEntered = entered::countDown;
    try {
      try (Socket client = new Socket("127.0.0.1", port)) {
        String head = "GET /downstream HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + SpillwayHttpHeaders.SESSION + ": " + session + "\r\n"
            + SpillwayHttpHeaders.FLAGS + ": 1\r\n\r\n";
        client.getOutputStream().write(head.getBytes(StandardCharsets.US_ASCII));
        client.getOutputStream().flush();
        assertThat(entered.await(30, TimeUnit.SECONDS)).as("handler entered").isTrue();
      } // the client goes away, no answer read
      StarterMvcTest.waitUntil(() -> gate.inFlight() == 0);
    } finally {
      reply.complete("too late");
      WebFluxTestApp.downstream = CompletableFuture.completedFuture("ready");
      WebFluxTestApp.downstreamEntered = () -> { };
    }
    // the stream's first line opens it; the next event is the credit the cancelled end granted
    CompletableFuture<String> credit = CompletableFuture.supplyAsync(() -> {
      String event = "";
      while (lines.hasNext()) {
        String line = lines.next();
        if (line.startsWith("window:") || line.startsWith("data:")) {
          event += line + "\n";
        }
        if (line.startsWith("data:")) {
          return event;
        }
      }
      return "stream ended";
    });
    assertThat(credit.get(30, TimeUnit.SECONDS))
        .isEqualTo("window: 1/" + OneCreditPerEnd.stamp(1) + "\ndata: 1\n");
    http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port
        + HttpCreditStreams.PATH)).header(SpillwayHttpHeaders.SESSION, Long.toString(session))
        .header(SpillwayHttpHeaders.STREAM_KEY,
            stream.headers().firstValue(SpillwayHttpHeaders.STREAM_KEY).orElseThrow())
        .DELETE().build(), HttpResponse.BodyHandlers.discarding());
  }

  /** A scheme with credits whose every admitted request's end grants the session one credit. */
  @Configuration(proxyBeanMethods = false)
  static class OneCreditPerEnd {
    /** The stamp of the {@code n}th end: record 7, count {@code n}. */
    static long stamp(int n) {
      return 7L << 32 | n;
    }

    @Bean
    OverloadScheme oneCreditPerEnd() {
      OverloadScheme clients = Spillway.forSloNanos(100_000_000L);
      return new OverloadScheme() {
        @Override
        public String name() {
          return "one-credit-per-end";
        }

        @Override
        public boolean issuesCredits() {
          return true;
        }

        @Override
        public ServerGate newServerGate(ServerEnvironment environment) {
          java.util.concurrent.atomic.AtomicInteger ends =
              new java.util.concurrent.atomic.AtomicInteger();
          return new ServerGate() {
            @Override
            public ServerPermit admit(RequestMetadata request, long nowNanos) {
              long id = request.sessionId();
              return new AbstractServerPermit(Status.OK) {
                @Override
                protected void onComplete(Outcome outcome, long now, ResponseMetadata response) {
                  if (id != 0) {
                    int n = ends.incrementAndGet();
                    response.sessionId(id).credit(1, n, stamp(n));
                  }
                }
              };
            }

            @Override
            public void deregister(long sessionId, long nowNanos) { }

            @Override
            public void close() { }
          };
        }

        @Override
        public <R> ClientGate<R> newClientGate(ClientEnvironment environment) {
          return clients.newClientGate(environment);
        }
      };
    }
  }
}
