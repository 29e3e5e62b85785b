package io.spillway.harness.grpcdemo;

import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioSocketChannel;
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
 * time, so a generator that falls behind adds to latency instead of hiding it) over a few HTTP/2
 * connections in clear text with prior knowledge (as h2load connects), on one Netty event loop.
 * Unlike h2load's rate mode, whose connections' timers fire together and send bursts of one
 * request per connection, arrivals here are independent, and they are spread over the connections
 * in turn.
 *
 * <p>Two kinds of client:
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
 * <p>A connection holds at most the server's {@code SETTINGS_MAX_CONCURRENT_STREAMS} requests
 * (Tomcat: 100); beyond that requests wait in the connection, first come first served, as h2load
 * and gRPC's Netty client hold them, and their wait counts in their latency.
 *
 * <p>Thread-safety: {@link #openLoop} is called from one thread at a time; connections are
 * driven on their event loop.
 */
final class HttpDemoLoad implements AutoCloseable {

  private static final long DRAIN_NANOS = TimeUnit.SECONDS.toNanos(3);

  private final EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
  private final Connection[] connections;
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

  /**
   * @param clientSide what the client side does
   * @param method the request's method ({@code POST} or {@code GET}); no request has a body
   * @param path the request's path
   */
  HttpDemoLoad(int port, int connectionCount, ClientSide clientSide, long sloNanos, String method,
      String path)
      throws InterruptedException {
    this.sloNanos = sloNanos;
    this.path = path;
    this.server = "http://127.0.0.1:" + port;
    this.pushback = clientSide == ClientSide.PLAIN ? null : new RetryPushback(Ticker.system());
    this.sessions = clientSide == ClientSide.CREDITS
        ? new SpillwayHttpSessions(java.time.Duration.ofNanos(sloNanos)) : null;
    this.session = sessions == null ? null : sessions.of(java.net.URI.create(server));
    Http2Headers headers = new DefaultHttp2Headers().method(method).path(path).scheme("http")
        .authority("127.0.0.1:" + port);
    connections = new Connection[connectionCount];
    try {
      connect(port, headers);
    } catch (Throwable e) { // Netty's sync() rethrows a refused connection unchecked
      close(); // the event loop's thread would keep the JVM alive
      throw e;
    }
  }

  private void connect(int port, Http2Headers headers) throws InterruptedException {
    for (int i = 0; i < connections.length; i++) {
      Connection c = new Connection(headers);
      Channel ch = new Bootstrap().group(group).channel(NioSocketChannel.class)
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
    PoissonArrivals.drive(rps, start, tally.to, seed, scheduled -> {
      if (scheduled - tally.from >= 0) {
        tally.issued();
      }
      if (pushback != null) {
        try {
          pushback.checkBeforeSending(server);
        } catch (SpillwayRejectedException held) {
          tally.heldOff(scheduled);
          return;
        }
      }
      Connection c = connections[(int) (id[0]++ % connections.length)];
      tally.outstanding.incrementAndGet();
      Pending p = new Pending(scheduled, tally);
      if (session == null) {
        c.channel.eventLoop().execute(() -> c.submit(p));
        return;
      }
      p.ticket = session.offer(path);
      p.ticket.released().whenComplete((released, expired) -> {
        if (expired != null) {
          tally.expired(scheduled);
        } else {
          c.channel.eventLoop().execute(() -> c.submit(p));
        }
      });
    });
    long until = System.nanoTime() + DRAIN_NANOS;
    while (tally.outstanding.get() > 0 && System.nanoTime() - until < 0) {
      Thread.sleep(5);
    }
    return tally.result(rps);
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
        if (pushback != null) {
          pushback.onResponse(server, p.status, p.pushbackMs, p.retryAfter);
        }
        finish(p, p.status);
      }
    }

    private void sendWaiting() {
      while (open.size() < maxStreams && !waiting.isEmpty()) {
        send(waiting.poll());
      }
    }

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
      p.tally.answered(p.scheduled, status, p.spillwayStatus, now);
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
      }
    }

    synchronized DemoLoad.Result result(double offeredRps) {
      StringBuilder reasons = new StringBuilder();
      byReason.forEach((k, v) -> reasons.append(reasons.isEmpty() ? "" : " ").append(k).append('=')
          .append(v[0]));
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
    for (Connection c : connections) {
      if (c != null) {
        c.channel.close();
      }
    }
    group.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(5, TimeUnit.SECONDS);
  }
}
