package io.spillway.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.spillway.api.Status;
import io.spillway.api.Ticker;
import io.spillway.spring.credits.CreditsTestApp;
import io.spillway.spring.internal.HttpCreditStreams;
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
import org.springframework.http.ResponseEntity;
import org.springframework.web.client.RestClient;

/**
 * Spillway's credits between Spring services over HTTP, on a real Tomcat and the system clock,
 * with the starter's defaults on both sides: a client built from Boot's {@code RestClient.Builder} keeps a session
 * with the server it calls, the server writes each answer's overload fields into its headers, and
 * the session's credit stream is open for the credits no answer can carry.
 */
@SpringBootTest(classes = CreditsTestApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"management.endpoints.web.exposure.include=spillway",
        "spillway.endpoints[0].path=/async", "spillway.endpoints[0].name=async"})
class HttpCreditsTest {

  @LocalServerPort
  int port;
  @Autowired
  RestClient.Builder builder;
  @Autowired
  SpillwayHttpSessions sessions;
  @Autowired
  HttpCreditStreams streams;
  @Autowired
  SpillwayHttpGate gate;
  @Autowired
  SpillwayEndpoint endpoint;

  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .build();

  private String url() {
    return "http://127.0.0.1:" + port;
  }

  /**
   * The server ends a stream whose session the client closed asynchronously: before the next test
   * counts streams, those of the sessions a test opened by hand are gone, leaving at most the one
   * of the application's own client session.
   */
  @AfterEach
  void streamsOfClosedSessionsEnded() throws InterruptedException {
    StarterMvcTest.waitUntil(() -> streams.open()
        <= sessions.sessions().values().stream().filter(s -> !s.isPassThrough()).count());
  }

  @Test
  void aClientFromBootsBuilderHoldsACreditSessionWithTheServerItCalls() {
    RestClient client = builder.baseUrl(url()).build();
    for (int i = 0; i < 5; i++) {
      ResponseEntity<String> r = client.get().uri("/work").retrieve().toEntity(String.class);
      assertThat(r.getBody()).isEqualTo("ok");
      // the permit ended before the body went, so its fields are in the headers
      assertThat(r.getHeaders().getFirst(SpillwayHttpHeaders.STATUS)).isEqualTo("0");
    }
    assertThat(sessions.sessions().values()).singleElement().satisfies(s -> {
      assertThat(s.isPassThrough()).isFalse();
      assertThat(s.server()).isEqualTo(URI.create(url()));
    });
    assertThat(streams.open()).isEqualTo(1);
    assertThat(gate.endpoints().get(0).stats().decisions(Status.REJECTED_NO_CREDIT)).isZero();
    // and the Actuator endpoint shows both sides
    assertThat(endpoint.state().get("httpCredits")).isEqualTo(java.util.Map.of("streamsOpen", 1,
        "clientSessions", java.util.Map.of(url() + "", java.util.Map.of("passThrough", false,
            "queued", 0))));
  }

  @Test
  void anAsynchronousAnswerCarriesItsFieldsTooAndEndsItsPermitOnce() throws Exception {
    RestClient client = builder.baseUrl(url()).build();
    for (int i = 0; i < 3; i++) {
      ResponseEntity<String> r = client.get().uri("/async").retrieve().toEntity(String.class);
      assertThat(r.getBody()).isEqualTo("ok");
      assertThat(r.getHeaders().getFirst(SpillwayHttpHeaders.STATUS)).isEqualTo("0");
    }
    StarterMvcTest.waitUntil(() -> gate.inFlight() == 0); // the container reports the end later
  }

  /**
   * An asynchronous answer without a body is committed by the container as the request completes,
   * after the async dispatch returned: its fields must be in its headers all the same, or the
   * session never sees the credit delta the server's ledger already counted.
   */
  @Test
  void anAsynchronousAnswerWithoutABodyCarriesItsFields() throws Exception {
    RestClient client = builder.baseUrl(url()).build();
    for (int i = 0; i < 3; i++) {
      ResponseEntity<Void> r = client.get().uri("/async-empty").retrieve().toBodilessEntity();
      assertThat(r.getStatusCode().value()).isEqualTo(200);
      assertThat(r.getHeaders().getFirst(SpillwayHttpHeaders.STATUS)).isEqualTo("0");
    }
    StarterMvcTest.waitUntil(() -> gate.inFlight() == 0);
  }

  /**
   * An asynchronous request that times out is answered by Spring MVC's timeout handling (a
   * {@code 503}) after the container reported the timeout: that answer carries the fields of the
   * permit the timeout ended.
   */
  @Test
  void anAsynchronousTimeoutCarriesTheFieldsOfTheEndedPermit() throws Exception {
    RestClient client = builder.baseUrl(url()).build();
    ResponseEntity<String> r = client.get().uri("/async-never").exchange((request, response) ->
        ResponseEntity.status(response.getStatusCode()).headers(response.getHeaders()).body(""));
    assertThat(r.getStatusCode().value()).isEqualTo(503);
    assertThat(r.getHeaders().getFirst(SpillwayHttpHeaders.STATUS)).isNotNull();
    assertThat(gate.endpoints().get(0).stats().completions(io.spillway.api.Outcome.TIMED_OUT))
        .isPositive();
    StarterMvcTest.waitUntil(() -> gate.inFlight() == 0);
  }

  /**
   * {@code /async} has a gate of its own, which keeps its own ledger of the session's credits:
   * the session keeps a window per gate, as the stream's routes say, and is never refused for
   * credit while calls to both gates overlap.
   */
  @Test
  void aSessionKeepsAWindowForEachEndpointGate() throws Exception {
    HttpResponse<java.util.stream.Stream<String>> stream = http.send(HttpRequest.newBuilder(
        URI.create(url() + HttpCreditStreams.PATH)).header(SpillwayHttpHeaders.SESSION, "9")
        .GET().build(), HttpResponse.BodyHandlers.ofLines());
    assertThat(stream.headers().firstValue(SpillwayHttpHeaders.ROUTES))
        .hasValue("- /actuator/**, - /error, 1 /async, 0 /**");
    assertThat(send(HttpRequest.newBuilder(URI.create(url() + HttpCreditStreams.PATH))
        .header(SpillwayHttpHeaders.SESSION, "9").header(SpillwayHttpHeaders.STREAM_KEY,
            stream.headers().firstValue(SpillwayHttpHeaders.STREAM_KEY).orElseThrow())
        .DELETE()).statusCode()).isEqualTo(204);
    stream.body().close();

    RestClient client = builder.baseUrl(url()).build();
    java.util.concurrent.ExecutorService callers =
        java.util.concurrent.Executors.newFixedThreadPool(8);
    try {
      java.util.List<java.util.concurrent.Future<String>> calls = new java.util.ArrayList<>();
      for (int i = 0; i < 160; i++) {
        String path = i % 2 == 0 ? "/work" : "/async";
        calls.add(callers.submit(() -> client.get().uri(path).retrieve().body(String.class)));
      }
      for (var call : calls) {
        try {
          assertThat(call.get(60, java.util.concurrent.TimeUnit.SECONDS)).isEqualTo("ok");
        } catch (java.util.concurrent.ExecutionException e) {
          // Eight callers at once may outwait a fresh session's window (expired in the client),
          // or meet a queue on a busy machine (the AQM's 503, then the client's pushback): what
          // this test holds is below, that no gate refused the session for credit.
          assertThat(e.getCause()).isInstanceOfAny(SpillwayRejectedException.class,
              org.springframework.web.client.HttpServerErrorException.ServiceUnavailable.class);
        }
      }
    } finally {
      callers.shutdownNow();
    }
    for (SpillwayHttpGate.Endpoint e : gate.endpoints()) {
      assertThat(e.stats().decisions(Status.OK)).as(e.name()).isPositive();
      assertThat(e.stats().decisions(Status.REJECTED_NO_CREDIT)).as(e.name()).isZero();
    }
    StarterMvcTest.waitUntil(() -> gate.inFlight() == 0);
  }

  @Test
  void anErrorPageCarriesTheFieldsOfTheRequestThatFailed() throws Exception {
    RestClient client = builder.baseUrl(url()).build();
    for (String path : new String[] {"/boom", "/teapot"}) {
      ResponseEntity<String> r = client.get().uri(path).exchange((request, response) ->
          ResponseEntity.status(response.getStatusCode()).headers(response.getHeaders())
              .body(""));
      assertThat(r.getStatusCode().value()).as(path).isIn(500, 418);
      // the container's error page replaced the response, and the fields were written again
      assertThat(r.getHeaders().getFirst(SpillwayHttpHeaders.STATUS)).as(path).isNotNull();
    }
    assertThat(sessions.sessions().values()).allSatisfy(s -> assertThat(s.isPassThrough())
        .isFalse());
    StarterMvcTest.waitUntil(() -> gate.inFlight() == 0);
  }

  @Test
  void closingTheSessionsEndsTheirStreamsAtTheServer() throws Exception {
    int before = streams.open();
    SpillwayHttpSessions own = new SpillwayHttpSessions(Duration.ofMillis(50));
    RestClient client = RestClient.builder().baseUrl(url())
        .requestInterceptor(new SpillwayRestClientInterceptor(new RetryPushback(Ticker.system()),
            own)).build();
    assertThat(client.get().uri("/work").retrieve().body(String.class)).isEqualTo("ok");
    assertThat(streams.open()).isEqualTo(before + 1);
    own.close();
    StarterMvcTest.waitUntil(() -> streams.open() == before); // the DELETE is asynchronous
  }

  @Test
  void theCreditStreamRefusesWhatItCannotServe() throws Exception {
    assertThat(send(HttpRequest.newBuilder(URI.create(url() + HttpCreditStreams.PATH)).GET())
        .statusCode()).isEqualTo(400);
    assertThat(send(HttpRequest.newBuilder(URI.create(url() + HttpCreditStreams.PATH))
        .header(SpillwayHttpHeaders.SESSION, "x1").GET()).statusCode()).isEqualTo(400);
    HttpResponse<String> put = send(HttpRequest.newBuilder(URI.create(url()
        + HttpCreditStreams.PATH)).header(SpillwayHttpHeaders.SESSION, "7")
        .PUT(HttpRequest.BodyPublishers.noBody()));
    assertThat(put.statusCode()).isEqualTo(405);
    assertThat(put.headers().firstValue("Allow")).hasValue("GET, POST, DELETE");
    assertThat(send(HttpRequest.newBuilder(URI.create(url() + HttpCreditStreams.PATH))
        .header(SpillwayHttpHeaders.SESSION, "7").DELETE()).statusCode()).isEqualTo(204);
  }

  @Test
  void aDemandReportRestatesTheSessionsWindowOnItsStream() throws Exception {
    CreditRestatement.aDemandReportRestatesTheWindowOnTheStream(port, "/work");
  }

  @Test
  void aForgedRequestCannotActForAnotherSessionsStream() throws Exception {
    StreamOwnership.aForgedRequestCannotActForAnotherSessionsStream(port, "/work");
  }

  private HttpResponse<String> send(HttpRequest.Builder request) throws Exception {
    return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
  }
}
