package io.spillway.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.spring.app.MvcTestApp;
import io.spillway.spring.internal.TomcatWorkersCustomizer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * With {@code spring.threads.virtual.enabled=true}, Tomcat's requests run on virtual threads on
 * measured carriers (the tests open {@code java.lang}, which the carrier route needs).
 */
@SpringBootTest(classes = MvcTestApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = "spring.threads.virtual.enabled=true")
class VirtualThreadsTest {

  @LocalServerPort
  int port;
  @Autowired
  TomcatWorkersCustomizer workers;
  @Autowired
  ServerQueueDelay delay;

  @Test
  void requestsRunOnMeasuredCarriers() throws Exception {
    assertTrue(workers.route().startsWith("virtual threads on"), workers.route());
    assertTrue(delay.stageNames().contains("tomcat-carriers"), delay.stageNames().toString());
    HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
        URI.create("http://127.0.0.1:" + port + "/budget")).build(), HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode());
    assertTrue(Long.parseLong(r.body()) > 0, r.body());
  }
}
