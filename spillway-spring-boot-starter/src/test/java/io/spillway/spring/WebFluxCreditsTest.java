package io.spillway.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.spillway.spring.internal.HttpCreditStreams;
import io.spillway.spring.reactive.WebFluxTestApp;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.http.ResponseEntity;
import org.springframework.web.reactive.function.client.WebClient;

/**
 * Spillway's credits over HTTP on WebFlux and Reactor Netty, both sides on the starter's defaults:
 * a {@code WebClient} from Boot's builder keeps a session with the server it calls, whose answers
 * carry their overload fields in their headers and whose credit stream is open.
 */
@SpringBootTest(classes = WebFluxTestApp.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = "spring.main.web-application-type=reactive")
class WebFluxCreditsTest {

  @LocalServerPort
  int port;
  @Autowired
  WebClient.Builder builder;
  @Autowired
  SpillwayHttpSessions sessions;
  @Autowired
  HttpCreditStreams streams;

  @Test
  void aWebClientFromBootsBuilderHoldsACreditSessionWithTheServerItCalls() {
    WebClient client = builder.baseUrl("http://127.0.0.1:" + port).build();
    for (int i = 0; i < 5; i++) {
      ResponseEntity<String> r = client.get().uri("/budget").retrieve().toEntity(String.class)
          .block();
      assertThat(r.getStatusCode().value()).isEqualTo(200);
      // the permit ended just before the headers went, so its fields are in them
      assertThat(r.getHeaders().getFirst(SpillwayHttpHeaders.STATUS)).isEqualTo("0");
      // the session's budget reached the handler
      assertThat(Long.parseLong(r.getBody())).isPositive();
    }
    assertThat(sessions.sessions().values()).singleElement()
        .satisfies(s -> assertThat(s.isPassThrough()).isFalse());
    assertThat(streams.open()).isEqualTo(1);
  }

  @Test
  void theCreditStreamRefusesWhatItCannotServeAndADeleteEndsASession() throws Exception {
    String url = "http://127.0.0.1:" + port + HttpCreditStreams.PATH;
    assertThat(send(HttpRequest.newBuilder(URI.create(url)).GET()).statusCode()).isEqualTo(400);
    HttpResponse<String> put = send(HttpRequest.newBuilder(URI.create(url))
        .header(SpillwayHttpHeaders.SESSION, "7").PUT(HttpRequest.BodyPublishers.noBody()));
    assertThat(put.statusCode()).isEqualTo(405);
    assertThat(put.headers().firstValue("Allow")).hasValue("GET, POST, DELETE");
    // a stream of its own, answered at once with the comment that opens it, then ended by DELETE
    int before = streams.open();
    HttpResponse<java.util.stream.Stream<String>> stream = http.send(HttpRequest.newBuilder(
        URI.create(url)).header(SpillwayHttpHeaders.SESSION, "8").GET().build(),
        HttpResponse.BodyHandlers.ofLines());
    assertThat(stream.statusCode()).isEqualTo(200);
    assertThat(stream.headers().firstValue("Content-Type")).hasValueSatisfying(
        v -> assertThat(v).startsWith("text/event-stream"));
    assertThat(stream.headers().firstValue(SpillwayHttpHeaders.ROUTES))
        .hasValue("- /actuator/**, - /error, 0 /**"); // one gate: every path waits for gate 0
    assertThat(streams.open()).isEqualTo(before + 1);
    assertThat(send(HttpRequest.newBuilder(URI.create(url)).header(SpillwayHttpHeaders.SESSION,
        "8").header(SpillwayHttpHeaders.STREAM_KEY, stream.headers()
            .firstValue(SpillwayHttpHeaders.STREAM_KEY).orElseThrow()).DELETE()).statusCode())
        .isEqualTo(204);
    assertThat(streams.open()).isEqualTo(before);
    // the stream's body ends (bounded, so a stream that did not end fails instead of hanging)
    assertThat(java.util.concurrent.CompletableFuture.supplyAsync(() -> stream.body().toList())
        .get(30, java.util.concurrent.TimeUnit.SECONDS)).startsWith(": subscribed");
  }

  @Test
  void aDemandReportRestatesTheSessionsWindowOnItsStream() throws Exception {
    CreditRestatement.aDemandReportRestatesTheWindowOnTheStream(port, "/budget");
  }

  @Test
  void aForgedRequestCannotActForAnotherSessionsStream() throws Exception {
    StreamOwnership.aForgedRequestCannotActForAnotherSessionsStream(port, "/budget");
  }

  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .build();

  private HttpResponse<String> send(HttpRequest.Builder request) throws Exception {
    return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
  }
}
