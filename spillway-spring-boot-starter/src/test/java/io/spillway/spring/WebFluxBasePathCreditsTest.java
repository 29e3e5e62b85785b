package io.spillway.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.spillway.spring.internal.HttpCreditStreams;
import io.spillway.spring.reactive.WebFluxTestApp;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.http.ResponseEntity;
import org.springframework.web.reactive.function.client.WebClient;

/**
 * WebFlux under a base path serves its credit stream under it: its answers name the path ({@link
 * SpillwayHttpHeaders#CREDITS}), and a {@code WebClient} session opens the stream there.
 */
@SpringBootTest(classes = WebFluxTestApp.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    // an SLO no busy build machine's queue outlasts: the test is about where the stream is
    properties = {"spring.main.web-application-type=reactive", "spring.webflux.base-path=/ctx",
        "spillway.slo=5s"})
class WebFluxBasePathCreditsTest {

  @LocalServerPort
  int port;
  @Autowired
  WebClient.Builder builder;
  @Autowired
  SpillwayHttpSessions sessions;
  @Autowired
  HttpCreditStreams streams;

  @Test
  void aSessionFindsTheCreditStreamUnderTheBasePath() {
    WebClient client = builder.baseUrl("http://127.0.0.1:" + port + "/ctx").build();
    ResponseEntity<String> first = client.get().uri("/budget").retrieve().toEntity(String.class)
        .block();
    assertThat(first.getHeaders().getFirst(SpillwayHttpHeaders.CREDITS))
        .isEqualTo("/ctx" + HttpCreditStreams.PATH);
    for (int i = 0; i < 3; i++) {
      ResponseEntity<String> r = client.get().uri("/budget").retrieve().toEntity(String.class)
          .block();
      assertThat(r.getHeaders().getFirst(SpillwayHttpHeaders.STATUS)).isEqualTo("0");
    }
    assertThat(sessions.sessions().values()).singleElement()
        .satisfies(s -> assertThat(s.isPassThrough()).isFalse());
    assertThat(streams.open()).isEqualTo(1);
  }
}
