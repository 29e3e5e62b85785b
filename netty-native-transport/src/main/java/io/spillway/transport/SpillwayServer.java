package io.spillway.transport;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.util.concurrent.EventExecutor;
import io.spillway.asqm.CarrierDispatcher;
import io.spillway.api.BudgetExceededException;
import io.spillway.api.ControlChannel;
import io.spillway.api.ExecutorBacklogProbe;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.OverloadScheme;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.Scheduler;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.Ticker;
import io.spillway.threading.ArrivalRateEstimator;
import io.spillway.threading.ThreadingAdaptation;
import io.spillway.threading.ThreadingAdapter;
import io.spillway.threading.ThreadingModel;
import io.spillway.transport.internal.Frame;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A Spillway RPC server: frames in, an {@link OverloadScheme}'s server gate deciding on each request
 * right after its header is decoded, admitted requests run by a {@link RequestHandler} on the
 * dispatcher, responses out with the credits piggybacked.
 *
 * <p>The gate's queueing-delay signal is the sum of every event loop's backlog
 * ({@link ExecutorBacklogProbe}, one per loop, fed by the frames it decodes) and the dispatcher's
 * queue (Breakwater §3.1: the sum over stages).
 * By default each request runs on its own virtual thread scheduled on {@code parallelism} carrier
 * threads whose queue is that stage ({@code CarrierDispatcher}: every mount is stamped, so a
 * request waking after a lock or I/O counts again; docs/design.md, "Carrier-queue delay"). That
 * needs {@code --add-opens java.base/java.lang=ALL-UNNAMED}; without it requests run on the JDK's
 * own virtual-thread scheduler, whose queue the signal cannot see (its stage reads 0, and a
 * warning says so once), rather than on the platform pool {@code CarrierDispatcher.create} falls
 * back to: that pool holds a thread for every request that blocks, so a handler waiting on I/O
 * would cap the server at {@code parallelism} requests at once, where docs/design.md's fallback
 * is meant for handlers known to compute. A dispatcher given to {@link Builder#dispatcher}
 * replaces both.
 *
 * <p>Thread-safe. Build with {@link #builder()}, {@link #start()}, {@link #close()}.
 */
public final class SpillwayServer implements AutoCloseable {

  /** The default of {@link Builder#payloadTimeoutNanos}: one second. */
  public static final long DEFAULT_PAYLOAD_TIMEOUT_NANOS = 1_000_000_000L;

  private final Builder config;
  private final Transport transport;
  private final ConcurrentHashMap<Long, ServerFrameHandler> sessions = new ConcurrentHashMap<>();
  private final List<ExecutorBacklogProbe> probes = new ArrayList<>();
  private final java.util.Map<EventExecutor, ExecutorBacklogProbe> probeByLoop = new java.util.IdentityHashMap<>();
  private final java.util.Map<EventExecutor, LoopQueue> queueByLoop = new java.util.IdentityHashMap<>();
  private final java.util.Map<EventExecutor, ThreadingSwitch.Loop> threadingByLoop = new java.util.IdentityHashMap<>();
  /** Every accepted connection, so close() can end each (and its decoder's buffer) before its loop stops. */
  private final io.netty.channel.group.ChannelGroup connections =
      new io.netty.channel.group.DefaultChannelGroup(io.netty.util.concurrent.GlobalEventExecutor.INSTANCE);
  /** Connections whose reading is stopped until their client drains its responses (tests). */
  final java.util.concurrent.atomic.AtomicInteger pausedConnections = new java.util.concurrent.atomic.AtomicInteger();
  /** Connections whose reading is stopped after a refusal for want of credit (tests, harness). */
  final java.util.concurrent.atomic.AtomicInteger heldConnections = new java.util.concurrent.atomic.AtomicInteger();
  private EventLoopGroup group;
  // null until start() unless built with a ThreadingModel or adaptation; read from any thread
  private volatile ThreadingSwitch threadingSwitch;
  private WorkerPool workers;
  private volatile ThreadingAdapter adapter; // read by switchThreading from any thread
  private EventLoop adaptationLoop;
  private io.spillway.api.Cancellable adapting;
  private ExecutorService ownedDispatcher;
  private CarrierDispatcher ownedCarriers;
  private final AtomicLong origins = new AtomicLong();
  private static final int CARRIER_CLOSE_SECONDS = 2;
  private static final java.util.concurrent.atomic.AtomicBoolean UNMEASURED_WARNED =
      new java.util.concurrent.atomic.AtomicBoolean();
  private static final System.Logger LOG = System.getLogger(SpillwayServer.class.getName());
  private Executor dispatcher;
  private ServerGate gate;
  /** The run queue's delay: the loop queues' and the dispatcher's, not the loops' own backlog. */
  private QueueDelaySignal runQueueDelay = QueueDelaySignal.NONE;
  private Channel listener;
  private boolean started;

  private SpillwayServer(Builder b) {
    this.config = b.copy(); // a builder reused or changed later must not reach a running instance
    this.transport = transportFor(b);
  }

  /** The transport: the one forced, else the first available. Each can run every threading model. */
  private static Transport transportFor(Builder b) {
    return b.transport != null ? b.transport : Transport.select();
  }

  private static boolean anyPolls(java.util.Set<ThreadingModel> models) {
    return models.stream().anyMatch(ThreadingModel::polls);
  }

  public static Builder builder() {
    return new Builder();
  }

  /**
   * Binds and starts serving; returns this server. A server is started once: if it cannot start
   * (its port is taken), what it had started is stopped, as by {@link #close()}, and the failure is
   * thrown, since the caller has no started server to close and its event loops would keep the JVM
   * alive.
   */
  public synchronized SpillwayServer start() throws InterruptedException {
    if (started) {
      throw new IllegalStateException("already started");
    }
    started = true;
    try {
      return startServing();
    } catch (Throwable t) {
      close();
      throw t;
    }
  }

  private SpillwayServer startServing() throws InterruptedException {
    java.util.Set<ThreadingModel> models = config.models();
    if (!models.isEmpty()) {
      int max = ThreadingSwitch.maxWorkers(models);
      workers = max == 0 ? null : new WorkerPool(max, 0, config.ticker);
      threadingSwitch = new ThreadingSwitch(config.initialModel(), models, workers);
      group = anyPolls(models) ? transport.newEventLoopGroup(config.ioThreads, threadingSwitch::polls)
          : transport.newEventLoopGroup(config.ioThreads); // never polls: the loops' own waiting
    } else {
      group = transport.newEventLoopGroup(config.ioThreads);
    }
    List<QueueDelaySignal> loopQueues = new ArrayList<>();
    List<ArrivalRateEstimator> arrivals = new ArrayList<>();
    for (EventExecutor e : group) {
      ExecutorBacklogProbe probe = new ExecutorBacklogProbe(e);
      probes.add(probe);
      probeByLoop.put(e, probe);
      if (config.threading == Threading.LOOP_QUEUE || threadingSwitch != null) {
        LoopQueue q = new LoopQueue((EventLoop) e, config.ticker, config.sliceNanos);
        queueByLoop.put(e, q);
        loopQueues.add(q);
        if (threadingSwitch != null) {
          ArrivalRateEstimator a = config.adaptation == null ? null
              : new ArrivalRateEstimator(config.adaptation.bufferSize(), config.adaptation.smoothing());
          if (a != null) {
            arrivals.add(a);
          }
          threadingByLoop.put(e, threadingSwitch.new Loop(q, a));
        }
      }
    }
    if (workers != null) {
      loopQueues.add(workers);
    }
    QueueDelaySignal dispatcherDelay = config.dispatcherDelay;
    if (config.dispatcher != null) {
      dispatcher = config.dispatcher;
    } else if (config.threading != Threading.DISPATCH || threadingSwitch != null) {
      ownedDispatcher = Executors.newVirtualThreadPerTaskExecutor(); // requests run elsewhere
      dispatcher = ownedDispatcher;
    } else {
      ownedCarriers = CarrierDispatcher.onVirtualThreads(config.parallelism, config.ticker).orElse(null);
      if (ownedCarriers != null) {
        dispatcher = ownedCarriers;
        dispatcherDelay = ownedCarriers.queueDelay();
      } else {
        if (UNMEASURED_WARNED.compareAndSet(false, true)) {
          LOG.log(System.Logger.Level.WARNING, "requests run on the JDK's virtual-thread scheduler,"
              + " whose queue the overload signal cannot see: start the JVM with --add-opens"
              + " java.base/java.lang=ALL-UNNAMED (or =io.spillway.asqm) for a dispatcher whose queue"
              + " it measures, or give the builder one (Builder#dispatcher)");
        }
        ownedDispatcher = Executors.newVirtualThreadPerTaskExecutor();
        dispatcher = ownedDispatcher;
      }
    }
    List<QueueDelaySignal> runQueues = new ArrayList<>(loopQueues);
    runQueues.add(dispatcherDelay);
    runQueueDelay = QueueDelaySignal.sum(runQueues.toArray(QueueDelaySignal[]::new));
    List<QueueDelaySignal> stages = new ArrayList<>(probes);
    stages.addAll(runQueues);
    QueueDelaySignal delay = QueueDelaySignal.sum(stages.toArray(QueueDelaySignal[]::new));
    ControlChannel control = new ControlChannel() {
      @Override
      public void sendCredit(long sessionId, int creditDelta) {
        SpillwayServer.this.sendCredit(sessionId, creditDelta, 0, 0);
      }

      @Override
      public void sendCredit(long sessionId, int creditDelta, int window, long seq) {
        SpillwayServer.this.sendCredit(sessionId, creditDelta, window, seq);
      }
    };
    EventLoop controlLoop = (EventLoop) group.next();
    gate = config.scheme.newServerGate(new ServerEnvironment(config.ticker, Scheduler.of(controlLoop),
        delay, control, config.metrics, config.parallelism, true)); // ServerFrameHandler.execute
    gate.start();
    if (config.adaptation != null) {
      adapter = new ThreadingAdapter(config.ticker, arrivals, config.adaptation, threadingSwitch::current,
          threadingSwitch::adaptTo);
      adaptationLoop = controlLoop;
      threadingSwitch.adaptOnArrivals(adapter); // decisions ride on arrivals (ThreadingAdapter)
      ThreadingAdapter quiet = adapter;
      adapting = Scheduler.of(controlLoop).every(
          config.adaptation.periodNanos() * ThreadingAdapter.SILENCE_PERIODS,
          () -> quiet.runIfDue(config.ticker.read()));
    }
    ServerBootstrap b = new ServerBootstrap()
        .group(group)
        .channel(transport.serverChannelClass())
        .option(ChannelOption.SO_BACKLOG, 1024)
        .childOption(ChannelOption.TCP_NODELAY, true)
        .childHandler(new ChannelInitializer<>() {
          @Override
          protected void initChannel(Channel ch) {
            connections.add(ch);
            ch.pipeline().addLast("spillway-server", new ServerFrameHandler(SpillwayServer.this));
          }
        });
    listener = b.bind(config.host, config.port).sync().channel();
    return this;
  }

  /** The port bound (useful with port 0). */
  public int port() {
    return ((InetSocketAddress) listener.localAddress()).getPort();
  }

  /** The transport in use. */
  public Transport transport() {
    return transport;
  }

  /** The gate deciding on requests (for diagnostics and tests). */
  public ServerGate gate() {
    return gate;
  }

  /** Sessions currently bound to a connection. */
  public int boundSessions() {
    return sessions.size();
  }

  @Override
  public synchronized void close() {
    if (!started) {
      return;
    }
    if (listener != null) {
      listener.close().syncUninterruptibly();
    }
    // Close the connections and wait for it before stopping their loops: a loop that stops first
    // may never run a connection's close (io_uring closes asynchronously), and then its decoder
    // never releases the bytes it holds.
    connections.close().awaitUninterruptibly(2, TimeUnit.SECONDS);
    if (adapting != null) {
      adapting.cancel();
    }
    if (gate != null) {
      gate.close();
    }
    if (group != null) {
      group.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
    }
    if (workers != null) {
      workers.close();
    }
    if (ownedDispatcher != null) {
      ownedDispatcher.shutdown();
    }
    if (ownedCarriers != null) {
      closeCarriers(ownedCarriers);
    }
  }

  /**
   * Closes the owned carrier dispatcher, waiting up to {@value #CARRIER_CLOSE_SECONDS} s for the
   * requests still running (as long as the event loops are given): {@link CarrierDispatcher#close}
   * waits for every one, and a handler blocked for good must not hold this thread with it. Its
   * carriers are daemon threads.
   */
  private static void closeCarriers(CarrierDispatcher carriers) {
    Thread closer = Thread.ofPlatform().daemon(true).name("spillway-carrier-close").start(carriers::close);
    try {
      closer.join(java.time.Duration.ofSeconds(CARRIER_CLOSE_SECONDS));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  // ----------------------------------------------------------------- used by ServerFrameHandler

  ExecutorBacklogProbe probeFor(EventExecutor loop) {
    return probeByLoop.get(loop);
  }

  /** The loop's request queue under {@link Threading#LOOP_QUEUE}, else {@code null}. */
  LoopQueue queueFor(EventExecutor loop) {
    return queueByLoop.get(loop);
  }

  /** The threading in use when built without threading models. */
  public Threading threading() {
    return config.threading;
  }

  /**
   * The threading model requests follow now (µTune, mutune-osdi18 §3), if the server was built with
   * {@link Builder#threadingModel} or {@link Builder#adaptiveThreading}.
   */
  public java.util.Optional<ThreadingModel> threadingModel() {
    ThreadingSwitch s = threadingSwitch;
    if (s != null) {
      return java.util.Optional.of(s.current());
    }
    // not started: the model it will start in
    return config.models().isEmpty() ? java.util.Optional.empty() : java.util.Optional.of(config.initialModel());
  }

  /**
   * Moves the server to {@code model} while it serves: no request is lost or reordered (see
   * {@code ThreadingSwitch}).
   *
   * <p>Under {@link Builder#adaptiveThreading} this overrides the adaptation: the server stays in
   * {@code model}, whatever the load, until {@link #resumeAdaptiveThreading()}. An operator who
   * moves a server means it to run that model; an adaptation left running would move it back
   * within a few decisions (milliseconds) wherever the profile disagrees. The adaptation keeps
   * estimating the load meanwhile ({@link #estimatedArrivalRate()}), and its confirmations start
   * over (mutune-osdi18 §4: a move needs several decisions in a row, none of which may predate
   * the operator's).
   *
   * @throws IllegalStateException if the server was built without threading models, or has not
   *     started
   * @throws IllegalArgumentException if {@code model} is not among those it was built for
   */
  public void switchThreading(ThreadingModel model) {
    ThreadingSwitch s = threadingSwitch;
    if (s == null) {
      throw new IllegalStateException(config.models().isEmpty()
          ? "built without threading models: use Builder.threadingModel or adaptiveThreading"
          : "not started: a server switches threading models while it serves (start() first); it starts in "
              + config.initialModel());
    }
    s.switchTo(model);
    ThreadingAdapter a = adapter;
    if (a != null) {
      a.restart();
    }
  }

  /**
   * Hands the choice of threading model back to the adaptation after {@link #switchThreading}:
   * it moves the server again once the required number of its decisions, all made from now on,
   * agree on another model. Nothing happens if no switch overrides it.
   *
   * @throws IllegalStateException if the server was not built with {@link Builder#adaptiveThreading},
   *     or has not started
   */
  public void resumeAdaptiveThreading() {
    ThreadingSwitch s = threadingSwitch;
    ThreadingAdapter a = adapter;
    if (s == null || a == null) {
      throw new IllegalStateException(config.adaptation == null
          ? "built without adaptive threading: use Builder.adaptiveThreading"
          : "not started: start() first");
    }
    a.restart(); // before the adaptation may move again, so no earlier decision counts
    s.resume();
  }

  /** Whether an operator's {@link #switchThreading} holds the model against the adaptation. */
  public boolean adaptiveThreadingPaused() {
    ThreadingSwitch s = threadingSwitch;
    return adapter != null && s != null && s.pinned();
  }

  /** Runs one step of the adaptation on its loop and waits for it (tests: instead of its period). */
  void adaptNow() throws Exception {
    adaptationLoop.submit(adapter).get(20, TimeUnit.SECONDS);
  }

  /** How many times the threading model has changed; 0 without threading models. */
  public long threadingSwitches() {
    ThreadingSwitch s = threadingSwitch;
    return s == null ? 0 : s.switches();
  }

  /** The adaptation's last arrival-rate estimate (per second); 0 if the server does not adapt. */
  public double estimatedArrivalRate() {
    return adapter == null ? 0 : adapter.lastRate();
  }

  /** Requests waiting for a worker under a dispatch model (tests). */
  int queuedOnWorkers() {
    return workers == null ? 0 : workers.queued();
  }

  /** The network thread's side of the threading switch, or {@code null} without threading models. */
  ThreadingSwitch.Loop threadingFor(EventExecutor loop) {
    return threadingByLoop.get(loop);
  }

  Ticker ticker() {
    return config.ticker;
  }

  Executor dispatcher() {
    return dispatcher;
  }

  RequestHandler handler() {
    return config.handler;
  }

  long payloadTimeoutNanos() {
    return config.payloadTimeoutNanos;
  }

  int maxPayload() {
    return config.maxPayload;
  }

  /** The longest response payload sent (see {@link Builder#maxPayload}). */
  int maxResponsePayload() {
    return Math.max(config.maxPayload, Frame.DEFAULT_MAX_PAYLOAD);
  }

  /**
   * A number for a new connection, never 0 and never repeated while the server runs: its
   * requests' {@link io.spillway.api.RequestMetadata#origin}, by which a credit gate bounds the
   * sessions one connection has registered and not yet sent on again (Breakwater's server gate,
   * "Newcomers").
   */
  long nextOrigin() {
    return origins.incrementAndGet();
  }

  int maxSessionsPerConnection() {
    return config.maxSessionsPerConnection;
  }

  /**
   * Binds the session to {@code channel}'s connection unless another connection holds it; whether
   * {@code channel}'s connection holds it now.
   */
  boolean bind(long sessionId, Channel channel) {
    ServerFrameHandler handler = (ServerFrameHandler) channel.pipeline().get("spillway-server");
    ServerFrameHandler holder = sessions.putIfAbsent(sessionId, handler);
    return holder == null || holder == handler;
  }

  /** Whether no connection holds the session. */
  boolean isUnbound(long sessionId) {
    return !sessions.containsKey(sessionId);
  }

  void unbind(long sessionId, Channel channel) {
    sessions.remove(sessionId, (ServerFrameHandler) channel.pipeline().get("spillway-server"));
  }

  /**
   * The request's queueing budget left at dispatch, or {@link Long#MAX_VALUE} if it has none: the
   * smaller of the budget its client sent ({@link io.spillway.api.RequestMetadata#budgetNanos()},
   * what was left after its client queue) and the server's own, less its wait since admission.
   *
   * @param clockRead whether {@code nowNanos} is a reading of the server's ticker taken just now;
   *     if not, the ticker is read here, and only if the request has a budget
   * @throws BudgetExceededException if the budget the client sent is spent before the request
   *     runs: it is aborted unrun (docs/design.md, "Request budget": a budget shrinks by the
   *     time spent in each queue, and a request past it is turned away, not served late)
   */
  long budgetAtDispatch(long headerBudgetNanos, long admittedAtNanos, boolean clockRead, long nowNanos) {
    long budget = Math.min(headerBudgetNanos, config.queueingBudgetNanos);
    if (budget == Long.MAX_VALUE) {
      return Long.MAX_VALUE;
    }
    long now = clockRead ? nowNanos : config.ticker.read();
    long waited = Math.max(0, now - admittedAtNanos);
    if (waited >= headerBudgetNanos) {
      throw new BudgetExceededException(waited, headerBudgetNanos);
    }
    return Math.max(0, budget - waited);
  }

  /**
   * Protego's ASQM at the run queue (protego-nsdi23 §3.2: before a request is placed in a queue
   * for a contended resource, the queue's instantaneous delay is checked against the request's
   * remaining budget, and the request dropped if it is larger), with a server budget
   * ({@link Builder#queueingBudgetNanos}, ASQM on): whether the queue an admitted request would
   * join, the loop queues' and the dispatcher's, is already longer than its budget, the smaller
   * of the one it was sent with and the server's. Without a server budget, never: a header budget
   * alone bounds only the request's own wait ({@link #budgetAtDispatch}), as the simulator's
   * Breakwater with {@code breakwater.budget_us} does.
   */
  boolean outlastsBudget(long headerBudgetNanos, long nowNanos) {
    if (config.queueingBudgetNanos == Long.MAX_VALUE) {
      return false;
    }
    return runQueueDelay.queueingDelayNanos(nowNanos) > Math.min(headerBudgetNanos, config.queueingBudgetNanos);
  }

  boolean isBudgetAbort(Throwable t) {
    return t instanceof BudgetExceededException;
  }

  private void sendCredit(long sessionId, int delta, int window, long seq) {
    ServerFrameHandler handler = sessions.get(sessionId);
    if (handler != null) {
      handler.sendCreditFromAnyThread(sessionId, delta, window, seq);
    }
  }

  /** Configures a {@link SpillwayServer}. Not thread-safe. */
  public static final class Builder implements Cloneable {
    private String host = "127.0.0.1";
    private int port;
    private OverloadScheme scheme;
    private RequestHandler handler;
    private Transport transport;
    private int ioThreads = 1;
    private int parallelism = Runtime.getRuntime().availableProcessors();
    private Executor dispatcher;
    private QueueDelaySignal dispatcherDelay = QueueDelaySignal.NONE;
    private Ticker ticker = Ticker.system();
    private OverloadMetrics metrics = OverloadMetrics.NONE;
    private int maxPayload = Frame.DEFAULT_MAX_PAYLOAD;
    private int maxSessionsPerConnection = 16_384;
    private long queueingBudgetNanos = Long.MAX_VALUE;
    private long payloadTimeoutNanos = DEFAULT_PAYLOAD_TIMEOUT_NANOS;
    private Threading threading = Threading.DISPATCH;
    private ThreadingModel threadingModel;
    private ThreadingAdaptation adaptation;
    private long sliceNanos = 50_000;

    private Builder() { }

    public Builder host(String value) { host = Objects.requireNonNull(value); return this; }

    /** The port; 0 picks a free one (see {@link SpillwayServer#port()}). */
    public Builder port(int value) { port = value; return this; }

    public Builder scheme(OverloadScheme value) { scheme = value; return this; }

    public Builder handler(RequestHandler value) { handler = value; return this; }

    /** Forces a transport; by default {@link Transport#select()}. */
    public Builder transport(Transport value) { transport = value; return this; }

    public Builder ioThreads(int value) { ioThreads = value; return this; }

    /** Requests the server runs at once (its cores or carrier threads); the credit pool's floor. */
    public Builder parallelism(int value) { parallelism = value; return this; }

    /**
     * Runs admitted requests; {@code delay} is its queue's delay, a stage of the overload signal.
     * Not with {@link #threadingModel} or {@link #adaptiveThreading}, whose dispatch models run
     * on a worker pool of their own ({@link #build} refuses the combination).
     */
    public Builder dispatcher(Executor value, QueueDelaySignal delay) {
      dispatcher = Objects.requireNonNull(value);
      dispatcherDelay = Objects.requireNonNull(delay);
      return this;
    }

    public Builder ticker(Ticker value) { ticker = Objects.requireNonNull(value); return this; }

    public Builder metrics(OverloadMetrics value) { metrics = Objects.requireNonNull(value); return this; }

    /**
     * The largest request payload accepted (1 MiB by default): a longer request closes its
     * connection. A response may carry as much, or 1 MiB if that is more (what a client accepts
     * unless set otherwise); a longer one fails its request ({@code FAILED}), as the client would
     * close the connection on it.
     */
    public Builder maxPayload(int value) { maxPayload = value; return this; }

    /**
     * How many sessions one connection may register (16,384 by default, far above what a client
     * multiplexes over a connection). A request for a further session is refused {@code
     * REJECTED_NO_CREDIT} without registering it, so a client that invents session ids cannot
     * grow the session table, or n_c and with it the credit pool's ceiling, without bound.
     */
    public Builder maxSessionsPerConnection(int value) { maxSessionsPerConnection = value; return this; }

    /**
     * How long a request admitted at its header may take for the rest of its payload to arrive
     * ({@value SpillwayServer#DEFAULT_PAYLOAD_TIMEOUT_NANOS} ns by default) before its connection
     * is closed and the request ends {@code FAILED}, unrun. An admitted request holds its permit
     * while its payload is on its way, one slot of a concurrency limit or one credit of its
     * session, so a client that sends a header and stalls the rest would otherwise hold that
     * permit for as long as it keeps the connection open. The default is far past any SLO this
     * transport serves (microseconds to tens of milliseconds): 1 MiB, the largest payload by
     * default, arrives within it at 8 Mbit/s, and an answer that late is of no use to its caller.
     * A frame's header has as long, from the read that left part of it buffered, before its
     * connection is closed: nothing is admitted yet, but a client could otherwise keep a connection
     * and its buffered bytes for ever by sending headers a byte at a time. A connection with no
     * part of a frame read is idle, and is not timed.
     */
    public Builder payloadTimeoutNanos(long value) { payloadTimeoutNanos = value; return this; }

    /**
     * A queueing budget for every request (Protego §3.2: target − p99 service − p99 network); a
     * request's own budget header, if smaller, wins. Set, it turns on Protego's ASQM at the run
     * queue: an admitted request is refused ({@code REJECTED_BUDGET}, its permit ended
     * {@code ABORTED}) before it queues if the run queue's delay already exceeds its budget.
     * Unset: no budget.
     */
    public Builder queueingBudgetNanos(long value) { queueingBudgetNanos = value; return this; }

    /** Where admitted requests run; {@link Threading#DISPATCH} by default. */
    public Builder threading(Threading value) { threading = Objects.requireNonNull(value); return this; }

    /**
     * Runs requests under one of µTune's threading models (mutune-osdi18 §3), fixed unless changed
     * with {@link SpillwayServer#switchThreading}; takes the place of {@link #threading} and {@link
     * #dispatcher}, which may not be set with it ({@link #build} refuses). Dispatch models run on a
     * pool of platform threads started up front, parked or woken to each model's size (§3.2), which
     * an executor given from outside cannot be. Every transport runs every model: a polling model's
     * loops ask the kernel for I/O without waiting (see {@link Transport}).
     */
    public Builder threadingModel(ThreadingModel value) {
      threadingModel = Objects.requireNonNull(value);
      return this;
    }

    /**
     * Adapts the threading model to load as µTune does (mutune-osdi18 §4): the server starts in
     * the profile's best model at no load and moves among the profile's models as the estimated
     * arrival rate changes. Replaces {@link #threadingModel}'s fixed choice; like it, may not be
     * set with {@link #threading} or {@link #dispatcher}.
     */
    public Builder adaptiveThreading(ThreadingAdaptation value) {
      adaptation = Objects.requireNonNull(value);
      return this;
    }

    /** The threading models this server may run: none, the fixed one, or the profile's. */
    java.util.Set<ThreadingModel> models() {
      if (adaptation != null) {
        return adaptation.models();
      }
      return threadingModel == null ? java.util.Set.of() : java.util.Set.of(threadingModel);
    }

    ThreadingModel initialModel() {
      return adaptation != null ? adaptation.profile().best(0) : threadingModel;
    }

    /** Under {@link Threading#LOOP_QUEUE}: how long a loop runs requests before reading again. */
    public Builder sliceNanos(long value) { sliceNanos = value; return this; }

    /** A copy with the same values: every field is a value or an immutable reference. */
    Builder copy() {
      try {
        return (Builder) super.clone();
      } catch (CloneNotSupportedException e) {
        throw new AssertionError(e);
      }
    }

    /**
     * @throws IllegalArgumentException if something required is missing or out of range
     * @throws IllegalStateException if settings conflict: {@link #dispatcher} or {@link
     *     Threading#LOOP_QUEUE} with {@link #threadingModel} or {@link #adaptiveThreading} (the
     *     models decide where requests run, and the other setting would go unused)
     */
    public SpillwayServer build() {
      if (scheme == null || handler == null) {
        throw new IllegalArgumentException("a server needs a scheme and a handler");
      }
      if (ioThreads < 1 || parallelism < 1 || maxPayload < 0 || sliceNanos <= 0
          || queueingBudgetNanos < 0 || port < 0 || port > 65_535 || maxSessionsPerConnection < 1
          || payloadTimeoutNanos <= 0) {
        throw new IllegalArgumentException("out of range: ioThreads=" + ioThreads + " parallelism="
            + parallelism + " maxPayload=" + maxPayload + " port=" + port
            + " maxSessionsPerConnection=" + maxSessionsPerConnection
            + " payloadTimeoutNanos=" + payloadTimeoutNanos);
      }
      if (!models().isEmpty() && (dispatcher != null || threading != Threading.DISPATCH)) {
        String models = adaptation != null ? "adaptiveThreading" : "threadingModel(" + threadingModel + ")";
        throw new IllegalStateException(models + " conflicts with "
            + (dispatcher != null ? "dispatcher(...)" : "threading(" + threading + ")")
            + ": threading models run requests in-line on the event loop or on their own worker pool,"
            + " sized per model, and the other setting would be left unused; set one or the other");
      }
      return new SpillwayServer(this);
    }
  }
}
