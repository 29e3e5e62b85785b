package io.spillway.spring.internal;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.spillway.api.Ticker;
import io.spillway.spring.ServerQueueDelay;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import org.apache.coyote.ProtocolHandler;
import org.apache.coyote.http11.Http11NioProtocol;
import org.junit.jupiter.api.Test;
import org.springframework.boot.tomcat.TomcatProtocolHandlerCustomizer;
import org.springframework.boot.tomcat.servlet.TomcatServletWebServerFactory;

/** The worker pool the starter builds in place of Tomcat's keeps what Boot configured on it. */
class TomcatWorkersCustomizerTest {

  /**
   * {@code server.tomcat.threads.max-queue-capacity} bounds the requests waiting for a worker
   * (Boot sets it on the protocol as its max queue size): the rebuilt pool refuses beyond it, as
   * Tomcat's own would.
   */
  @Test
  @SuppressWarnings({"unchecked", "rawtypes"})
  void theRebuiltPoolKeepsTheMaxQueueCapacity() throws Exception {
    TomcatWorkersCustomizer customizer = new TomcatWorkersCustomizer(new ServerQueueDelay(),
        Ticker.system(), false, 1, 1, 1);
    TomcatServletWebServerFactory factory = new TomcatServletWebServerFactory();
    Http11NioProtocol protocol = new Http11NioProtocol();
    protocol.setMaxQueueSize(1); // what Boot does for max-queue-capacity=1
    customizer.customize(factory);
    for (TomcatProtocolHandlerCustomizer c : factory.getProtocolHandlerCustomizers()) {
      ((TomcatProtocolHandlerCustomizer<ProtocolHandler>) c).customize(protocol);
    }
    Executor workers = protocol.getExecutor();
    CountDownLatch hold = new CountDownLatch(1);
    CountDownLatch running = new CountDownLatch(1);
    try {
      workers.execute(() -> {
        running.countDown();
        try {
          hold.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      });
      running.await(); // the only worker is busy
      workers.execute(() -> { }); // waits: the queue's one place
      assertThatThrownBy(() -> workers.execute(() -> { }))
          .isInstanceOf(RejectedExecutionException.class);
    } finally {
      hold.countDown();
      customizer.destroy();
    }
  }
}
