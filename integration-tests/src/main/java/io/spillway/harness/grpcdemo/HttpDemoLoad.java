package io.spillway.harness.grpcdemo;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.DefaultHttp2HeadersFrame;
import io.netty.handler.codec.http2.DefaultHttp2WindowUpdateFrame;
import io.netty.handler.codec.http2.Http2DataFrame;
import io.netty.handler.codec.http2.Http2ChannelDuplexHandler;
import io.netty.handler.codec.http2.Http2FrameCodecBuilder;
import io.netty.handler.codec.http2.Http2FrameStream;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2HeadersFrame;
import io.netty.handler.codec.http2.Http2ResetFrame;
import io.netty.handler.codec.http2.Http2SettingsFrame;
import io.netty.util.ReferenceCountUtil;
import io.spillway.api.Ticker;
import io.spillway.spring.RetryPushback;
import io.spillway.spring.SpillwayHttpHeaders;
import io.spillway.spring.SpillwayHttpSession;
import io.spillway.spring.SpillwayHttpSessions;
import io.spillway.spring.SpillwayRejectedException;
import java.util.ArrayDeque;
import java.util.IdentityHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.HdrHistogram.Histogram;

/**
 * The Spring demo's own HTTP load: open-loop Poisson arrivals (each stamped with its scheduled
 * time, so a generator that falls behind adds to latency instead of hiding it), on one Netty event
 * loop, over either of two protocols ({@link Protocol}):
 * <ul>
 *   <li><b>HTTP/2</b>: a few connections in clear text with prior knowledge (as h2load connects).
 *       Unlike h2load's rate mode, whose connections' timers fire together and send bursts of one
 *       request per connection, arrivals here are independent, and they are spread over the
 *       connections in turn. A connection holds at most the server's {@code
 *       SETTINGS_MAX_CONCURRENT_STREAMS} requests (Tomcat: 100); beyond that requests wait in the
 *       connection, first come first served, as h2load and gRPC's Netty client hold them, and
 *       their wait counts in their latency.
 *   <li><b>HTTP/1.1</b>: a pool of keep-alive connections, one request at a time on each and no
 *       pipelining, as Java's HTTP clients and a load balancer's upstream pool send. A request
 *       takes the connection that was idle last (a warm one) or waits in the client, first come
 *       first served, and its wait counts in its latency. A connection the server ends ({@code
 *       Connection: close}, or a close while idle) is replaced by a new one at once, as a pool
 *       replaces it, and the replacements are counted ({@code reconnects=} in the result's
 *       reasons): Tomcat ends the connection after every {@code 503} it sends (RFC 9110 leaves
 *       that to the server; Tomcat follows Apache httpd's list of statuses that drop the
 *       connection), and after {@code maxKeepAliveRequests} (100) requests. A request whose
 *       connection closes before its answer is an error ({@code error-none=}), named by what
 *       closed it (an exception's class, {@code write-} and one if the request's write failed,
 *       or {@code closed}: the server closed it cleanly) and how long after it was written.
 * </ul>
 *
 * <p>Three kinds of client:
 * <ul>
 *   <li><b>plain</b>: every request is sent; what a client that knows nothing of Spillway does;
 *   <li><b>with the starter's client side</b>: the same {@link RetryPushback} the starter's
 *       {@code RestClient} interceptor and {@code WebClient} filter consult (checked before each
 *       request, told each answer), so after a {@code 503} the requests of the milliseconds the
 *       server asked for ({@code Spillway-Retry-Pushback-Ms}) fail at once in the client without
 *       being sent. One pushback memory for all connections: one calling application.
 *   <li><b>with credits</b>: the starter's whole client side as a Spring client gets it by default,
 *       the pushback above and one {@link SpillwayHttpSession} with the server (one calling
 *       application, one session, whatever the connections): each request waits in the session
 *       until it holds a credit, is sent with the session's {@code Spillway-*} headers, and its
 *       answer's credit delta goes back to the session; the session's credit stream is open
 *       through the JDK's client. A request that expires in the session's queue is a client
 *       reject.
 * </ul>
 *
 * <p>Thread-safety: {@link #openLoop} and {@link #closedLoop} are called from one thread at a
 * time; connections are driven on the one event loop.
 */
final class HttpDemoLoad implements AutoCloseable {

  private static final long DRAIN_NANOS = TimeUnit.SECONDS.toNanos(3);

  private final EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
  /** The one loop every connection is driven on. */
  private final EventLoop loop = group.next();
  /** HTTP/2's connections, or {@code null} over HTTP/1.1. */
  private final Connection[] connections;
  /** HTTP/1.1's pool, or {@code null} over HTTP/2. */
  private final Http1Pool pool;
  private final long sloNanos;
  private final RetryPushback pushback;
  private final String server;
  private final SpillwayHttpSessions sessions;
  private final SpillwayHttpSession session;
  private final String path;

  /** What the client side does. */
  enum ClientSide {
    /** Every request is sent. */
    PLAIN,
    /** The starter's {@link RetryPushback}. */
    PUSHBACK,
    /** The pushback and a credit session ({@link SpillwayHttpSession}). */
    CREDITS
  }

  /** The wire protocol. */
  enum Protocol {
    /** HTTP/2 in clear text with prior knowledge. */
    HTTP2,
    /** HTTP/1.1 with keep-alive, one request at a time per connection. */
    HTTP1
  }

  /** Over HTTP/2. */
  HttpDemoLoad(int port, int connectionCount, ClientSide clientSide, long sloNanos, String method,
      String path) throws InterruptedException {
    this(port, Protocol.HTTP2, connectionCount, clientSide, sloNanos, method, path);
  }

  /**
   * @param connectionCount HTTP/2: the connections, requests spread over them in turn; HTTP/1.1:
   *     the pool's connections, so at most this many requests are in the server at once
   * @param clientSide what the client side does
   * @param method the request's method ({@code POST} or {@code GET}); no request has a body
   * @param path the request's path
   */
  HttpDemoLoad(int port, Protocol protocol, int connectionCount, ClientSide clientSide,
      long sloNanos, String method, String path) throws InterruptedException {
    if (connectionCount < 1) {
      throw new IllegalArgumentException("connectionCount < 1: " + connectionCount);
    }
    this.sloNanos = sloNanos;
    this.path = path;
    this.server = "http://127.0.0.1:" + port;
    this.pushback = clientSide == ClientSide.PLAIN ? null : new RetryPushback(Ticker.system());
    this.sessions = clientSide == ClientSide.CREDITS
        ? new SpillwayHttpSessions(java.time.Duration.ofNanos(sloNanos)) : null;
    this.session = sessions == null ? null : sessions.of(java.net.URI.create(server));
    if (protocol == Protocol.HTTP2) {
      connections = new Connection[connectionCount];
      pool = null;
    } else {
      connections = null;
      pool = new Http1Pool(port, HttpMethod.valueOf(method), connectionCount);
    }
    try {
      if (pool != null) {
        pool.connect();
      } else {
        connect(port, new DefaultHttp2Headers().method(method).path(path).scheme("http")
            .authority("127.0.0.1:" + port));
      }
    } catch (Throwable e) { // Netty's sync() rethrows a refused connection unchecked
      close(); // the event loop's thread would keep the JVM alive
      throw e;
    }
  }

  private void connect(int port, Http2Headers headers) throws InterruptedException {
    for (int i = 0; i < connections.length; i++) {
      Connection c = new Connection(headers);
      Channel ch = new Bootstrap().group(loop).channel(NioSocketChannel.class)
          .option(ChannelOption.TCP_NODELAY, true)
          .handler(new io.netty.channel.ChannelInitializer<Channel>() {
            @Override
            protected void initChannel(Channel channel) {
              channel.pipeline().addLast(Http2FrameCodecBuilder.forClient().build(), c);
            }
          })
          .connect("127.0.0.1", port).sync().channel();
      c.channel = ch;
      connections[i] = c;
    }
    for (Connection c : connections) {
      // Its first requests go once the server's SETTINGS (its stream cap) have arrived.
      if (!c.settled.await(5, TimeUnit.SECONDS)) {
        throw new IllegalStateException("no HTTP/2 SETTINGS from " + server + " within 5 s");
      }
    }
  }

  /**
   * Poisson arrivals at {@code rps} for {@code warmNanos + measureNanos}; what was scheduled in the
   * last {@code measureNanos} is counted. Waits up to three seconds for the answers.
   */
  DemoLoad.Result openLoop(double rps, long warmNanos, long measureNanos, long seed)
      throws InterruptedException {
    long start = System.nanoTime();
    Tally tally = new Tally(start + warmNanos, start + warmNanos + measureNanos);
    long[] id = new long[1];
    // the pool's reconnects from the first measured arrival to the last
    long[] reconnectsBefore = {-1};
    PoissonArrivals.drive(rps, start, tally.to, seed, scheduled -> {
      if (scheduled - tally.from >= 0) {
        tally.issued();
        if (reconnectsBefore[0] < 0) {
          reconnectsBefore[0] = reconnects();
        }
      }
      if (pushback != null) {
        try {
          pushback.checkBeforeSending(server);
        } catch (SpillwayRejectedException held) {
          tally.heldOff(scheduled);
          return;
        }
      }
      Pending p = new Pending(scheduled, tally);
      long n = id[0]++;
      tally.outstanding.incrementAndGet();
      if (session == null) {
        loop.execute(submitter(p, n));
        return;
      }
      p.ticket = session.offer(path);
      p.ticket.released().whenComplete((released, expired) -> {
        if (expired != null) {
          tally.expired(scheduled);
        } else {
          loop.execute(submitter(p, n));
        }
      });
    });
    long reconnects = reconnectsBefore[0] < 0 ? 0 : reconnects() - reconnectsBefore[0];
    drain(tally);
    return tally.result(rps, pool == null ? null : reconnects);
  }

  /**
   * A closed loop of {@code outstanding} requests for {@code nanos}, each answer sending the next
   * (plain clients only): 2xx answers a second. Waits up to three seconds for the last answers.
   */
  double closedLoop(int outstanding, long nanos) throws InterruptedException {
    if (session != null || pushback != null) {
      throw new IllegalStateException("a closed loop is for plain clients");
    }
    long start = System.nanoTime();
    Tally tally = new Tally(start, start + nanos);
    tally.closed = true;
    for (int i = 0; i < outstanding; i++) {
      tally.outstanding.incrementAndGet();
      loop.execute(submitter(new Pending(start, tally), i));
    }
    drain(tally);
    return tally.ok() / (nanos / 1e9);
  }

  /** Hands a request to a connection on the loop: HTTP/2's {@code n}th in turn, or the pool. */
  private Runnable submitter(Pending p, long n) {
    if (pool != null) {
      return () -> pool.submit(p);
    }
    Connection c = connections[(int) (n % connections.length)];
    return () -> c.submit(p);
  }

  /** Waits up to {@link #DRAIN_NANOS} for the tally's answers. */
  private static void drain(Tally tally) throws InterruptedException {
    long until = System.nanoTime() + DRAIN_NANOS;
    while (tally.outstanding.get() > 0 && System.nanoTime() - until < 0) {
      Thread.sleep(5);
    }
  }

  /** HTTP/1.1 connections the pool has replaced so far (0 over HTTP/2). */
  long reconnects() {
    return pool == null ? 0 : pool.reconnects.get();
  }

  /** One request: when it was due, and what its answer said. Confined to its event loop. */
  private static final class Pending {
    final long scheduled;
    final Tally tally;
    int status;
    String spillwayStatus;
    String pushbackMs;
    String retryAfter;
    SpillwayHttpSession.Ticket ticket;
    /** When it was written, and the budget it carried (-1: none): for a session's requests. */
    long sentAt;
    long budgetNanos = -1;
    String creditDelta;
    String creditId;

    Pending(long scheduled, Tally tally) {
      this.scheduled = scheduled;
      this.tally = tally;
    }
  }

  /** One HTTP/2 connection and its streams. Confined to its event loop. */
  private final class Connection extends Http2ChannelDuplexHandler {
    final Http2Headers headers;
    final Map<Http2FrameStream, Pending> open = new IdentityHashMap<>();
    final ArrayDeque<Pending> waiting = new ArrayDeque<>();
    Channel channel;
    /** The server's cap on open streams, from its SETTINGS (unbounded if they name none). */
    long maxStreams = Long.MAX_VALUE;
    final java.util.concurrent.CountDownLatch settled = new java.util.concurrent.CountDownLatch(1);

    Connection(Http2Headers headers) {
      this.headers = headers;
    }

    void submit(Pending p) {
      if (!channel.isActive()) {
        finish(p, -1);
      } else if (open.size() < maxStreams) {
        send(p);
      } else {
        waiting.add(p);
      }
    }

    private void send(Pending p) {
      Http2FrameStream stream = newStream();
      open.put(stream, p);
      Http2Headers h = headers;
      if (p.ticket != null) {
        Http2Headers withSession = new DefaultHttp2Headers().set(headers);
        p.ticket.writeHeaders((name, value) -> {
          withSession.set(name.toLowerCase(Locale.ROOT), value);
          if (name.equals(SpillwayHttpHeaders.BUDGET)) {
            p.budgetNanos = Long.parseLong(value);
          }
        });
        h = withSession;
      }
      p.sentAt = System.nanoTime();
      channel.writeAndFlush(new DefaultHttp2HeadersFrame(h, true).stream(stream))
          .addListener(f -> {
            if (!f.isSuccess() && open.remove(stream) != null) {
              finish(p, -1);
              sendWaiting();
            }
          });
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      try {
        if (msg instanceof Http2SettingsFrame settings) {
          Long max = settings.settings().maxConcurrentStreams();
          if (max != null) {
            maxStreams = max;
          }
          settled.countDown();
        } else if (msg instanceof Http2HeadersFrame h) {
          Pending p = open.get(h.stream());
          if (p != null && h.headers().status() != null) {
            p.status = Integer.parseInt(h.headers().status().toString());
            p.spillwayStatus = string(h.headers().get("spillway-status"));
            p.pushbackMs = string(h.headers().get("spillway-retry-pushback-ms"));
            p.retryAfter = string(h.headers().get("retry-after"));
            p.creditDelta = string(h.headers().get("spillway-credit-delta"));
            p.creditId = string(h.headers().get("spillway-credit-id"));
          }
          if (h.isEndStream()) {
            end(h.stream());
          }
        } else if (msg instanceof Http2DataFrame d) {
          int bytes = d.initialFlowControlledBytes();
          if (bytes > 0) {
            ctx.write(new DefaultHttp2WindowUpdateFrame(bytes).stream(d.stream()));
          }
          if (d.isEndStream()) {
            end(d.stream());
          }
        } else if (msg instanceof Http2ResetFrame r) {
          Pending p = open.remove(r.stream());
          if (p != null) {
            finish(p, -1);
          }
        }
      } finally {
        ReferenceCountUtil.release(msg);
      }
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
      // Only here: the codec closes a stream after it has passed on its last frame, so a stream
      // opened from channelRead could still count against the server's cap.
      sendWaiting();
      ctx.flush();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
      for (Pending p : open.values()) {
        finish(p, -1);
      }
      open.clear();
      for (Pending p; (p = waiting.poll()) != null; ) {
        finish(p, -1);
      }
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      ctx.close();
    }

    private void end(Http2FrameStream stream) {
      Pending p = open.remove(stream);
      if (p != null) {
        answered(p);
      }
    }

    private void sendWaiting() {
      while (open.size() < maxStreams && !waiting.isEmpty()) {
        send(waiting.poll());
      }
    }
  }

  /** A request's whole answer is in: the pushback hears it, and it is finished. */
  private void answered(Pending p) {
    if (pushback != null) {
      pushback.onResponse(server, p.status, p.pushbackMs, p.retryAfter);
    }
    finish(p, p.status);
  }

  /**
   * A request ends, once: answered with {@code status}, or failed ({@code -1}). In a closed loop
   * its end sends the next request until the loop's end.
   */
  private void finish(Pending p, int status) {
    if (p.ticket != null) {
      if (status < 0) {
        session.onFailure(p.ticket);
      } else {
        session.onAnswer(p.ticket, status, name -> switch (name) {
          case SpillwayHttpHeaders.STATUS -> p.spillwayStatus;
          case SpillwayHttpHeaders.CREDIT_DELTA -> p.creditDelta;
          case SpillwayHttpHeaders.CREDIT_ID -> p.creditId;
          default -> null;
        });
      }
    }
    long now = System.nanoTime();
    if (p.ticket != null && status > 0) {
      p.tally.sent(p, status, now);
    }
    Tally tally = p.tally;
    if (tally.closed && now - tally.to < 0) {
      tally.outstanding.incrementAndGet();
      submitter(new Pending(now, tally), tally.next++).run(); // on the loop already
    }
    tally.answered(p.scheduled, status, p.spillwayStatus, now);
  }

  /**
   * HTTP/1.1 keep-alive connections shared by every request: a request takes the connection idle
   * last, or waits here for one. Confined to the loop, but for {@link #reconnects}.
   */
  private final class Http1Pool {
    final int port;
    final HttpMethod method;
    final int size;
    /** Idle connections, the one idle last on top. */
    final ArrayDeque<Http1Connection> idle = new ArrayDeque<>();
    final ArrayDeque<Pending> waiting = new ArrayDeque<>();
    final java.util.Set<Channel> channels = java.util.Collections.newSetFromMap(
        new IdentityHashMap<>());
    final java.util.concurrent.atomic.AtomicLong reconnects =
        new java.util.concurrent.atomic.AtomicLong();
    boolean closing;

    Http1Pool(int port, HttpMethod method, int size) {
      this.port = port;
      this.method = method;
      this.size = size;
    }

    /** Opens the pool's connections, all of them before the first request. */
    void connect() throws InterruptedException {
      ChannelFuture[] opening = new ChannelFuture[size];
      for (int i = 0; i < size; i++) {
        opening[i] = open();
      }
      for (ChannelFuture f : opening) {
        f.sync();
      }
    }

    /** A new connection; idle once connected. */
    ChannelFuture open() {
      Http1Connection c = new Http1Connection(this);
      ChannelFuture f = new Bootstrap().group(loop).channel(NioSocketChannel.class)
          .option(ChannelOption.TCP_NODELAY, true)
          .handler(new io.netty.channel.ChannelInitializer<Channel>() {
            @Override
            protected void initChannel(Channel channel) {
              channel.pipeline().addLast(new HttpClientCodec(), c);
            }
          })
          .connect("127.0.0.1", port);
      c.channel = f.channel();
      f.addListener(done -> {
        if (done.isSuccess()) {
          channels.add(c.channel);
          ready(c);
        } else if (!closing) {
          // The server is gone or full: the waiting requests fail rather than wait for it.
          for (Pending p; (p = waiting.poll()) != null; ) {
            finish(p, -1);
          }
          loop.schedule(this::replace, 100, TimeUnit.MILLISECONDS);
        }
      });
      return f;
    }

    void submit(Pending p) {
      Http1Connection c = idle.pollFirst();
      if (c != null) {
        c.send(p);
      } else {
        waiting.add(p);
      }
    }

    /** A connection is free for the next request. */
    void ready(Http1Connection c) {
      Pending p = waiting.poll();
      if (p != null) {
        c.send(p);
      } else {
        idle.addFirst(c);
      }
    }

    /** A connection ended: the pool opens another in its place. */
    void lost(Http1Connection c) {
      idle.remove(c);
      channels.remove(c.channel);
      if (!closing) {
        replace();
      }
    }

    private void replace() {
      if (!closing) {
        reconnects.incrementAndGet();
        open();
      }
    }

    void close() {
      closing = true;
      for (Channel ch : channels) {
        ch.close();
      }
      for (Pending p; (p = waiting.poll()) != null; ) {
        finish(p, -1);
      }
    }
  }

  /** One HTTP/1.1 connection: one request at a time. Confined to the loop. */
  private final class Http1Connection extends ChannelInboundHandlerAdapter {
    final Http1Pool pool;
    Channel channel;
    /** The request on the wire, or {@code null} while idle. */
    Pending current;
    boolean keepAlive;
    /**
     * What closed the connection: an exception's class ({@code write-} and its class if the
     * request's write failed), or {@code null}: the peer closed it.
     */
    String closedBy;

    Http1Connection(Http1Pool pool) {
      this.pool = pool;
    }

    void send(Pending p) {
      current = p;
      FullHttpRequest request = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, pool.method, path,
          Unpooled.EMPTY_BUFFER);
      request.headers().set(HttpHeaderNames.HOST, "127.0.0.1:" + pool.port)
          .setInt(HttpHeaderNames.CONTENT_LENGTH, 0);
      if (p.ticket != null) {
        p.ticket.writeHeaders((name, value) -> {
          request.headers().set(name, value);
          if (name.equals(SpillwayHttpHeaders.BUDGET)) {
            p.budgetNanos = Long.parseLong(value);
          }
        });
      }
      p.sentAt = System.nanoTime();
      channel.writeAndFlush(request).addListener(f -> {
        if (!f.isSuccess()) {
          if (closedBy == null) {
            closedBy = "write-" + f.cause().getClass().getSimpleName();
          }
          channel.close(); // channelInactive ends the request
        }
      });
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      try {
        Pending p = current;
        if (msg instanceof HttpResponse r && p != null) {
          p.status = r.status().code();
          p.spillwayStatus = r.headers().get("spillway-status");
          p.pushbackMs = r.headers().get("spillway-retry-pushback-ms");
          p.retryAfter = r.headers().get(HttpHeaderNames.RETRY_AFTER);
          p.creditDelta = r.headers().get("spillway-credit-delta");
          p.creditId = r.headers().get("spillway-credit-id");
          keepAlive = HttpUtil.isKeepAlive(r);
        }
        if (msg instanceof LastHttpContent && p != null) {
          current = null;
          answered(p);
          if (keepAlive) {
            pool.ready(this);
          } else {
            ctx.close(); // channelInactive replaces it
          }
        }
      } finally {
        ReferenceCountUtil.release(msg);
      }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
      Pending p = current;
      current = null;
      if (p != null) {
        p.tally.unanswered(p.scheduled, closedBy == null ? "closed" : closedBy,
            System.nanoTime() - p.sentAt);
        finish(p, -1);
      }
      pool.lost(this);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      if (closedBy == null) {
        closedBy = cause.getClass().getSimpleName();
      }
      ctx.close();
    }
  }

  private static String string(CharSequence value) {
    return value == null ? null : value.toString();
  }

  /** The outcomes of requests scheduled inside the measured window. Thread-safe. */
  private final class Tally {
    final long from;
    final long to;
    final Histogram okLatency = new Histogram(3_600_000_000_000L, 3);
    final Histogram rejectLatency = new Histogram(3_600_000_000_000L, 3);
    final AtomicInteger outstanding = new AtomicInteger();
    final Map<String, long[]> byReason = new java.util.TreeMap<>();
    /** Errors by status; -1: no answer (the connection failed or closed first). */
    final Map<Integer, Long> errorsByStatus = new java.util.TreeMap<>();
    /** A closed loop: each answer before {@link #to} sends the next request. */
    boolean closed;
    /** A closed loop's requests sent so far: picks the HTTP/2 connection. Loop only. */
    long next;
    long issued;
    long ok;
    long good;
    long serverRejects;
    long clientRejects;
    long errors;

    Tally(long from, long to) {
      this.from = from;
      this.to = to;
    }

    synchronized void issued() {
      issued++;
    }

    // a session's requests only: from sending to the answer, and the budget sent, by outcome
    final Histogram sentToOk = new Histogram(3_600_000_000_000L, 3);
    final Histogram sentToRefusal = new Histogram(3_600_000_000_000L, 3);
    final Histogram budgetOk = new Histogram(3_600_000_000_000L, 3);
    final Histogram budgetRefused = new Histogram(3_600_000_000_000L, 3);

    synchronized void sent(Pending p, int status, long now) {
      if (p.scheduled - from < 0 || p.scheduled - to >= 0) {
        return;
      }
      boolean ok = status >= 200 && status < 300;
      (ok ? sentToOk : sentToRefusal).recordValue(Math.max(1, now - p.sentAt));
      if (p.budgetNanos >= 0) {
        (ok ? budgetOk : budgetRefused).recordValue(Math.max(1, p.budgetNanos));
      }
    }

    synchronized void heldOff(long scheduled) {
      if (scheduled - from >= 0 && scheduled - to < 0) {
        clientRejects++;
      }
    }

    /** A request that waited past its session's queue timeout, unsent. */
    synchronized void expired(long scheduled) {
      outstanding.decrementAndGet();
      heldOff(scheduled);
    }

    synchronized void answered(long scheduled, int status, String spillwayStatus, long now) {
      outstanding.decrementAndGet();
      if (scheduled - from < 0 || scheduled - to >= 0) {
        return;
      }
      long latency = Math.max(1, now - scheduled);
      if (status >= 200 && status < 300) {
        ok++;
        okLatency.recordValue(latency);
        if (latency <= sloNanos) {
          good++;
        }
      } else if (status == 503 || status == 429) {
        serverRejects++;
        rejectLatency.recordValue(latency);
        byReason.computeIfAbsent(reason(spillwayStatus), k -> new long[1])[0]++;
      } else {
        errors++;
        errorsByStatus.merge(status, 1L, Long::sum);
      }
    }

    synchronized long ok() {
      return ok;
    }

    /** HTTP/1.1 requests whose connection closed before their answer: by what closed it. */
    final Map<String, long[]> unansweredBy = new java.util.TreeMap<>();
    /** ... and how long after they were written. */
    final Histogram unansweredAge = new Histogram(3_600_000_000_000L, 3);

    /**
     * A written request's connection closed before its answer, by {@code cause} (an exception's
     * class, {@code write-} and one if its write failed, or {@code closed}: the server closed it
     * cleanly), {@code ageNanos} after it was written.
     */
    synchronized void unanswered(long scheduled, String cause, long ageNanos) {
      if (scheduled - from >= 0 && scheduled - to < 0) {
        unansweredBy.computeIfAbsent(cause, k -> new long[1])[0]++;
        unansweredAge.recordValue(Math.max(1, ageNanos));
      }
    }

    /** @param reconnects the HTTP/1.1 pool's replacements in the window, or {@code null} */
    synchronized DemoLoad.Result result(double offeredRps, Long reconnects) {
      StringBuilder reasons = new StringBuilder();
      byReason.forEach((k, v) -> reasons.append(reasons.isEmpty() ? "" : " ").append(k).append('=')
          .append(v[0]));
      if (reconnects != null) {
        reasons.append(reasons.isEmpty() ? "" : " ").append("reconnects=").append(reconnects);
      }
      errorsByStatus.forEach((status, n) -> reasons.append(reasons.isEmpty() ? "" : " ")
          .append("error").append(status < 0 ? "-none" : "-" + status).append('=').append(n));
      if (!unansweredBy.isEmpty()) {
        StringBuilder by = new StringBuilder();
        unansweredBy.forEach((k, v) -> by.append(by.isEmpty() ? "" : ", ").append(k).append(' ')
            .append(v[0]));
        reasons.append(String.format(Locale.ROOT, " (%s; written p50/max %.2f/%.2f ms before)", by,
            unansweredAge.getValueAtPercentile(50) / 1e6, unansweredAge.getMaxValue() / 1e6));
      }
      if (sentToOk.getTotalCount() + sentToRefusal.getTotalCount() > 0) {
        reasons.append(String.format(Locale.ROOT, "; sent to answer p50/p99 %s ms (ok), %s ms "
            + "(refused); budget sent p50 %s ms (ok), %s ms (refused)", p5099(sentToOk),
            p5099(sentToRefusal), p50(budgetOk), p50(budgetRefused)));
      }
      return new DemoLoad.Result(offeredRps, issued, ok, good, serverRejects, clientRejects, errors,
          (to - from) / 1e9, okLatency.copy(), rejectLatency.copy(), reasons.toString());
    }
  }

  private static String p5099(Histogram h) {
    return h.getTotalCount() == 0 ? "-" : String.format(Locale.ROOT, "%.2f/%.2f",
        h.getValueAtPercentile(50) / 1e6, h.getValueAtPercentile(99) / 1e6);
  }

  private static String p50(Histogram h) {
    return h.getTotalCount() == 0 ? "-"
        : String.format(Locale.ROOT, "%.2f", h.getValueAtPercentile(50) / 1e6);
  }

  /** {@code Spillway-Status}'s code as the status's name ({@code aqm}, {@code limit}, ...). */
  private static String reason(String code) {
    if (code == null) {
      return "unnamed";
    }
    try {
      return io.spillway.api.Status.fromCode(Integer.parseInt(code.trim())).name()
          .toLowerCase(Locale.ROOT).replace("rejected_", "");
    } catch (RuntimeException malformed) {
      return "unnamed";
    }
  }

  @Override
  public void close() throws InterruptedException {
    if (sessions != null) {
      sessions.close();
    }
    if (pool != null) {
      loop.submit(pool::close).await(5, TimeUnit.SECONDS);
    }
    if (connections != null) {
      for (Connection c : connections) {
        if (c != null) {
          c.channel.close();
        }
      }
    }
    group.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(5, TimeUnit.SECONDS);
  }
}
