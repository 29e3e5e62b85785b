package io.spillway.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.Status;
import io.spillway.spring.internal.MeasuredQueuedThreadPool;
import io.spillway.spring.jettyreactive.JettyWebFluxTestApp;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.jetty.JettyWebServer;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.boot.web.server.context.WebServerApplicationContext;

/**
 * WebFlux on Jetty gets what Spring MVC on Jetty gets: Jetty's request workers, on which WebFlux's
 * handlers run there, are a measured stage of the delay the gate steers by, and requests pass the
 * starter's filter. Without it a WebFlux service on Jetty had no stage of its own measured.
 */
@SpringBootTest(classes = JettyWebFluxTestApp.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = "spring.main.web-application-type=reactive")
class JettyWebFluxTest {

  @LocalServerPort
  int port;
  @Autowired
  ServerQueueDelay delay;
  @Autowired
  SpillwayHttpGate gate;
  @Autowired
  WebServerApplicationContext context;

  @Test
  void jettysWorkersAreAMeasuredStageAndRequestsPassTheGate() throws Exception {
    var server = assertInstanceOf(JettyWebServer.class, context.getWebServer()).getServer();
    assertInstanceOf(MeasuredQueuedThreadPool.class, server.getThreadPool(),
        "Jetty's workers are measured");
    assertTrue(delay.stageNames().contains("jetty-workers"), delay.stageNames().toString());
    HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
        URI.create("http://127.0.0.1:" + port + "/hello")).build(), HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode());
    assertEquals("hello", r.body());
    assertEquals(1, gate.endpoints().get(0).stats().decisions(Status.OK));
  }
}
