package io.spillway.grpc;

import io.grpc.BindableService;
import io.grpc.ServerBuilder;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.spillway.api.CpuQuotaDelay;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.OverloadScheme;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.Scheduler;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.Ticker;
import io.spillway.asqm.CarrierDispatcher;
import io.spillway.credit.Spillway;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.Executor;

/**
 * An admission scheme wired into a gRPC server: the scheme's {@link ServerGate} (started), the
 * {@link SpillwayServerInterceptor} in front of the services, the {@link SpillwayControlService}
 * that carries explicit credits, demand reports and deregistrations, and, when
 * {@link Builder#install installed}, the executor that runs admitted calls and the probes that
 * measure the server's queueing delay. {@link #close()} when the server stops.
 *
 * <p>The usual way in is {@link Builder#install}: it owns everything a server needs to be
 * protected without further wiring (docs/design.md, "A request's path on a server"):
 *
 * <ul>
 *   <li>the queueing delay is measured by the library: how long the oldest admitted call has
 *       waited for its handler (a call crosses the workers' queue more than once before its
 *       handler runs, see {@code UnstartedCalls}), or the workers' own oldest task if that is
 *       longer (a {@link CarrierDispatcher}: virtual threads on measured carriers where the JVM
 *       allows it, else a measured platform pool, see its javadoc), plus the backlog of gRPC's
 *       Netty event loops ({@code grpc-netty-shaded} or {@code grpc-netty});
 *   <li>each call is decided on as it arrives, on the transport thread; rejected calls are
 *       answered there at once, admitted ones go to the workers;
 *   <li>the interceptor and the control service are added to the server.
 * </ul>
 *
 * <p>{@link Builder#build()} wires nothing: the caller adds {@link #intercept} of each service and
 * {@link #controlService()} to the server and must name the queueing-delay signal, because a
 * delay-driven gate without one would see an idle server and protect nothing.
 *
 * <p>Thread-safe.
 */
public final class SpillwayGrpcServer implements AutoCloseable {

  private final ServerGate gate;
  private final SpillwayServerInterceptor interceptor;
  private final SpillwayControlService control;
  private final QueueDelaySignal queueDelay;
  private final List<AutoCloseable> owned;
  private static final java.util.concurrent.atomic.AtomicBoolean UNMEASURED_WARNED =
      new java.util.concurrent.atomic.AtomicBoolean();
  private CallThreading callThreading; // set by install when the builder adapts threading
  private String workers = "the caller's (build(): the server is wired by its caller)"; // set by install

  private SpillwayGrpcServer(ServerGate gate, SpillwayServerInterceptor interceptor,
      SpillwayControlService control, QueueDelaySignal queueDelay, List<AutoCloseable> owned) {
    this.gate = gate;
    this.interceptor = interceptor;
    this.control = control;
    this.queueDelay = queueDelay;
    this.owned = owned;
  }

  /** A builder for {@code scheme}; see {@link SpillwayGrpc#server}. */
  public static Builder builder(OverloadScheme scheme) {
    return new Builder(Objects.requireNonNull(scheme, "scheme"));
  }

  /** A builder for the default scheme ({@link Spillway}); give it an SLO. */
  public static Builder builder() {
    return new Builder(null);
  }

  /**
   * The threading model calls follow now, if the server was installed with {@link
   * Builder#adaptiveThreading}: in-line calls run on the transport thread, dispatched ones on the
   * workers.
   */
  public java.util.Optional<io.spillway.threading.ThreadingModel> threadingModel() {
    return callThreading == null ? java.util.Optional.empty() : java.util.Optional.of(callThreading.current());
  }

  /** How many times the adaptive threading has changed model; 0 without it. */
  public long threadingSwitches() {
    return callThreading == null ? 0 : callThreading.switches();
  }

  /** The interceptor that admits calls; put it on every service the scheme protects. */
  public SpillwayServerInterceptor interceptor() {
    return interceptor;
  }

  /** {@code service} behind the interceptor. */
  public ServerServiceDefinition intercept(BindableService service) {
    return ServerInterceptors.intercept(service, interceptor);
  }

  /** {@code service} behind the interceptor. */
  public ServerServiceDefinition intercept(ServerServiceDefinition service) {
    return ServerInterceptors.intercept(service, interceptor);
  }

  /** The {@code spillway.Control} service; add it to the server (unintercepted). */
  public ServerServiceDefinition controlService() {
    return control.serviceDefinition();
  }

  /** The control channel, for diagnostics. */
  public SpillwayControlService control() {
    return control;
  }

  /**
   * Where admitted calls run, in words for an operator: virtual threads on measured carriers, the
   * JDK's own virtual threads (and what to add for measured ones), or the builder's executor.
   */
  public String workers() {
    return workers;
  }

  /** The scheme's server gate. */
  public ServerGate gate() {
    return gate;
  }

  /** The queueing delay the gate steers by (the sum of the measured stages). */
  public QueueDelaySignal queueDelay() {
    return queueDelay;
  }

  /**
   * Ends the clients' credit streams ({@code UNAVAILABLE}) and opens no more: call it as the gRPC
   * server starts to shut down, just before {@code server.shutdown()}. A Spillway client keeps its
   * credit stream open for as long as its session lasts, and gRPC's graceful shutdown waits for
   * every open call, so without this {@code awaitTermination} waits out its whole timeout (for
   * ever without one). Calls in flight go on; a client whose stream ends starts its session again
   * (on another server, where its channel balances). Idempotent.
   */
  public void stopCreditStreams() {
    control.close();
  }

  /**
   * Stops the gate's control loop, ends the credit streams, and closes what {@link Builder#install}
   * created (its worker executor: call this after the gRPC server has terminated, and {@link
   * #stopCreditStreams} before shutting it down). The streams and the executor are ended even
   * when the gate's {@code close} throws; its exception is thrown after them.
   */
  @Override
  public void close() {
    RuntimeException gateFailed = null;
    try {
      gate.close();
    } catch (RuntimeException e) {
      gateFailed = e; // a scheme's gate: the credit streams and the workers still end
    }
    control.close();
    for (AutoCloseable c : owned) {
      try {
        c.close();
      } catch (Exception e) {
        SpillwayServerInterceptor.LOG.log(System.Logger.Level.WARNING, "closing " + c, e);
      }
    }
    if (gateFailed != null) {
      throw gateFailed;
    }
  }

  /** Configures a {@link SpillwayGrpcServer}. Not thread-safe; {@code build}/{@code install} once. */
  public static final class Builder {
    private final OverloadScheme scheme;
    private long sloNanos;
    private boolean budgetedRunQueue;
    private Ticker ticker = Ticker.system();
    private Scheduler scheduler;
    private QueueDelaySignal queueDelay;
    private OverloadMetrics metrics = OverloadMetrics.NONE;
    private int parallelism = Runtime.getRuntime().availableProcessors();
    private InterfaceRegistry interfaces = new InterfaceRegistry();
    private Executor executor;
    private QueueDelaySignal executorDelay;
    private io.spillway.threading.ThreadingAdaptation threading;

    private Builder(OverloadScheme scheme) {
      this.scheme = scheme;
    }

    /**
     * The end-to-end latency objective of the service's calls. With the default scheme it sets
     * every parameter ({@link Spillway#forSlo}); with any scheme it is the server-side budget
     * target of every call: its queueing budget is the SLO less the p99 service time, or its gRPC
     * deadline less it, or its {@code spillway-budget-ns} header, whichever is nearest (a looser
     * deadline or header does not loosen it; {@link SpillwayServerInterceptor}). Required for the
     * default scheme.
     */
    public Builder slo(Duration value) {
      return sloNanos(value.toNanos());
    }

    /** {@link #slo} in nanoseconds. */
    public Builder sloNanos(long value) {
      if (value <= 0) {
        throw new IllegalArgumentException("slo must be positive: " + value + " ns");
      }
      sloNanos = value;
      return this;
    }

    /** {@link #slo} in milliseconds. */
    public Builder sloMillis(long value) {
      return sloNanos(value * 1_000_000);
    }

    /**
     * Protego's ASQM at the run queue (protego-nsdi23 §3.2: "before placing the request in each
     * queue for a contended resource, it first checks the instantaneous queueing delay of the
     * queue and drops the request if the queueing delay is larger than the request's remaining
     * queueing delay budget"; the paper's queues are the CPU's runnable-thread queue and locks'
     * wait queues): on, a call the gate admits with a budget ({@link #slo}, its deadline or its
     * header) is refused before it queues for a worker when the server's queueing delay already
     * exceeds that budget ({@code REJECTED_BUDGET}, its permit ended {@code ABORTED}, which
     * Protego's pool counts as a drop, Alg. 1 line 6). Off by default: Spillway's default scheme
     * steers that queue with its AQM and bounds only the handler's waits by the budget
     * ({@link SpillwayServerInterceptor}); turn it on for Protego, whose pool, sized by throughput
     * alone, sheds only through such drops.
     */
    public Builder budgetedRunQueue(boolean value) {
      budgetedRunQueue = value;
      return this;
    }

    /** The clock; {@link Ticker#system()} by default. */
    public Builder ticker(Ticker value) {
      ticker = Objects.requireNonNull(value, "ticker");
      return this;
    }

    /**
     * Runs the gate's control loop and answers the calls refused for credit that a connection's
     * hold keeps waiting ({@link SpillwayServerInterceptor}); by default one shared daemon timer
     * thread.
     */
    public Builder scheduler(Scheduler value) {
      scheduler = Objects.requireNonNull(value, "scheduler");
      return this;
    }

    /**
     * The server's queueing delay, summed over its stages. Required by {@link #build()}; with
     * {@link #install} it is added to the stages the library measures. Give
     * {@link QueueDelaySignal#NONE} only for schemes that do not steer by delay.
     */
    public Builder queueDelay(QueueDelaySignal value) {
      queueDelay = Objects.requireNonNull(value, "queueDelay");
      return this;
    }

    /** Where the gate reports. */
    public Builder metrics(OverloadMetrics value) {
      metrics = Objects.requireNonNull(value, "metrics");
      return this;
    }

    /**
     * Requests the server runs at once: the carriers of the workers {@link #install} creates (on
     * the measured virtual-thread route; the JDK's own scheduler sizes itself), and the floor of
     * the credit pool. The available processors by default. Calls that block do not count against
     * it: a blocked call's virtual thread gives its carrier up.
     */
    public Builder parallelism(int value) {
      if (value < 1) {
        throw new IllegalArgumentException("parallelism must be at least 1: " + value);
      }
      parallelism = value;
      return this;
    }

    /** Numbers the methods; share it with anything else that reads interface ids. */
    public Builder interfaces(InterfaceRegistry value) {
      interfaces = Objects.requireNonNull(value, "interfaces");
      return this;
    }

    /**
     * The executor {@link #install} runs admitted calls on, instead of the
     * {@link CarrierDispatcher} it would create, with that executor's queueing delay (for example
     * {@code dispatcher.queueDelay()}). The caller owns and closes it.
     */
    public Builder executor(Executor value, QueueDelaySignal itsQueueDelay) {
      executor = Objects.requireNonNull(value, "executor");
      executorDelay = Objects.requireNonNull(itsQueueDelay, "itsQueueDelay");
      return this;
    }

    /**
     * Chooses, per call and from load, whether {@link #install}'s server runs an admitted call on
     * the transport thread that read it (in-line, as {@code directExecutor()}) or on the workers
     * (dispatch), as µTune adapts its threading model (mutune-osdi18 §4): in-line avoids a hand-off
     * and a worker's wake-up at low load, dispatch overlaps calls at high load. The profile's
     * in-line models ({@code I*}) mean the transport thread, its dispatch models the workers. Calls
     * that may block (on locks, on other services) must not run in-line under load: give such a
     * service a profile trained on it, which will not choose in-line where in-line saturates.
     * Only with {@link #install}: {@link #build()} refuses it.
     */
    public Builder adaptiveThreading(io.spillway.threading.ThreadingAdaptation value) {
      threading = Objects.requireNonNull(value, "threading");
      return this;
    }

    /**
     * Protects the server {@code serverBuilder} will build, with nothing else to wire: sets its
     * executor ({@code directExecutor()} for the transport's own work, and a call-executor
     * supplier that decides on each call as it arrives and runs admitted calls on the workers),
     * adds the interceptor and the control service, and starts the gate. Add services before or
     * after; build the server afterwards.
     *
     * @throws IllegalStateException if the default scheme is used without an SLO
     */
    public SpillwayGrpcServer install(ServerBuilder<?> serverBuilder) {
      Objects.requireNonNull(serverBuilder, "serverBuilder");
      List<AutoCloseable> owned = new ArrayList<>(1);
      Executor workers = executor;
      QueueDelaySignal workerDelay = executorDelay;
      String route = "the builder's executor";
      if (workers == null) {
        // Measured carriers where the JVM allows a custom virtual-thread scheduler; otherwise the
        // JDK's own virtual threads, never a fixed platform pool: a handler that blocks (a
        // downstream call, JDBC, a lock) would hold one of a few platform threads, and the server
        // would serve as many calls at once as it has cores, far below what it served before
        // Spillway was added (grpc-java's default executor grows a thread per blocked call). On
        // the JDK's scheduler a call's wait for a carrier is measured until its handler starts
        // (UnstartedCalls, below), not after it blocks and wakes.
        String[] whyNot = {"unknown"};
        CarrierDispatcher measured = CarrierDispatcher.onVirtualThreads(parallelism, ticker, r -> whyNot[0] = r)
            .orElse(null);
        if (measured != null) {
          owned.add(measured);
          workers = measured;
          workerDelay = measured.queueDelay();
          route = "virtual threads on " + measured.carriers() + " measured carriers";
        } else {
          if (UNMEASURED_WARNED.compareAndSet(false, true)) {
            // the route's reason may already say how to open it; the advice is given once
            String why = whyNot[0].replaceFirst(
                "; start the JVM with --add-opens java.base/java.lang=ALL-UNNAMED$", "");
            SpillwayServerInterceptor.LOG.log(System.Logger.Level.WARNING, "gRPC calls run on the JDK's"
                + " virtual threads, whose carrier queue the overload signal sees only until a handler"
                + " starts (" + why + "): start the JVM with --add-opens"
                + " java.base/java.lang=ALL-UNNAMED (or =io.spillway.asqm) for carriers it measures at every"
                + " wake-up, or give the builder an executor (Builder#executor)");
          }
          java.util.concurrent.ExecutorService threads = java.util.concurrent.Executors.newThreadPerTaskExecutor(
              Thread.ofVirtual().name("spillway-grpc-call-", 0).factory());
          owned.add(threads);
          workers = threads;
          workerDelay = QueueDelaySignal.NONE;
          route = "the JDK's virtual threads, measured until each handler starts (--add-opens "
              + "java.base/java.lang=ALL-UNNAMED for measured carriers)";
        }
      }
      // One server core or a few: the event loops and the workers share the CPU, so a call
      // waiting in a loop (before admission) and calls waiting for a worker (after it) wait for
      // the same CPU at the same time, and adding the stages would count that wait twice. The
      // stages are therefore combined by their maximum: the longest wait any of them shows.
      // UnstartedCalls covers the workers' queue as a call sees it (several passes), the
      // executor's own oldest task covers re-mounts after a lock, the probe covers the loops.
      // A CPU quota (a container's CPU limit) is one more wait for the same CPU: the time the
      // kernel would hold the whole process once the quota is spent (CpuQuotaDelay).
      UnstartedCalls unstarted = new UnstartedCalls();
      EventLoopProbe probe = EventLoopProbe.available() ? new EventLoopProbe(ticker) : null;
      QueueDelaySignal workerStage = workerDelay;
      QueueDelaySignal loops = probe != null ? probe : QueueDelaySignal.NONE;
      QueueDelaySignal quota = CpuQuotaDelay.detect(ticker).<QueueDelaySignal>map(q -> q)
          .orElse(QueueDelaySignal.NONE);
      List<QueueDelaySignal> stages = new ArrayList<>(2);
      stages.add(now -> Math.max(Math.max(Math.max(unstarted.queueingDelayNanos(now),
          workerStage.queueingDelayNanos(now)), loops.queueingDelayNanos(now)),
          quota.queueingDelayNanos(now)));
      if (queueDelay != null) {
        stages.add(queueDelay);
      }
      QueueDelaySignal signal = QueueDelaySignal.sum(stages.toArray(QueueDelaySignal[]::new));
      CallThreading callThreading = null;
      if (threading != null) {
        callThreading = new CallThreading(threading, ticker, scheduler != null ? scheduler : SharedTimer.scheduler());
        owned.add(callThreading);
      }
      SpillwayGrpcServer server = assemble(signal, owned, unstarted);
      server.callThreading = callThreading;
      server.workers = route;
      serverBuilder.executor(Runnable::run);
      serverBuilder.callExecutor(server.interceptor.executorSupplier(workers, probe, callThreading));
      serverBuilder.intercept(server.interceptor);
      serverBuilder.addStreamTracerFactory(new MessageArrival.Factory(unstarted, ticker));
      serverBuilder.addService(server.controlService());
      return server;
    }

    /**
     * Creates and starts the gate, for a server the caller wires itself.
     *
     * @throws IllegalStateException if no {@link #queueDelay} was given, the default scheme has no
     *     SLO, or {@link #adaptiveThreading} was asked for (only {@link #install} sets the
     *     executors that follow it)
     */
    public SpillwayGrpcServer build() {
      if (threading != null) {
        throw new IllegalStateException("adaptiveThreading needs install(serverBuilder): the choice of"
            + " in-line or dispatch is made by the call executor install sets, and build() leaves the"
            + " server's executors to its caller");
      }
      if (queueDelay == null) {
        throw new IllegalStateException("no queueing-delay signal: without one a delay-driven gate "
            + "sees an idle server and protects nothing. Use install(serverBuilder), which measures "
            + "the server's own delay, or pass queueDelay(signal), e.g. the executor's "
            + "CarrierDispatcher.queueDelay() (QueueDelaySignal.NONE only for schemes that do not "
            + "steer by delay)");
      }
      return assemble(queueDelay, List.of(), null);
    }

    private SpillwayGrpcServer assemble(QueueDelaySignal signal, List<AutoCloseable> owned,
        UnstartedCalls unstarted) {
      OverloadScheme chosen = scheme;
      if (chosen == null) {
        if (sloNanos == 0) {
          throw new IllegalStateException("the default scheme needs an SLO: slo(Duration)");
        }
        chosen = Spillway.forSloNanos(sloNanos);
      }
      SpillwayControlService control = new SpillwayControlService(ticker);
      ServerGate gate = chosen.newServerGate(new ServerEnvironment(ticker,
          scheduler != null ? scheduler : SharedTimer.scheduler(), signal, control, metrics,
          parallelism, true)); // GatedServerCall reports each handler's start
      control.bind(gate);
      gate.start();
      long target = sloNanos == 0 ? SpillwayServerInterceptor.NO_TARGET : sloNanos;
      SpillwayServerInterceptor interceptor = new SpillwayServerInterceptor(gate, ticker, interfaces,
          control, signal, target, unstarted);
      interceptor.budgetedRunQueue = budgetedRunQueue;
      interceptor.metrics = metrics;
      if (scheduler != null) {
        interceptor.holds = new CreditRefusalHolds(scheduler);
      }
      return new SpillwayGrpcServer(gate, interceptor, control, signal, List.copyOf(owned));
    }
  }
}
