package io.spillway.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.spring.internal.MeasuredExecutor;
import io.spillway.spring.jetty.JettyTestApp;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.util.VirtualThreads;
import org.eclipse.jetty.util.thread.VirtualThreadPool;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.jetty.JettyWebServer;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.boot.web.server.context.WebServerApplicationContext;

/**
 * Jetty's virtual threads as most applications run them, without {@code --add-opens
 * java.base/java.lang}: Boot's virtual-thread pool kept, its virtual threads created through a
 * {@link MeasuredExecutor}, so each request is measured at its first mount (stage {@code
 * jetty-virtual-threads}). Runs in a JVM of its own, started without the option (the module's
 * other tests open {@code java.lang}).
 */
@SpringBootTest(classes = JettyTestApp.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = "spring.threads.virtual.enabled=true")
class JettyVirtualThreadsFirstMountTest {

  @LocalServerPort
  int port;
  @Autowired
  WebServerApplicationContext context;
  @Autowired
  ServerQueueDelay delay;

  @Test
  void requestsRunOnVirtualThreadsMeasuredAtFirstMount()
      throws Exception {
    Server server = assertInstanceOf(JettyWebServer.class, context.getWebServer()).getServer();
    VirtualThreadPool pool = assertInstanceOf(VirtualThreadPool.class, server.getThreadPool(),
        "Boot's virtual-thread pool");
    MeasuredExecutor measured = assertInstanceOf(MeasuredExecutor.class,
        VirtualThreads.getVirtualThreadsExecutor(pool), "the requests' virtual threads, measured");
    assertTrue(delay.stageNames().contains("jetty-virtual-threads"), delay.stageNames().toString());
    assertFalse(delay.stageNames().contains("jetty-carriers"), delay.stageNames().toString());

    long before = measured.submitted();
    assertEquals("true", LocalHttp.get(port, "/thread").body(),
        "the handler runs on a virtual thread");
    assertTrue(measured.submitted() > before,
        "the request's thread went through the measured executor");
  }
}
