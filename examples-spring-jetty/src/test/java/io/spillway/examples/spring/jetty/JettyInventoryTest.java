package io.spillway.examples.spring.jetty;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.examples.spring.InventoryApplication;
import io.spillway.spring.ServerQueueDelay;
import io.spillway.spring.SpillwayHttpGate;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.boot.web.server.context.WebServerApplicationContext;

/**
 * examples-spring's inventory service with its container swapped for Jetty, as a Spring team
 * swaps it (Tomcat excluded from the dependencies, {@code spring-boot-starter-jetty} added), and
 * still only the Spillway starter with its default properties: Jetty serves the endpoint, the
 * starter measures Jetty's worker pool as a stage of the queueing delay, and requests pass its gate.
 */
@SpringBootTest(classes = InventoryApplication.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"spring.grpc.server.port=0", "inventory.work=20us"})
class JettyInventoryTest {

  @LocalServerPort
  int port;
  @Autowired
  WebServerApplicationContext context;
  @Autowired
  ServerQueueDelay delay;
  @Autowired
  SpillwayHttpGate gate;

  @Test
  void jettyServesAndTheStarterMeasuresItsWorkers() throws Exception {
    assertTrue(context.getWebServer().getClass().getSimpleName().startsWith("Jetty"),
        context.getWebServer().getClass().getName());
    assertFalse(classPresent("org.apache.catalina.startup.Tomcat"), "Tomcat is not on the class path");
    assertTrue(delay.stageNames().contains("jetty-workers"), delay.stageNames().toString());

    long admitted = gate.endpoints().get(0).stats().admitted();
    HttpResponse<String> reserved = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
        .build().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port
            + "/reservations?sku=4000")).POST(HttpRequest.BodyPublishers.noBody()).build(),
            HttpResponse.BodyHandlers.ofString());
    assertEquals(200, reserved.statusCode(), reserved.body());
    assertTrue(reserved.body().contains("\"sku\":4000"), reserved.body());
    assertEquals(admitted + 1, gate.endpoints().get(0).stats().admitted(), "through the gate");
  }

  private static boolean classPresent(String name) {
    try {
      Class.forName(name, false, JettyInventoryTest.class.getClassLoader());
      return true;
    } catch (ClassNotFoundException e) {
      return false;
    }
  }
}
