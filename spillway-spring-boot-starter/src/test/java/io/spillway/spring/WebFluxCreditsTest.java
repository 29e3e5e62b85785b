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
}
