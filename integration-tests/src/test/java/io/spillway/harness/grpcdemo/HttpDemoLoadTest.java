package io.spillway.harness.grpcdemo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.DefaultHttp2HeadersFrame;
import io.netty.handler.codec.http2.Http2FrameCodecBuilder;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2HeadersFrame;
import io.netty.handler.codec.http2.Http2Settings;
import io.netty.util.ReferenceCountUtil;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The Spring demo's HTTP/2 generator against a small h2c server: every request is answered and
 * counted once, a connection never opens more streams than the server allows, and with the
 * starter's client side a {@code 503}'s pushback keeps requests in the client. Counts only: the
 * figures are in docs/results/spring.md.
 */
class HttpDemoLoadTest {

  private static final long SLO_NANOS = TimeUnit.SECONDS.toNanos(10);

  private final EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
  private final AtomicInteger received = new AtomicInteger();
  private final AtomicInteger open = new AtomicInteger();
  private final AtomicInteger mostOpen = new AtomicInteger();

  @AfterEach
  void stop() throws InterruptedException {
    group.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(5, TimeUnit.SECONDS);
  }

  /**
   * An h2c server (prior knowledge) allowing {@code maxStreams} streams a connection; it answers
   * each request after {@code delayMillis} with {@code status}, and a 503 with a one-minute
   * pushback and the reason "limit".
   */
  private int server(int maxStreams, long delayMillis, int status) throws InterruptedException {
    Channel ch = new ServerBootstrap().group(group).channel(NioServerSocketChannel.class)
        .childHandler(new ChannelInitializer<Channel>() {
          @Override
          protected void initChannel(Channel c) {
            c.pipeline().addLast(Http2FrameCodecBuilder.forServer()
                .initialSettings(Http2Settings.defaultSettings().maxConcurrentStreams(maxStreams))
                .build(), answer(delayMillis, status));
          }
        }).bind("127.0.0.1", 0).sync().channel();
    return ((java.net.InetSocketAddress) ch.localAddress()).getPort();
  }

  private ChannelHandler answer(long delayMillis, int status) {
    return new ChannelInboundHandlerAdapter() {
      @Override
      public void channelRead(ChannelHandlerContext ctx, Object msg) {
        try {
          if (msg instanceof Http2HeadersFrame h && h.isEndStream()) {
            received.incrementAndGet();
            mostOpen.accumulateAndGet(open.incrementAndGet(), Math::max);
            Http2Headers headers = new DefaultHttp2Headers().status(Integer.toString(status));
            if (status == 503) {
              headers.set("spillway-status", Integer.toString(
                  io.spillway.api.Status.REJECTED_LIMIT.code()));
              headers.set("spillway-retry-pushback-ms", "60000");
            }
            ctx.executor().schedule(() -> {
              open.decrementAndGet();
              ctx.writeAndFlush(new DefaultHttp2HeadersFrame(headers, true).stream(h.stream()));
            }, delayMillis, TimeUnit.MILLISECONDS);
          }
        } finally {
          ReferenceCountUtil.release(msg);
        }
      }
    };
  }

  /** 1,000 requests a second for half a second over 2 connections, every one counted. */
  private static DemoLoad.Result halfASecond(int port, HttpDemoLoad.ClientSide clientSide)
      throws Exception {
    try (HttpDemoLoad load = new HttpDemoLoad(port, 2, clientSide, SLO_NANOS, "POST",
        "/reservations")) {
      return load.openLoop(1_000, 0, TimeUnit.MILLISECONDS.toNanos(500), 7);
    }
  }

  @Test
  void everyRequestIsAnsweredOnceAndAConnectionKeepsToTheServersStreamCap() throws Exception {
    // 1,000 a second for half a second against 2 x 3 streams answered after 20 ms: far more
    // requests at once than the connections may carry, so most wait in them.
    DemoLoad.Result r = halfASecond(server(3, 20, 200), HttpDemoLoad.ClientSide.PLAIN);
    assertTrue(r.issued() > 100, r.toString());
    assertEquals(r.issued(), r.ok(), "every request answered 200: " + r);
    assertEquals(r.issued(), received.get(), "each sent once: " + r);
    assertEquals(0, r.errors() + r.serverRejects() + r.clientRejects(), r.toString());
    assertEquals(r.ok(), r.okLatency().getTotalCount());
    assertTrue(mostOpen.get() <= 6, "at most 3 streams on each of 2 connections: " + mostOpen);
  }

  @Test
  void aPushbackHoldsTheClientSidesRequestsInTheClient() throws Exception {
    DemoLoad.Result r = halfASecond(server(100, 0, 503), HttpDemoLoad.ClientSide.PUSHBACK);
    assertEquals(r.issued(), r.serverRejects() + r.clientRejects(), r.toString());
    assertEquals(r.serverRejects(), received.get(), "the server saw only what it refused: " + r);
    // How many go before the first 503 is back depends on the machine's speed (a cold JVM took
    // 260 ms once); that the rest stay in the client does not.
    assertTrue(r.clientRejects() > 0, "after the first 503, held in the client: " + r);
    assertEquals("limit=" + r.serverRejects(), r.rejectsByReason());
  }

  @Test
  void aCreditSessionWithAServerThatIsNotSpillwaySendsEveryRequest() throws Exception {
    // no credit stream (this server speaks only HTTP/2 with prior knowledge) and no
    // Spillway-Status in its answers: the session lets everything through, nothing is lost
    DemoLoad.Result r = halfASecond(server(3, 20, 200), HttpDemoLoad.ClientSide.CREDITS);
    assertTrue(r.issued() > 100, r.toString());
    assertEquals(r.issued(), r.ok(), "every request answered 200: " + r);
    assertEquals(r.issued(), received.get(), "each sent once: " + r);
    assertEquals(0, r.errors() + r.serverRejects() + r.clientRejects(), r.toString());
  }

  @Test
  void plainClientsSendEveryRequestWhateverTheServerSays() throws Exception {
    DemoLoad.Result r = halfASecond(server(100, 0, 503), HttpDemoLoad.ClientSide.PLAIN);
    assertEquals(r.issued(), r.serverRejects(), r.toString());
    assertEquals(r.issued(), received.get());
    assertEquals(0, r.clientRejects());
  }

  @Test
  void aServerThatIsNotThereIsAnErrorAtOnce() throws Exception {
    int port;
    try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
      port = s.getLocalPort();
    }
    int closed = port;
    Exception e = org.junit.jupiter.api.Assertions.assertThrows(Exception.class,
        () -> new HttpDemoLoad(closed, 2, HttpDemoLoad.ClientSide.PLAIN, SLO_NANOS,
            "POST", "/reservations"));
    assertTrue(String.valueOf(e.getMessage()).contains("Connection refused"), e.toString());
  }
}
