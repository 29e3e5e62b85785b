package io.spillway.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.spring.app.MvcTestApp;
import io.spillway.spring.internal.TomcatWorkersCustomizer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * With {@code spring.threads.virtual.enabled=true}, Tomcat's requests run on virtual threads on
 * measured carriers (the tests open {@code java.lang}, which the carrier route needs), and an HTTP/2
 * connection's I/O continuations on platform threads.
 */
@SpringBootTest(classes = MvcTestApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"spring.threads.virtual.enabled=true", "server.http2.enabled=true"})
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

  /**
   * Over HTTP/2 (cleartext, upgraded from HTTP/1.1 on the first request), each request still runs
   * on a virtual thread, while the connection's frame reads run on the measured platform pool.
   */
  @Test
  void http2FramesAreReadOnPlatformThreadsAndRequestsServedOnVirtualOnes() throws Exception {
    assertTrue(delay.stageNames().containsAll(List.of("tomcat-connection-io", "tomcat-arrival")),
        delay.stageNames().toString());
    long before = workers.connectionIo().submitted();
    askFourTimesOverHttp2(port);
    assertTrue(workers.connectionIo().submitted() > before, "no continuation reached the pool");
  }

  /**
   * Asks {@code /virtual} four times on one HTTP/2 connection (cleartext, upgraded on the first
   * request); each answer must be 200 and say the request ran on a virtual thread, and the last
   * must have come over HTTP/2.
   */
  static void askFourTimesOverHttp2(int port) throws Exception {
    HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_2).build();
    HttpResponse<String> last = null;
    for (int i = 0; i < 4; i++) {
      last = client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/virtual"))
          .build(), HttpResponse.BodyHandlers.ofString());
      assertEquals(200, last.statusCode());
      assertEquals("true", last.body());
    }
    assertEquals(HttpClient.Version.HTTP_2, last.version());
  }
}
