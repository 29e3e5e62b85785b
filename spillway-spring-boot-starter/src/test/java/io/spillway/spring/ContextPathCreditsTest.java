package io.spillway.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.spillway.spring.credits.CreditsTestApp;
import io.spillway.spring.internal.HttpCreditStreams;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.http.ResponseEntity;
import org.springframework.web.client.RestClient;

/**
 * A server under a servlet context path serves its credit stream under that path, not at the
 * origin's {@value HttpCreditStreams#PATH}: its answers name the stream's path ({@link
 * SpillwayHttpHeaders#CREDITS}), and a client session that found no stream at the origin's path
 * opens it there.
 */
@SpringBootTest(classes = CreditsTestApp.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    // an SLO no busy build machine's queue outlasts: the test is about where the stream is
    properties = {"server.servlet.context-path=/ctx", "spillway.slo=5s"})
class ContextPathCreditsTest {

  @LocalServerPort
  int port;
  @Autowired
  RestClient.Builder builder;
  @Autowired
  SpillwayHttpSessions sessions;
  @Autowired
  HttpCreditStreams streams;

  @Test
  void aSessionFindsTheCreditStreamUnderTheContextPath() throws Exception {
    String origin = "http://127.0.0.1:" + port;
    HttpResponse<String> plain = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
        URI.create(origin + "/ctx/work")).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(plain.headers().firstValue(SpillwayHttpHeaders.CREDITS))
        .hasValue("/ctx" + HttpCreditStreams.PATH);

    RestClient client = builder.baseUrl(origin + "/ctx").build();
    // the first request finds no stream at the origin's path and goes without a session
    assertThat(client.get().uri("/work").retrieve().body(String.class)).isEqualTo("ok");
    // its answer named the stream's path: the next one waits for that stream and carries the
    // session's fields, and its answer the server's
    for (int i = 0; i < 3; i++) {
      ResponseEntity<String> r = client.get().uri("/work").retrieve().toEntity(String.class);
      assertThat(r.getBody()).isEqualTo("ok");
      assertThat(r.getHeaders().getFirst(SpillwayHttpHeaders.STATUS)).isEqualTo("0");
    }
    assertThat(sessions.sessions().values()).singleElement()
        .satisfies(s -> assertThat(s.isPassThrough()).isFalse());
    assertThat(streams.open()).isEqualTo(1);
  }
}
