package io.spillway.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.asqm.CarrierDispatcher;
import io.spillway.spring.internal.ServletStages;
import io.spillway.spring.jetty.JettyTestApp;
import java.net.http.HttpResponse;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.util.VirtualThreads;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.jetty.JettyWebServer;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.boot.web.server.context.WebServerApplicationContext;

/**
 * With {@code spring.threads.virtual.enabled=true}, Jetty's requests run on virtual threads on
 * measured carriers (the tests open {@code java.lang}, which the carrier route needs), while its
 * acceptors and selectors keep platform threads.
 */
@SpringBootTest(classes = JettyTestApp.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"spring.threads.virtual.enabled=true",
        "management.endpoints.web.exposure.include=spillway"})
class JettyVirtualThreadsTest {

  @LocalServerPort
  int port;
  @Autowired
  WebServerApplicationContext context;
  @Autowired
  ServerQueueDelay delay;
  @Autowired
  ServletStages stages;

  @Test
  void requestsRunOnVirtualThreadsOnMeasuredCarriers() throws Exception {
    Server server = assertInstanceOf(JettyWebServer.class, context.getWebServer()).getServer();
    CarrierDispatcher dispatcher = assertInstanceOf(CarrierDispatcher.class,
        VirtualThreads.getVirtualThreadsExecutor(server.getThreadPool()),
        "the server's virtual threads are the dispatcher's");
    assertTrue(delay.stageNames().contains("jetty-carriers"), delay.stageNames().toString());
    long before = dispatcher.submissions();
    assertEquals("true", get("/thread").body(), "the handler runs on a virtual thread");
    assertTrue(dispatcher.submissions() > before, "the request's thread mounted on a carrier");
    HttpResponse<String> budget = get("/budget");
    assertEquals(200, budget.statusCode());
    assertTrue(Long.parseLong(budget.body()) > 0, budget.body());
    HttpResponse<String> state = get("/actuator/spillway");
    assertTrue(state.body().contains("\"workers\":\"virtual threads on"), state.body());
    assertEquals(200, stages.threads(), "Jetty's default thread count");
  }

  private HttpResponse<String> get(String path) throws Exception {
    return LocalHttp.get(port, path);
  }

}
