package io.spillway.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.spillway.api.Ticker;
import io.spillway.spring.app.MvcTestApp;
import io.spillway.spring.internal.TomcatWorkersCustomizer;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * Virtual threads as most applications run them, without {@code --add-opens
 * java.base/java.lang}: Boot's virtual threads measured at their first mount, an HTTP/2
 * connection's frame reads on the measured platform pool, and each request's wait before the
 * application averaged by the arrival stage. Runs in a JVM of its own, started without the option
 * (the module's other tests open {@code java.lang}).
 */
@SpringBootTest(classes = MvcTestApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"spring.threads.virtual.enabled=true", "server.http2.enabled=true"})
class VirtualThreadsFirstMountTest {

  @LocalServerPort
  int port;
  @Autowired
  TomcatWorkersCustomizer workers;
  @Autowired
  ServerQueueDelay delay;
  @Autowired
  Ticker ticker;

  @Test
  void http2RequestsRunOnVirtualThreadsMeasuredAtFirstMount() throws Exception {
    assertThat(workers.route()).startsWith("virtual threads, first mount measured")
        .contains("connections' I/O on platform threads");
    assertThat(delay.stageNames())
        .contains("tomcat-virtual-threads", "tomcat-connection-io", "tomcat-arrival")
        .doesNotContain("tomcat-carriers");
    long firstMounts = workers.measured().submitted();
    long continuations = workers.connectionIo().submitted();
    VirtualThreadsTest.askFourTimesOverHttp2(port);
    assertThat(workers.measured().submitted()).isGreaterThanOrEqualTo(firstMounts + 4);
    assertThat(workers.connectionIo().submitted()).isGreaterThan(continuations);
    // every request's wait from Tomcat's stamp to the valve: some nanoseconds at least
    assertThat(workers.arrival().queueingDelayNanos(ticker.read())).isPositive();
  }
}
