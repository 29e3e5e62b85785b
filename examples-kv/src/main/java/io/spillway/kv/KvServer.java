package io.spillway.kv;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.util.concurrent.GlobalEventExecutor;
import io.netty.util.concurrent.EventExecutor;
import io.spillway.api.ControlChannel;
import io.spillway.api.ExecutorBacklogProbe;
import io.spillway.api.NoControl;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.OverloadScheme;
import io.spillway.api.Outcome;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.RequestBudget;
import io.spillway.api.Scheduler;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.ServerPermit;
import io.spillway.api.ServiceTimeTracker;
import io.spillway.api.Status;
import io.spillway.api.Ticker;
import io.spillway.credit.Spillway;
import io.spillway.transport.SpillwayServer;
import io.spillway.transport.Threading;
import io.spillway.transport.Transport;
import java.time.Duration;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.UnaryOperator;

/**
 * A memcached-protocol server over {@link KvStore}: memcached's text protocol on Spillway's
 * Netty transport (epoll, else Spillway's transport choice; see {@link #defaultTransport}), one
 * event loop per core, each connection's commands executed in-line on its loop as a memcached
 * worker thread executes them.
 *
 * <h2>Overload control</h2>
 *
 * <p>Protection is on by default ({@link Protection#ASQM}): every data command runs with a Protego
 * queueing budget in scope (protego-nsdi23 §3.2: the target delay, 110 µs by default as §5.3
 * sets it, minus the running p99 of the service time), so the slab, item and LRU locks refuse it
 * with {@code SERVER_ERROR overloaded} rather than let it queue past its target. {@link
 * Protection#SPILLWAY} adds the default gate ({@link Spillway}: delay-based AQM and an adaptive
 * concurrency limit on the event loops' queueing delay) once a command line is parsed. It is not
 * the default here because refusing a command costs the loop about what serving it costs (a
 * parse and a reply line against a hash lookup and a copy), so a refusal frees no capacity, and
 * the loops' delay does not include the kernel's socket queue, where a plain client's backlog
 * waits: measured, the gate refused 5–16 % of requests at 0.25–0.4 × capacity, loads the server
 * serves whole without it (docs/results/kv.md, "Demand sweep, open loop"). {@link
 * Protection#NONE} is plain memcached.
 *
 * <h2>Spillway-aware clients</h2>
 *
 * <p>With {@link Builder#framePort} the same store is also served over Spillway's native frame
 * ({@link KvFrameCodec}) on a {@link SpillwayServer} of its own event loops: the frame's gate
 * admits requests on credits ({@link FrameScheme}; Protego's by default) before their payload is
 * read, each request then runs with the same budgets at the same locks, and a request a lock
 * refuses is answered with a header-only {@code REJECTED_BUDGET}, a fast reject that {@link
 * KvClient} reports and {@link KvReplicaClient} may retry on a replica (protego-nsdi23 §5.3).
 *
 * <p>Thread-safe; {@link #start} and {@link #close} once each.
 */
public final class KvServer implements AutoCloseable {

  /** The version string {@code version} answers. */
  public static final String VERSION = "1.6.0-spillway-kv";

  /** What protects the store. */
  public enum Protection {
    /** Spillway's default gate before each command, and ASQM budgets at the locks. */
    SPILLWAY,
    /**
     * ASQM budgets at the locks, no admission gate (Protego's ASQM alone, Fig. 11's ablation); the
     * default.
     */
    ASQM,
    /** Nothing: memcached's behaviour. */
    NONE;

    /** The protection called {@code name} ({@code spillway}, {@code asqm}, {@code none}). */
    public static Protection parse(String name) {
      for (Protection p : values()) {
        if (p.name().equalsIgnoreCase(name)) {
          return p;
        }
      }
      throw new IllegalArgumentException("unknown scheme '" + name
          + "'; known: asqm (default), spillway, none");
    }
  }

  /**
   * The admission scheme of the native-frame port ({@link Builder#framePort}): credits for
   * Spillway-aware clients ({@link KvClient}), which build their side of the scheme with the same
   * value.
   */
  public enum FrameScheme {
    /**
     * Protego's credits (protego-nsdi23 §3.1: the pool sized by throughput slope, drops counted
     * from the budgeted locks' aborts); the default.
     */
    PROTEGO,
    /** Breakwater's credits, demand speculation and delay-based AQM (breakwater-osdi20 §3). */
    BREAKWATER,
    /**
     * The library's default ({@link io.spillway.credit.Spillway#forSloNanos}): Breakwater's credits
     * with the rules that follow what the server and its clients measure, and the request budget
     * its clients derive. Spillway takes the end-to-end SLO, not a per-server target: twice the
     * target, the SLO of Protego's memcached experiments (protego-nsdi23 §5.3, Fig. 8) and what
     * {@code kv-frame-load} counts goodput within.
     */
    SPILLWAY,
    /** No admission control; the locks' budgets still refuse what would be late. */
    NONE;

    /**
     * The scheme for a store whose target delay is {@code targetNanos}: the credits' SLO is the
     * target (the paper's per-server target, §5.3) and their network RTT a tenth of it, the
     * unloaded credit-to-response time (ProtegoConfig.forSlo).
     */
    public OverloadScheme scheme(long targetNanos) {
      long rtt = Math.max(1_000, targetNanos / 10);
      return switch (this) {
        case PROTEGO -> io.spillway.credit.Protego.of(io.spillway.credit.ProtegoConfig.forSlo(targetNanos, rtt));
        case BREAKWATER -> io.spillway.credit.Breakwater.of(
            io.spillway.credit.BreakwaterConfig.forSlo(targetNanos, rtt));
        case SPILLWAY -> io.spillway.credit.Spillway.forSloNanos(2 * targetNanos);
        case NONE -> NoControl.INSTANCE;
      };
    }

    /**
     * The scheme called {@code name} ({@code protego}, {@code breakwater}, {@code spillway},
     * {@code none}).
     */
    public static FrameScheme parse(String name) {
      for (FrameScheme f : values()) {
        if (f.name().equalsIgnoreCase(name)) {
          return f;
        }
      }
      throw new IllegalArgumentException("unknown frame scheme '" + name
          + "'; known: protego (default), breakwater, spillway, none");
    }
  }

  private final Config config;
  private final KvStore store;
  private final ServiceTimeTracker serviceTimes = new ServiceTimeTracker();
  private final long startedAt;
  private final Map<EventExecutor, ExecutorBacklogProbe> probes = new IdentityHashMap<>();
  private final LongAdder rejectedGate = new LongAdder();
  private final LongAdder rejectedBudget = new LongAdder();
  private final AtomicLong connections = new AtomicLong();
  private final AtomicLong paused = new AtomicLong();
  private final LongAdder totalConnections = new LongAdder();
  private final LongAdder connectionErrors = new LongAdder();
  private final LongAdder handlerFailures = new LongAdder();
  private final ChannelGroup open = new DefaultChannelGroup(GlobalEventExecutor.INSTANCE);
  private EventLoopGroup group;
  private Channel listener;
  private ServerGate gate;
  private SpillwayServer frameServer;
  /** The transport the text port serves on, once started ({@code stats}: {@code spillway_transport}). */
  private volatile Transport servingTransport;
  private volatile boolean closed;

  private KvServer(Config config) {
    this.config = config;
    this.store = new KvStore(config.memoryBytes, config.ticker, () -> System.currentTimeMillis() / 1000);
    this.startedAt = System.currentTimeMillis() / 1000;
  }

  /** A builder with memcached's defaults: port 11211, 64 MiB, one core, ASQM budgets on. */
  public static Builder builder() {
    return new Builder();
  }

  /** Binds and serves; returns this server. */
  public synchronized KvServer start() throws InterruptedException {
    if (group != null) {
      throw new IllegalStateException("already started");
    }
    Transport transport = config.transport != null ? config.transport : defaultTransport();
    servingTransport = transport;
    group = transport.newEventLoopGroup(config.cores);
    List<QueueDelaySignal> stages = new ArrayList<>();
    for (EventExecutor e : group) {
      ExecutorBacklogProbe probe = new ExecutorBacklogProbe(e);
      probes.put(e, probe);
      stages.add(probe);
    }
    OverloadScheme scheme = config.textSchemeWrapper.apply(config.protection == Protection.SPILLWAY
        ? Spillway.forSloNanos(config.targetNanos) : NoControl.INSTANCE);
    ControlChannel noSessions = (sessionId, response) -> { };
    gate = scheme.newServerGate(new ServerEnvironment(config.ticker, Scheduler.of(group.next()),
        QueueDelaySignal.sum(stages.toArray(QueueDelaySignal[]::new)), noSessions,
        OverloadMetrics.NONE, config.cores));
    gate.start();
    ServerBootstrap b = new ServerBootstrap()
        .group(group)
        .channel(transport.serverChannelClass())
        .option(ChannelOption.SO_BACKLOG, 1024)
        .childOption(ChannelOption.TCP_NODELAY, true)
        .childHandler(new ChannelInitializer<>() {
          @Override
          protected void initChannel(Channel ch) {
            connections.incrementAndGet();
            totalConnections.increment();
            open.add(ch);
            ch.closeFuture().addListener(f -> connections.decrementAndGet());
            ch.pipeline().addLast("memcached-text", new TextProtocolHandler(KvServer.this,
                probes.get(ch.eventLoop())));
          }
        });
    if (config.port >= 0) {
      listener = b.bind(config.host, config.port).sync().channel();
    }
    if (config.framePort >= 0) {
      OverloadScheme frameScheme = config.frameSchemeWrapper.apply(config.frameScheme.scheme(config.targetNanos));
      // Requests run on their connection's loop, in slices (LOOP_QUEUE), as the text protocol
      // runs its commands in-line: a store operation is shorter than a hand-off to another thread.
      frameServer = SpillwayServer.builder().host(config.host).port(config.framePort)
          .scheme(frameScheme).handler(new KvFrameHandler(this)).transport(transport)
          .ioThreads(config.cores).parallelism(config.cores).threading(Threading.LOOP_QUEUE)
          .payloadTimeoutNanos(config.inputTimeoutNanos)
          .ticker(config.ticker).metrics(config.frameMetrics).build().start();
    }
    return this;
  }

  /**
   * epoll where available, else {@link Transport#select()}'s choice; a forced {@code
   * -Dspillway.transport} is obeyed. Not io_uring first, as {@link Transport#select()} would: the
   * event-loop delay signal ({@link ExecutorBacklogProbe}) is stamped when a read starts a command
   * and cleared by a task, so it holds only if the loop runs its tasks before it reads a later
   * request. A command's reply is written while its read is handled. With epoll and NIO the reply
   * leaves in that write, and the next request is read in a later iteration, after the tasks.
   * Netty's io_uring loop (4.2.18) submits the write and goes on reaping completions and
   * submitting what they queue, up to 128 rounds, before it runs tasks; a client's next request,
   * sent on that reply, can be read in one of those rounds, and then reads the earlier stamp (the
   * earlier request's service plus any stall of the loop) as its queueing delay. The task itself
   * waits as long on either transport.
   *
   * <p>Measured with {@code examples-kv/bench/probe-readings.sh OUT ROUND}, rounds 1–3 (2 cores,
   * JDK 25.0.3, Netty 4.2.18). One connection, one GET at a time, 20,000 a round: the task ran a
   * mean 27–31 µs after it was submitted on io_uring, 26–30 µs on epoll, 14–15 µs on NIO; every
   * delay read at admission was 0 on epoll and NIO, while on io_uring 0.23–0.34 % were not (up to
   * 5.8 ms) and the {@code spillway} gate's AQM refused 40–61 GETs a round. Open loop at 300
   * requests/s ({@code ./spillway kv-load}, 10 % SET) that gate refused 11.0–13.2 % on io_uring,
   * 2.8–4.3 % on epoll and 2.5–4.3 % on NIO; at 1,000/s 9.1–13.3 %, 2.9–5.0 % and 2.7–6.7 %.
   */
  static Transport defaultTransport() {
    String forced = System.getProperty(Transport.PROPERTY);
    if ((forced == null || forced.isBlank()) && Transport.EPOLL.isAvailable()) {
      return Transport.EPOLL;
    }
    return Transport.select();
  }

  /** The text protocol's port bound (useful with port 0). */
  public int port() {
    if (listener == null) {
      throw new IllegalStateException("no text port: built with port(-1)");
    }
    return ((java.net.InetSocketAddress) listener.localAddress()).getPort();
  }

  /** The native-frame port bound, or -1 if the server has none ({@link Builder#framePort}). */
  public int framePort() {
    return frameServer == null ? -1 : frameServer.port();
  }

  /** The native-frame server's gate (tests). */
  ServerGate frameGate() {
    return frameServer.gate();
  }

  /** The store. */
  public KvStore store() {
    return store;
  }

  Ticker ticker() {
    return config.ticker;
  }

  ServerGate gate() {
    return gate;
  }

  long inputTimeoutNanos() {
    return config.inputTimeoutNanos;
  }

  /** A fresh budget for a request admitted now, or null when budgets are off. */
  RequestBudget budget() {
    if (config.protection == Protection.NONE) {
      return null;
    }
    return RequestBudget.fromTarget(config.targetNanos, serviceTimes.p99Nanos(), 0);
  }

  void completed(ServerPermit permit, Outcome outcome, long start, long now,
      io.spillway.api.ResponseMetadata scratch) {
    if (outcome == Outcome.SUCCESS) {
      serviceTimes.record(now - start);
    }
    permit.complete(outcome, now, scratch);
  }

  /** A native-frame request was served in {@code nanos} (the p99 the budgets subtract). */
  void served(long nanos) {
    serviceTimes.record(nanos);
  }

  void refused(Status status) {
    if (status == Status.REJECTED_BUDGET) {
      rejectedBudget.increment();
    } else {
      rejectedGate.increment();
    }
  }

  /** The reply to a refused command: memcached's error form with the reason and a retry hint. */
  byte[] rejectLine(Status status) {
    return REJECT_LINES[status.ordinal()];
  }

  private static final byte[][] REJECT_LINES = new byte[Status.values().length][];

  static {
    for (Status s : Status.values()) {
      REJECT_LINES[s.ordinal()] =
          TextProtocolHandler.bytes("SERVER_ERROR overloaded (" + reason(s) + ")\r\n");
    }
  }

  private static String reason(Status status) {
    return switch (status) {
      case REJECTED_AQM -> "queueing delay";
      case REJECTED_BUDGET -> "lock queue exceeds budget";
      case REJECTED_LIMIT, REJECTED_NO_CREDIT -> "concurrency limit";
      default -> status.name().toLowerCase(Locale.ROOT);
    };
  }

  /**
   * A connection failed and is closed. A peer's reset or broken pipe is counted only; anything
   * else is a bug here and is logged with its stack trace, at most once a second.
   */
  void connectionFailed(Throwable cause) {
    connectionErrors.increment();
    if (cause instanceof java.io.IOException) {
      return;
    }
    handlerFailures.increment();
    lastHandlerFailure = cause;
    long now = System.nanoTime();
    long last = lastFailureLog.get();
    if (now - last >= 1_000_000_000L && lastFailureLog.compareAndSet(last, now)) {
      LOG.log(System.Logger.Level.WARNING, "connection closed after a handler failure ("
          + handlerFailures.sum() + " so far)", cause);
    }
  }

  private static final System.Logger LOG = System.getLogger(KvServer.class.getName());
  private final AtomicLong lastFailureLog = new AtomicLong(System.nanoTime() - 2_000_000_000L);
  private volatile Throwable lastHandlerFailure;

  /** A connection stopped reading because its client does not take its replies, or resumed. */
  void connectionPaused(boolean nowPaused) {
    paused.addAndGet(nowPaused ? 1 : -1);
  }

  /** Connections not being read until their clients take the replies already sent. */
  /** The server's event loops: a task run there comes between two of a connection's events. */
  EventLoopGroup eventLoops() {
    return group;
  }

  long pausedConnections() {
    return paused.get();
  }

  /** Reply bytes written to connections and not yet taken by the kernel, over all connections. */
  long pendingOutboundBytes() {
    long total = 0;
    for (Channel ch : open) {
      io.netty.channel.ChannelOutboundBuffer b = ch.unsafe().outboundBuffer();
      if (b != null) {
        total += b.totalPendingWriteBytes();
      }
    }
    return total;
  }

  /** Connections closed because handling their input threw something other than an I/O error. */
  long handlerFailures() {
    return handlerFailures.sum();
  }

  /** The latest of {@link #handlerFailures()}, or null: the log keeps at most one a second. */
  Throwable lastHandlerFailure() {
    return lastHandlerFailure;
  }

  /** Connections accepted on the text port since start ({@code stats}: {@code total_connections}). */
  long totalConnections() {
    return totalConnections.sum();
  }

  /** Requests refused by the gate, and by budgets at locks. */
  public long[] rejected() {
    return new long[] {rejectedGate.sum(), rejectedBudget.sum()};
  }

  String stats() {
    long now = System.currentTimeMillis() / 1000;
    SlabAllocator.Usage u = store.slabs().usage();
    StringBuilder s = new StringBuilder(1024);
    stat(s, "pid", ProcessHandle.current().pid());
    stat(s, "uptime", now - startedAt);
    stat(s, "time", now);
    stat(s, "version", VERSION);
    stat(s, "pointer_size", 64);
    stat(s, "curr_connections", connections.get());
    stat(s, "total_connections", totalConnections.sum());
    stat(s, "cmd_get", store.cmdGet.sum());
    stat(s, "cmd_set", store.cmdSet.sum());
    stat(s, "cmd_touch", store.cmdTouch.sum());
    stat(s, "get_hits", store.getHits.sum());
    stat(s, "get_misses", store.getMisses.sum());
    stat(s, "get_expired", store.expiredUnfetched.sum());
    stat(s, "reclaimed", store.reclaimed.sum());
    stat(s, "evictions", store.evictions.sum());
    stat(s, "curr_items", store.currItems.get());
    stat(s, "total_items", store.totalItems.sum());
    stat(s, "bytes", u.usedBytes());
    stat(s, "limit_maxbytes", (long) u.maxPages() * SlabAllocator.PAGE_SIZE);
    stat(s, "slabs_moved", u.pagesMoved());
    stat(s, "threads", config.cores);
    stat(s, "spillway_protection", config.protection.name().toLowerCase(Locale.ROOT));
    stat(s, "spillway_target_us", config.targetNanos / 1000);
    stat(s, "spillway_transport", servingTransport.name().toLowerCase(Locale.ROOT));
    stat(s, "spillway_rejected_gate", rejectedGate.sum());
    stat(s, "spillway_rejected_budget", rejectedBudget.sum());
    stat(s, "spillway_p99_service_ns", serviceTimes.p99Nanos());
    stat(s, "spillway_slab_lock_waiters", store.slabs().lock().waiters());
    return s.append("END\r\n").toString();
  }

  String slabStats() {
    SlabAllocator.Usage u = store.slabs().usage();
    StringBuilder s = new StringBuilder();
    stat(s, "total_malloced", (long) u.pages() * SlabAllocator.PAGE_SIZE);
    stat(s, "used_chunks", u.usedChunks());
    stat(s, "free_chunks", u.freeChunks());
    stat(s, "total_chunks", u.totalChunks());
    stat(s, "active_slabs", u.pages());
    return s.append("END\r\n").toString();
  }

  void resetStats() {
    store.cmdGet.reset();
    store.cmdSet.reset();
    store.cmdTouch.reset();
    store.getHits.reset();
    store.getMisses.reset();
    store.evictions.reset();
    store.totalItems.reset();
    rejectedGate.reset();
    rejectedBudget.reset();
  }

  private static void stat(StringBuilder s, String name, Object value) {
    s.append("STAT ").append(name).append(' ').append(value).append("\r\n");
  }

  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    if (listener != null) {
      listener.close().syncUninterruptibly();
    }
    if (frameServer != null) {
      frameServer.close();
    }
    if (gate != null) {
      gate.close();
    }
    if (group != null) {
      group.shutdownGracefully(0, 1, java.util.concurrent.TimeUnit.SECONDS).syncUninterruptibly();
    }
  }

  private record Config(String host, int port, long memoryBytes, int cores, Protection protection,
      long targetNanos, Ticker ticker, Transport transport, int framePort, FrameScheme frameScheme,
      UnaryOperator<OverloadScheme> frameSchemeWrapper, UnaryOperator<OverloadScheme> textSchemeWrapper,
      io.spillway.api.OverloadMetrics frameMetrics, long inputTimeoutNanos) { }

  /** Builds a {@link KvServer}. Not thread-safe. */
  public static final class Builder {
    private String host = "0.0.0.0";
    private int port = 11211;
    private long memoryBytes = 64L << 20;
    private int cores = 1;
    private Protection protection = Protection.ASQM;
    private long targetNanos = 110_000;
    private long inputTimeoutNanos = 1_000_000_000L;
    private Ticker ticker = Ticker.system();
    private Transport transport;
    private int framePort = -1;
    private FrameScheme frameScheme = FrameScheme.PROTEGO;
    private UnaryOperator<OverloadScheme> frameSchemeWrapper = UnaryOperator.identity();
    private UnaryOperator<OverloadScheme> textSchemeWrapper = UnaryOperator.identity();
    private io.spillway.api.OverloadMetrics frameMetrics = io.spillway.api.OverloadMetrics.NONE;

    private Builder() { }

    /** Where the frame port's gate reports its decisions and its credit pool. */
    public Builder frameMetrics(io.spillway.api.OverloadMetrics value) {
      frameMetrics = Objects.requireNonNull(value);
      return this;
    }

    public Builder host(String value) { host = Objects.requireNonNull(value); return this; }

    /** The text protocol's port; 0 picks a free one, -1 serves no text protocol. */
    public Builder port(int value) {
      if (value < -1 || value > 65535) {
        throw new IllegalArgumentException("port out of range: " + value);
      }
      port = value;
      return this;
    }

    /** The memory limit for values ({@code -m}), at least 1 MiB. */
    public Builder memoryMegabytes(long value) {
      if (value < 1 || value > 32_768) {
        // a chunk handle is page << 16 | slot in an int: at most 32,768 pages of 1 MiB
        throw new IllegalArgumentException("memory must be 1 to 32768 MiB: " + value);
      }
      memoryBytes = value << 20;
      return this;
    }

    /** Event loops ({@code -t}), each a memcached worker thread. */
    public Builder cores(int value) {
      if (value < 1) {
        throw new IllegalArgumentException("cores must be at least 1: " + value);
      }
      cores = value;
      return this;
    }

    /**
     * Also serves the KV operations over Spillway's native frame ({@link KvClient}) on this port;
     * 0 picks a free one ({@link KvServer#framePort()}), -1 (the default) serves none.
     */
    public Builder framePort(int value) {
      if (value < -1 || value > 65535) {
        throw new IllegalArgumentException("frame port out of range: " + value);
      }
      framePort = value;
      return this;
    }

    /** The native-frame port's admission scheme; {@link FrameScheme#PROTEGO} by default. */
    public Builder frameScheme(FrameScheme value) { frameScheme = Objects.requireNonNull(value); return this; }

    boolean hasTextPort() {
      return port >= 0;
    }

    /** Tests: wraps the frame port's scheme (to check its gate for leaks). */
    Builder frameSchemeWrapper(UnaryOperator<OverloadScheme> value) {
      frameSchemeWrapper = Objects.requireNonNull(value);
      return this;
    }

    /** Tests: replaces or wraps the text port's gate scheme (to refuse chosen commands). */
    Builder textSchemeWrapper(UnaryOperator<OverloadScheme> value) {
      textSchemeWrapper = Objects.requireNonNull(value);
      return this;
    }

    public Builder protection(Protection value) { protection = Objects.requireNonNull(value); return this; }

    /** Protego's target delay (protego-nsdi23 §5.3 uses 110 µs for memcached). */
    public Builder target(Duration value) {
      if (value.isNegative() || value.isZero()) {
        throw new IllegalArgumentException("target must be positive: " + value);
      }
      targetNanos = value.toNanos();
      return this;
    }

    public Builder ticker(Ticker value) { ticker = Objects.requireNonNull(value); return this; }

    /**
     * How long an admitted command may wait for the rest of its input, its value or the rest of a
     * long multi-get line, before its connection is closed (one second by default); it applies to
     * the frame port's payloads too. The command holds its admission permit while it waits, so a
     * client that stalls would otherwise hold it for as long as it keeps the connection open. One
     * second is four orders of magnitude past the target, and a 1 MiB value arrives within it at
     * 8 Mbit/s. A command line (a frame's header, on the frame port) begun and not whole has as
     * long from the read that left it so: nothing is admitted yet, but a client could otherwise
     * keep its connection and the bytes buffered for it for ever by sending a byte at a time. A
     * connection between commands is idle, and is not timed.
     */
    public Builder inputTimeout(Duration value) {
      if (value.isNegative() || value.isZero()) {
        throw new IllegalArgumentException("input timeout must be positive: " + value);
      }
      inputTimeoutNanos = value.toNanos();
      return this;
    }

    public Builder transport(Transport value) { transport = value; return this; }

    /**
     * @throws IllegalArgumentException if the item memory, allocated at once, would not leave 64
     *     MiB of the JVM's heap for everything else
     */
    public KvServer build() {
      long heap = Runtime.getRuntime().maxMemory();
      if (memoryBytes > heap - (64L << 20)) {
        throw new IllegalArgumentException("memory " + (memoryBytes >> 20) + " MiB does not fit in"
            + " this JVM's heap (" + (heap >> 20) + " MiB, 64 MiB kept free): raise -Xmx or lower"
            + " the memory");
      }
      if (port < 0 && framePort < 0) {
        throw new IllegalArgumentException("no port to serve: a text port, a frame port, or both");
      }
      return new KvServer(new Config(host, port, memoryBytes, cores, protection, targetNanos,
          ticker, transport, framePort, frameScheme, frameSchemeWrapper, textSchemeWrapper, frameMetrics,
          inputTimeoutNanos));
    }
  }
}
