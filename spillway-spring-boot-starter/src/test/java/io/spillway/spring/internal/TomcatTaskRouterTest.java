package io.spillway.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;
import org.junit.jupiter.api.Test;

/** Which of Tomcat's tasks leave the virtual threads: its asynchronous I/O continuations only. */
class TomcatTaskRouterTest {

  @Test
  void tomcatsIoContinuationsAreConnectionIo() throws Exception {
    assertThat(TomcatTaskRouter.isConnectionIo(Class.forName(
        "org.apache.tomcat.util.net.NioEndpoint$NioSocketWrapper$NioOperationState"))).isTrue();
    assertThat(TomcatTaskRouter.isConnectionIo(Class.forName(
        "org.apache.tomcat.util.net.Nio2Endpoint$Nio2SocketWrapper$Nio2OperationState"))).isTrue();
  }

  @Test
  void requestsStayOnTheRequestExecutor() throws Exception {
    // an HTTP/1.1 socket event (which reads and serves the request), an HTTP/2 stream
    assertThat(TomcatTaskRouter.isConnectionIo(Class.forName(
        "org.apache.tomcat.util.net.NioEndpoint$SocketProcessor"))).isFalse();
    assertThat(TomcatTaskRouter.isConnectionIo(Class.forName(
        "org.apache.coyote.http2.StreamProcessor"))).isFalse();
    List<String> ran = new ArrayList<>();
    Executor requests = task -> ran.add("request");
    Executor connections = task -> ran.add("connection");
    TomcatTaskRouter router = new TomcatTaskRouter(requests, connections);
    router.execute(() -> { }); // an application's task, as AsyncContext.start submits one
    assertThat(ran).containsExactly("request");
  }
}
