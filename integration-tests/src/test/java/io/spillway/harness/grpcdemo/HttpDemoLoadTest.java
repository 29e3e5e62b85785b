package io.spillway.harness.grpcdemo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
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
 * The Spring demo's HTTP generator against small servers. Over HTTP/2 (h2c): every request is
 * answered and counted once, a connection never opens more streams than the server allows, and
 * with the starter's client side a {@code 503}'s pushback keeps requests in the client. Over
 * HTTP/1.1: one request at a time per pooled connection, and a connection the server closes after
 * its answer is replaced without losing a request. Counts only: the figures are in
 * docs/results/spring.md.
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

  // ---- HTTP/1.1 ----------------------------------------------------------------------------

  private final AtomicInteger connections = new AtomicInteger();

  /**
   * An HTTP/1.1 server answering each request after {@code delayMillis} with {@code status}; a
   * {@code 503} carries {@code Connection: close} and the server then closes, as Tomcat does.
   */
  private int http1Server(long delayMillis, int status) throws InterruptedException {
    Channel ch = new ServerBootstrap().group(group).channel(NioServerSocketChannel.class)
        .childHandler(new ChannelInitializer<Channel>() {
          @Override
          protected void initChannel(Channel c) {
            connections.incrementAndGet();
            c.pipeline().addLast(new HttpServerCodec(), new ChannelInboundHandlerAdapter() {
              @Override
              public void channelRead(ChannelHandlerContext ctx, Object msg) {
                try {
                  if (msg instanceof HttpRequest) {
                    received.incrementAndGet();
                    mostOpen.accumulateAndGet(open.incrementAndGet(), Math::max);
                  }
                  if (msg instanceof LastHttpContent) {
                    FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
                        HttpResponseStatus.valueOf(status));
                    r.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, 0);
                    boolean close = status == 503;
                    if (close) {
                      r.headers().set(HttpHeaderNames.CONNECTION, "close");
                      r.headers().set("spillway-status", Integer.toString(
                          io.spillway.api.Status.REJECTED_AQM.code()));
                    }
                    ctx.executor().schedule(() -> {
                      open.decrementAndGet();
                      var written = ctx.writeAndFlush(r);
                      if (close) {
                        written.addListener(io.netty.channel.ChannelFutureListener.CLOSE);
                      }
                    }, delayMillis, TimeUnit.MILLISECONDS);
                  }
                } finally {
                  ReferenceCountUtil.release(msg);
                }
              }
            });
          }
        }).bind("127.0.0.1", 0).sync().channel();
    return ((java.net.InetSocketAddress) ch.localAddress()).getPort();
  }

  /**
   * An HTTP/1.1 server that answers {@code 200} but drops the connection on each second request
   * it reads, unanswered: a clean close, or, with {@code reset}, an abortive one (RST).
   */
  private int http1ServerDroppingEverySecondRequest(boolean reset) throws InterruptedException {
    Channel ch = new ServerBootstrap().group(group).channel(NioServerSocketChannel.class)
        .childOption(ChannelOption.SO_LINGER, reset ? 0 : -1)
        .childHandler(new ChannelInitializer<Channel>() {
          @Override
          protected void initChannel(Channel c) {
            c.pipeline().addLast(new HttpServerCodec(), new ChannelInboundHandlerAdapter() {
              @Override
              public void channelRead(ChannelHandlerContext ctx, Object msg) {
                try {
                  if (msg instanceof LastHttpContent) {
                    if (received.incrementAndGet() % 2 == 0) {
                      ctx.close();
                      return;
                    }
                    FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
                        HttpResponseStatus.OK);
                    r.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, 0);
                    ctx.writeAndFlush(r);
                  }
                } finally {
                  ReferenceCountUtil.release(msg);
                }
              }
            });
          }
        }).bind("127.0.0.1", 0).sync().channel();
    return ((java.net.InetSocketAddress) ch.localAddress()).getPort();
  }

  private static HttpDemoLoad http1(int port, int connectionCount) throws InterruptedException {
    return new HttpDemoLoad(port, HttpDemoLoad.Protocol.HTTP1, connectionCount,
        HttpDemoLoad.ClientSide.PLAIN, SLO_NANOS, "POST", "/reservations");
  }

  @Test
  void overHttp1EachConnectionCarriesOneRequestAtATimeAndEveryRequestIsAnsweredOnce()
      throws Exception {
    int port = http1Server(20, 200);
    DemoLoad.Result r;
    try (HttpDemoLoad load = http1(port, 3)) {
      // 400 a second against 3 connections answered after 20 ms (150 a second): most wait in the
      // client, and the last are answered about a second after the load ends (3 s allowed)
      r = load.openLoop(400, 0, TimeUnit.MILLISECONDS.toNanos(500), 7);
    }
    assertTrue(r.issued() > 100, r.toString());
    assertEquals(r.issued(), r.ok(), "every request answered 200: " + r);
    assertEquals(r.issued(), received.get(), "each sent once: " + r);
    assertEquals(0, r.errors() + r.serverRejects() + r.clientRejects(), r.toString());
    assertTrue(mostOpen.get() <= 3, "one request at a time on each of 3 connections: " + mostOpen);
    assertEquals(3, connections.get(), "kept alive, never replaced");
    assertEquals("reconnects=0", r.rejectsByReason());
  }

  @Test
  void overHttp1AConnectionClosedAfterEachRefusalIsReplacedAndNoRequestIsLost() throws Exception {
    int port = http1Server(0, 503);
    DemoLoad.Result r;
    try (HttpDemoLoad load = http1(port, 2)) {
      r = load.openLoop(1_000, 0, TimeUnit.MILLISECONDS.toNanos(500), 7);
    }
    assertTrue(r.issued() > 100, r.toString());
    assertEquals(r.issued(), r.serverRejects(), "every request refused, none lost: " + r);
    assertEquals(r.issued(), received.get(), "each sent once: " + r);
    assertEquals(0, r.errors(), r.toString());
    // each request had a connection of its own (the pool's first two, then one opened for each
    // refusal); the last refusal's replacement may still be connecting at the end
    assertTrue(connections.get() >= r.issued() && connections.get() <= 2 + r.issued(),
        connections + " connections: " + r);
    long reconnects = Long.parseLong(r.rejectsByReason().replaceAll(".*reconnects=(\\d+).*", "$1"));
    assertTrue(reconnects > 0 && reconnects <= r.issued(), r.toString());
    assertTrue(r.rejectsByReason().startsWith("aqm="), r.toString());
  }

  @Test
  void aClosedLoopOverHttp1KeepsItsRequestsOutstandingAndCountsTheirAnswers() throws Exception {
    int port = http1Server(5, 200);
    double rps;
    try (HttpDemoLoad load = http1(port, 8)) {
      rps = load.closedLoop(2, TimeUnit.MILLISECONDS.toNanos(300));
    }
    assertTrue(rps > 0, "answers counted: " + rps);
    assertEquals(2, mostOpen.get(), "two outstanding, never more");
    assertTrue(received.get() > 2, "each answer sent the next: " + received);
  }

  @Test
  void overHttp1ARequestWhoseConnectionClosesUnansweredIsAnErrorNamedByWhatClosedIt()
      throws Exception {
    for (boolean reset : new boolean[] {false, true}) {
      received.set(0);
      int port = http1ServerDroppingEverySecondRequest(reset);
      DemoLoad.Result r;
      try (HttpDemoLoad load = http1(port, 2)) {
        r = load.openLoop(200, 0, TimeUnit.MILLISECONDS.toNanos(500), 7);
      }
      assertTrue(r.issued() > 20, r.toString());
      assertEquals(r.issued(), r.ok() + r.errors(), "each request ends once: " + r);
      assertTrue(r.errors() > 0 && r.ok() > 0, r.toString());
      String by = reset ? "SocketException " : "closed ";
      assertTrue(r.rejectsByReason().contains("error-none=" + r.errors() + " (" + by + r.errors()
          + "; written p50/max "), r.rejectsByReason());
    }
  }
}
