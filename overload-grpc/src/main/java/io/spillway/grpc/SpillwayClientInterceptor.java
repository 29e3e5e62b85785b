package io.spillway.grpc;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ConnectivityState;
import io.grpc.Context;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.spillway.api.Cancellable;
import io.spillway.api.ClientEnvironment;
import io.spillway.api.ClientGate;
import io.spillway.api.InterfaceCall;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.OverloadScheme;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.Scheduler;
import io.spillway.api.Ticker;
import io.spillway.api.internal.SessionIds;
import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.LongFunction;
import java.util.function.Supplier;

/**
 * One client session of an admission scheme on a gRPC channel (docs/design.md, "A request's
 * path on a client"): every call made through it waits in the session's {@link ClientGate} until
 * the gate lets it go, and only then starts, carrying the gate's fields (session, demand,
 * register flag, priority, tokens) in its {@link SpillwayMetadata} headers.
 *
 * <ul>
 *   <li>A call the gate refuses outright ends at once with {@code RESOURCE_EXHAUSTED}
 *       {@code "spillway: rejected in the client (limit)"} (DAGOR's local shedding).
 *   <li>A queued call that waits past the gate's timeout (its SLO) ends with
 *       {@code RESOURCE_EXHAUSTED} {@code "spillway: expired in the client queue"}, driven by the
 *       injected {@link Scheduler}: one pending wake-up per session, never a timer per call.
 *   <li>Every answer, response or reject, is fed to {@link ClientGate#onResponse} with its
 *       {@link ResponseMetadata#interfaceId()} filled in from the call's method; calls that end
 *       without Spillway trailers (a transport failure, a server without the interceptor) count as
 *       {@code FAILED} (or {@code TIMED_OUT} for {@code DEADLINE_EXCEEDED}) with no credit change.
 *       A server reject reaches the application at once, with the server's status and reason.
 *   <li>When the scheme {@link OverloadScheme#issuesCredits() issues credits}, the session keeps a
 *       {@code spillway.Control/Credits} stream open ({@link SpillwayControlService}): it opens it
 *       with its first call and holds that call until the server has acknowledged the stream, so
 *       that a credit for a drained session, with nothing in flight to carry it, always has a way
 *       in. If the server has no control service the session goes on without (logged once).
 *       Demand reports the gate asks for are sent as {@code spillway.Control/Demand} calls.
 *   <li>{@link #close()} ends the session: queued calls fail with {@code UNAVAILABLE}, a
 *       {@code spillway.Control/Deregister} call returns the session's credits, and the credit
 *       stream is cancelled. Later calls fail at once. Calls in flight end normally. A
 *       session closes by itself when its {@link ManagedChannel} is shut down
 *       ({@link #closeOnShutdown}), whose termination would otherwise wait for the stream.
 * </ul>
 *
 * <p>Only unary calls wait in the gate; streaming calls pass through as plain calls
 * ({@link #interceptCall}).
 *
 * <p>A queued call counts against its gRPC deadline (the deadline is absolute), which gRPC
 * enforces once the call starts; a call held for the session's credit stream, which the SLO does
 * not end, ends at its deadline ({@code DEADLINE_EXCEEDED}). A call the application cancels while queued ends at once; the
 * gate is told it was never sent when it reaches the head of the queue.
 *
 * <p>Use one instance per session and channel: {@code ClientInterceptors.intercept(channel,
 * session)}. Thread-safe: calls may be made from any thread; the gate, which is not thread-safe,
 * is driven under one lock, and calls are started and failed outside it. The ticker is read once
 * per event (a call offered, an answer, a credit, a wake-up).
 */
public final class SpillwayClientInterceptor implements ClientInterceptor, AutoCloseable {

  private static final System.Logger LOG = System.getLogger(SpillwayClientInterceptor.class.getName());
  /** Far enough ahead that every queued call has waited past any gate's timeout. */
  private static final long FAR_FUTURE = 1L << 62;
  /** The shortest wake-up delay, so a gate whose wake-up time has come cannot spin the timer. */
  private static final long MIN_WAKEUP_NANOS = 1_000;

  private static final int CONTROL_OFF = 0; // the scheme sends no explicit credits
  private static final int CONTROL_NONE = 1; // none yet: subscribe with the next call
  private static final int CONTROL_SUBSCRIBING = 2; // hold calls until the stream is acknowledged
  private static final int CONTROL_READY = 3;
  private static final int CONTROL_UNAVAILABLE = 4; // the server has no control service

  private static final Status EXPIRED =
      Status.RESOURCE_EXHAUSTED.withDescription("spillway: expired in the client queue");
  private static final Status REFUSED =
      Status.RESOURCE_EXHAUSTED.withDescription("spillway: rejected in the client (limit)");
  private static final Status CLOSED =
      Status.UNAVAILABLE.withDescription("spillway: client session closed");
  private static final Status PAST_DEADLINE = Status.DEADLINE_EXCEEDED
      .withDescription("spillway: deadline exceeded waiting for the session's credit stream");

  /** The session's id and gate; both renewed when the server may have forgotten the session. */
  private volatile long sessionId;
  private ClientGate<Object> gate; // guarded by lock
  /** Makes the gate of a renewed session from its new id; {@code null}: the session is not renewed. */
  private final LongFunction<ClientGate<Object>> renewal;
  private final Ticker ticker;
  private final Scheduler scheduler;
  private final InterfaceRegistry interfaces;
  /** The SLO the builder gave; 0 for a session made from a gate directly. Set once, before use. */
  private long sloNanos;

  private final ReentrantLock lock = new ReentrantLock();
  // Guarded by lock:
  private final RequestMetadata header = new RequestMetadata();
  private final ResponseMetadata answer = new ResponseMetadata();
  private final Consumer<Object> expiredSink = call -> batch().expired((GatedClientCall<?, ?>) call);
  private final Runnable wakeupTask = this::onWakeup;
  private Batch collecting;
  private Cancellable wakeup;
  private long wakeupAt;
  private int controlState;
  private CreditSubscription subscription;
  private boolean closed;
  /**
   * Calls made while the credit stream is being opened. They enter the gate only once it is open
   * (or has failed): the wait for a fresh connection and the stream's acknowledgement is no
   * client queueing, and must not expire a new session's first calls (a cold server's first
   * acknowledgement alone can take longer than the SLO). Their gRPC deadlines still end them, as
   * gRPC would had they started: a stream that is never acknowledged holds none past it.
   */
  private List<GatedClientCall<?, ?>> held;

  /**
   * The first channel the session's calls went through; its credit stream and control calls use
   * it for the session's lifetime, and its shutdown ends the session.
   */
  private volatile Channel channel;
  private boolean warnedOfAnotherChannel; // guarded by lock
  /** The managed channel whose shutdown ends the session ({@link #closeOnShutdown}), if known. */
  private volatile ManagedChannel watched;
  /** The server of the first answer, and whether another has answered since ({@link #answeredBy}). */
  private volatile java.net.SocketAddress firstServer;
  private volatile boolean severalServers;
  /**
   * The per-call credentials of the application's latest call, which its control calls carry
   * too: a server that authenticates every call would refuse a credit stream without them.
   */
  private volatile io.grpc.CallCredentials credentials;

  /**
   * A session over {@code gate}.
   *
   * @param gate the session's client gate, used by this interceptor only from now on
   * @param sessionId the session's id, as the gate writes it into headers; unique per server
   * @param explicitCredits whether to keep a credit stream open (the scheme issues credits)
   * @param ticker read once per event
   * @param scheduler wakes the session when the gate's oldest call is due to expire
   * @param interfaces numbers the methods called, for {@link InterfaceCall}
   */
  public SpillwayClientInterceptor(ClientGate<? super InterfaceCall> gate, long sessionId,
      boolean explicitCredits, Ticker ticker, Scheduler scheduler, InterfaceRegistry interfaces) {
    this(gate, sessionId, null, explicitCredits, ticker, scheduler, interfaces);
  }

  /**
   * As above; with {@code renewal}, a session whose credit stream ends after the server had
   * acknowledged it starts again under a new id (see {@link #onSubscriptionClosed}).
   */
  @SuppressWarnings("unchecked") // the gate is opaque in its request type
  SpillwayClientInterceptor(ClientGate<? super InterfaceCall> gate, long sessionId,
      LongFunction<ClientGate<Object>> renewal, boolean explicitCredits, Ticker ticker,
      Scheduler scheduler, InterfaceRegistry interfaces) {
    this.gate = (ClientGate<Object>) Objects.requireNonNull(gate, "gate");
    this.renewal = renewal;
    this.sessionId = sessionId;
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    this.scheduler = Objects.requireNonNull(scheduler, "scheduler");
    this.interfaces = Objects.requireNonNull(interfaces, "interfaces");
    this.controlState = explicitCredits ? CONTROL_NONE : CONTROL_OFF;
  }

  /** A builder for a session of {@code scheme}; see {@link SpillwayGrpc#client}. */
  public static Builder builder(OverloadScheme scheme) {
    return new Builder(Objects.requireNonNull(scheme, "scheme"));
  }

  /** A builder for a session of the default scheme ({@code Spillway}); give it an SLO. */
  public static Builder builder() {
    return new Builder(null);
  }

  /**
   * Makes sessions of {@code scheme} ({@code null}: the default scheme), each with these settings:
   * how channels that keep a session per backend make theirs. {@code ticker} and
   * {@code scheduler} may be {@code null} for the defaults.
   */
  static Supplier<SpillwayClientInterceptor> maker(OverloadScheme scheme, long sloNanos,
      Ticker ticker, Scheduler scheduler) {
    return () -> {
      Builder b = scheme == null ? builder() : builder(scheme);
      b.sloNanos(sloNanos);
      if (ticker != null) {
        b.ticker(ticker);
      }
      if (scheduler != null) {
        b.scheduler(scheduler);
      }
      return b.build();
    };
  }

  /**
   * Notes the server that answered a call of this session. A session is one server's credit
   * account (docs/design.md, "A request's path on a client"): answers from a second server mean
   * its channel spreads the session's calls over several, whose credits then pool into one window
   * and release calls the balancer sends to any of them. That is logged once, at WARNING, naming
   * the remedy ({@link PerBackendSessions}, {@link SpillwayBalancedChannel}); a channel that moved
   * to another server after losing the first (pick_first's failover) is logged the same way.
   */
  void answeredBy(io.grpc.Attributes attributes) {
    if (severalServers) {
      return;
    }
    java.net.SocketAddress server = attributes.get(io.grpc.Grpc.TRANSPORT_ATTR_REMOTE_ADDR);
    if (server == null) {
      return;
    }
    java.net.SocketAddress first = firstServer;
    if (first == null) {
      firstServer = server;
    } else if (!first.equals(server)) {
      severalServers = true;
      LOG.log(Level.WARNING, "session {0} was answered by {1} and by {2}: if its channel balances "
          + "over several servers (round_robin, a name with several addresses), their credits pool "
          + "into this one session and release calls to any of them; give it a session per "
          + "backend (SpillwayGrpc.perBackend().install(builder), or SpillwayGrpc.balanced())",
          Long.toString(sessionId), first, server);
    }
  }

  /** Whether answers came from more than one server ({@link #answeredBy}). */
  boolean answeredBySeveralServers() {
    return severalServers;
  }

  /** The SLO of the session's calls as its builder was given it; 0 for one made from a gate. */
  public long sloNanos() {
    return sloNanos;
  }

  /** The session's id. */
  public long sessionId() {
    return sessionId;
  }

  /** Calls waiting in the session's gate. */
  public int queued() {
    lock.lock();
    try {
      return gate.queued();
    } finally {
      lock.unlock();
    }
  }

  /**
   * A unary call waits in the session's gate; a streaming call (client, server or bidi) is sent
   * as a plain call, without the session's fields, and the server admits it as it admits any
   * client's. A credit stands for one call's stay in the server (breakwater-osdi20 §3.1), and a
   * stream stays for as long as its two ends like: held in the gate, a few open streams would
   * hold every credit of the session, no answer would come back to carry new ones, and the
   * session's unary calls would expire in its queue in front of an idle server.
   */
  @Override
  public <ReqT, RespT> ClientCall<ReqT, RespT> interceptCall(MethodDescriptor<ReqT, RespT> method,
      CallOptions callOptions, Channel next) {
    if (!takesCredit(method)) {
      return next.newCall(method, callOptions);
    }
    return gatedCall(method, callOptions, next);
  }

  /** Whether calls of {@code method} wait for the session's credits: unary calls only. */
  static boolean takesCredit(MethodDescriptor<?, ?> method) {
    return method.getType() == MethodDescriptor.MethodType.UNARY;
  }

  /** {@link #interceptCall}, typed for {@link SpillwayDownstreamInterceptor}. */
  <ReqT, RespT> GatedClientCall<ReqT, RespT> gatedCall(MethodDescriptor<ReqT, RespT> method,
      CallOptions callOptions, Channel next) {
    if (channel != next) {
      firstChannel(next);
    }
    io.grpc.CallCredentials c = callOptions.getCredentials();
    if (c != null && c != credentials) {
      credentials = c;
    }
    return new GatedClientCall<>(this, next.newCall(method, callOptions), callOptions,
        interfaces.idOf(method.getFullMethodName()));
  }

  /**
   * Takes {@code next} as the session's channel if it has none. A later channel's calls go
   * through that channel, but the session's stream and control calls stay on the first: its
   * credits are that connection's (the server binds a session to the connection of its stream),
   * and a stream that followed each call's channel would keep an earlier channel from
   * terminating once shut down. One session per channel is the intended use; another is logged.
   */
  private void firstChannel(Channel next) {
    ManagedChannel watch = null;
    lock.lock();
    try {
      if (channel == null) {
        channel = next;
        watch = next instanceof ManagedChannel managed ? managed : null; // ClientInterceptors
      } else if (channel != next && !warnedOfAnotherChannel) {
        warnedOfAnotherChannel = true;
        LOG.log(Level.WARNING, "session {0} is used on a second channel; its credit stream stays "
            + "on the first: use one session per channel", sessionId);
      }
    } finally {
      lock.unlock();
    }
    if (watch != null) {
      closeOnShutdown(watch);
    }
  }

  // ---- events; each reads the ticker once, drives the gate under the lock, acts outside it ----

  /** The application started {@code call}. */
  void offer(GatedClientCall<?, ?> call) {
    long now = ticker.read();
    Status refused = null;
    boolean subscribe = false;
    Batch batch = null;
    lock.lock();
    try {
      if (closed) {
        refused = CLOSED;
      } else if (controlState == CONTROL_NONE || controlState == CONTROL_SUBSCRIBING) {
        if (controlState == CONTROL_NONE) {
          controlState = CONTROL_SUBSCRIBING;
          subscribe = true;
        }
        holdLocked(call, now, Context.current().getDeadline());
      } else if (!gate.offer(call, now)) {
        refused = REFUSED;
      } else {
        batch = drainLocked(now);
      }
    } finally {
      lock.unlock();
    }
    if (refused != null) {
      call.failQueued(refused);
      return;
    }
    if (subscribe) {
      subscribe();
    }
    if (batch != null) {
      batch.run();
    }
  }

  /** The application cancelled {@code call} while it was queued: it leaves the gate at once. */
  void withdraw(GatedClientCall<?, ?> call) {
    long now = ticker.read();
    lock.lock();
    try {
      gate.remove(call, now);
    } finally {
      lock.unlock();
    }
  }

  /** A started call ended; returns what it released, to run after the application has heard. */
  Runnable onResponse(GatedClientCall<?, ?> call, Status status, Metadata trailers) {
    long now = ticker.read();
    lock.lock();
    try {
      if (call.releasedBy != gate) {
        return null; // a call of the session before it was renewed: no credit of this one's
      }
      try {
        feedAnswerLocked(call, status, trailers, now);
      } catch (RuntimeException gateFailed) {
        // the application still hears its call end, and the session goes on releasing calls
        LOG.log(Level.WARNING, "session " + sessionId + ": the gate failed on an answer",
            gateFailed);
      }
      return drainLocked(now);
    } finally {
      lock.unlock();
    }
  }

  /** Hands a started call's answer to the gate; under the lock. */
  private void feedAnswerLocked(GatedClientCall<?, ?> call, Status status, Metadata trailers,
      long now) {
    answer.interfaceId(call.interfaceId());
    if (SpillwayMetadata.hasResponse(trailers)) {
      String problem = SpillwayMetadata.readResponse(trailers, answer, interfaces);
      if (problem != null) {
        LOG.log(Level.DEBUG, "session {0}: {1}", sessionId, problem);
      }
      gate.onResponse(answer.sessionId(sessionId), call.sentAt, now);
    } else {
      answer.reset().interfaceId(call.interfaceId()).status(statusWithoutTrailers(status))
          .sessionId(sessionId);
      if (status.isOk()) {
        gate.onResponse(answer, call.sentAt, now); // a server that writes no Spillway fields
      } else {
        // Cancelled, past its deadline, or cut off: the server's answer, if it sent one, is
        // not read here, nor the credit change it carried.
        gate.onUnanswered(answer, call.sentAt, now);
      }
    }
  }

  private static io.spillway.api.Status statusWithoutTrailers(Status status) {
    if (status.isOk()) {
      return io.spillway.api.Status.OK;
    }
    return status.getCode() == Status.Code.DEADLINE_EXCEEDED
        ? io.spillway.api.Status.TIMED_OUT : io.spillway.api.Status.FAILED;
  }

  /** A call the gate released had been cancelled: tell the gate it was never sent. */
  private void notSent(GatedClientCall<?, ?> call) {
    long now = ticker.read();
    Batch batch;
    lock.lock();
    try {
      if (call.releasedBy != gate) {
        return;
      }
      answer.reset().interfaceId(call.interfaceId()).sessionId(sessionId)
          .status(io.spillway.api.Status.FAILED);
      gate.onResponse(answer, now, now);
      batch = drainLocked(now);
    } finally {
      lock.unlock();
    }
    if (batch != null) {
      batch.run();
    }
  }

  /** An explicit credit arrived on the session's stream. */
  void onCredit(CreditSubscription from, ControlMarshallers.CreditMessage credit) {
    long now = ticker.read();
    Batch batch = null;
    lock.lock();
    try {
      if (from == subscription) {
        answer.reset().sessionId(sessionId).credit(credit.delta(), credit.window(), credit.seq());
        gate.onControl(answer, now);
        batch = drainLocked(now);
      }
    } finally {
      lock.unlock();
    }
    if (batch != null) {
      batch.run();
    }
  }

  /** The server acknowledged the credit stream: calls may go. */
  void onSubscribed(CreditSubscription from) {
    long now = ticker.read();
    Batch batch = null;
    lock.lock();
    try {
      if (from == subscription && controlState == CONTROL_SUBSCRIBING) {
        controlState = CONTROL_READY;
        admitHeldLocked(now);
        batch = drainLocked(now);
      }
    } finally {
      lock.unlock();
    }
    if (batch != null) {
      batch.run();
    }
  }

  /**
   * The credit stream ended.
   * <ul>
   *   <li>It had been acknowledged: the server deregistered the session with it (a stream that
   *       ends is a client that left, as a closed connection is to the native transport), or has
   *       restarted, so its ledger of the session is gone; a drained session would wait for ever
   *       for a credit, and one with credits would send beyond what the server grants. The
   *       session starts again under a new id with a new gate (a builder's session; one made
   *       with a given gate goes on as below), its queued calls held until the new stream is
   *       acknowledged; answers to the old session's calls bring no credit.
   *   <li>The server refused it as another connection's session ({@code PERMISSION_DENIED}:
   *       a stream of the session's broken connection the server has not yet seen end): the
   *       same, a new id.
   *   <li>The server has no control service: the session goes on without a stream.
   *   <li>Otherwise the session goes on without a stream and the next call re-subscribes.
   * </ul>
   */
  void onSubscriptionClosed(CreditSubscription from, Status status) {
    long now = ticker.read();
    Batch batch = null;
    boolean resubscribe = false;
    lock.lock();
    try {
      if (from != subscription) {
        return;
      }
      subscription = null;
      if (closed) {
        return;
      }
      if (renewal != null && (controlState == CONTROL_READY && status.getCode()
          != Status.Code.UNIMPLEMENTED || status.getCode() == Status.Code.PERMISSION_DENIED)) {
        List<GatedClientCall<?, ?>> queued = held != null ? held : new ArrayList<>();
        gate.expire(now + FAR_FUTURE, c -> queued.add((GatedClientCall<?, ?>) c));
        long renewed = SessionIds.next();
        LOG.log(Level.DEBUG, "session {0}: credit stream ended ({1}); starting again as session "
            + "{2}", sessionId, status, renewed);
        sessionId = renewed;
        gate = renewal.apply(renewed);
        if (wakeup != null) {
          wakeup.cancel();
          wakeup = null;
        }
        controlState = CONTROL_SUBSCRIBING;
        held = null;
        for (GatedClientCall<?, ?> call : queued) {
          if (call.heldUntil == GatedClientCall.NOT_HELD) {
            holdLocked(call, now, null);
          } else {
            holdLocked(call, now);
          }
        }
        resubscribe = true;
      } else {
        admitHeldLocked(now); // they go on without a stream, as the session does
        if (status.getCode() == Status.Code.UNIMPLEMENTED) {
          controlState = CONTROL_UNAVAILABLE;
          LOG.log(Level.WARNING, "session {0}: the server has no {1} service; explicit credits "
              + "cannot reach this session, which may stall once drained", sessionId,
              SpillwayControlService.SERVICE_NAME);
        } else {
          controlState = CONTROL_NONE;
          LOG.log(Level.DEBUG, "session {0}: credit stream ended: {1}", sessionId, status);
        }
      }
      batch = drainLocked(now);
    } finally {
      lock.unlock();
    }
    if (resubscribe) {
      subscribe();
    }
    if (batch != null) {
      batch.run();
    }
  }

  private void onWakeup() {
    long now = ticker.read();
    Batch batch;
    lock.lock();
    try {
      wakeup = null;
      if (closed) {
        return;
      }
      batch = drainLocked(now);
    } finally {
      lock.unlock();
    }
    if (batch != null) {
      batch.run();
    }
  }

  /**
   * Ends the session: fails its queued calls ({@code UNAVAILABLE}), deregisters it with the server
   * so its unused credits return to the pool, and cancels its credit stream. Calls in flight end
   * normally; later calls fail at once. Idempotent. A session whose {@link ManagedChannel} it
   * knows closes by itself when the channel is shut down ({@link #closeOnShutdown}).
   */
  @Override
  public void close() {
    long now = ticker.read();
    Batch batch;
    boolean deregister;
    CreditSubscription stream;
    lock.lock();
    try {
      if (closed) {
        return;
      }
      closed = true;
      gate.expire(now + FAR_FUTURE, expiredSink);
      if (gate.queued() > 0) {
        LOG.log(Level.WARNING, "session {0}: {1} calls left in a gate that does not expire by age",
            sessionId, gate.queued());
      }
      if (held != null) {
        held.forEach(c -> batch().expired(c));
        held = null;
      }
      batch = collecting;
      collecting = null;
      if (wakeup != null) {
        wakeup.cancel();
        wakeup = null;
      }
      deregister = gate.isRegistered() && controlState != CONTROL_UNAVAILABLE;
      stream = subscription;
      subscription = null;
    } finally {
      lock.unlock();
    }
    if (batch != null) {
      batch.failExpired(CLOSED);
    }
    Channel ch = channel;
    if (deregister && ch != null) {
      sendControl(ch, SpillwayControlService.DEREGISTER, controlHeaders());
    }
    if (stream != null) {
      stream.cancel();
    }
  }

  /**
   * Ends the session ({@link #close()}) when {@code managed} is shut down, and returns it. A
   * channel's graceful shutdown waits for its open calls, the session's credit stream among
   * them, so a channel shut down before its session was closed would never terminate. A session
   * made part of a channel by its builder ({@code ManagedChannelBuilder.intercept(session)}) sees
   * only the channel's insides, so hand it the built channel:
   * {@code session.closeOnShutdown(builder.intercept(session).build())}. A session intercepting
   * a {@link ManagedChannel} with {@code ClientInterceptors.intercept} watches it by itself.
   * Watches one channel: a later one replaces it.
   */
  public <C extends ManagedChannel> C closeOnShutdown(C managed) {
    Objects.requireNonNull(managed, "channel");
    if (watched != managed) {
      watched = managed;
      watch(managed);
    }
    return managed;
  }

  /** Waits for {@code managed}'s next state change; closes the session at its shutdown. */
  private void watch(ManagedChannel managed) {
    if (watched != managed || closed()) {
      return;
    }
    ConnectivityState state;
    try {
      state = managed.getState(false);
    } catch (UnsupportedOperationException e) {
      LOG.log(Level.DEBUG, "session {0}: {1} does not report its state; close the session "
          + "before shutting the channel down", sessionId, managed);
      return;
    }
    if (state == ConnectivityState.SHUTDOWN) {
      close();
    } else {
      managed.notifyWhenStateChanged(state, () -> watch(managed));
    }
  }

  private boolean closed() {
    lock.lock();
    try {
      return closed;
    } finally {
      lock.unlock();
    }
  }

  // ---- under the lock ----

  /**
   * Holds {@code call} until the credit stream is acknowledged, or until the nearer of its call
   * options' deadline and {@code contextDeadline}, on the session's ticker.
   */
  private void holdLocked(GatedClientCall<?, ?> call, long now, io.grpc.Deadline contextDeadline) {
    io.grpc.Deadline deadline = call.deadline();
    if (deadline == null || contextDeadline != null && contextDeadline.isBefore(deadline)) {
      deadline = contextDeadline;
    }
    if (deadline != null) {
      long remaining = deadline.timeRemaining(java.util.concurrent.TimeUnit.NANOSECONDS);
      call.heldUntil = remaining >= FAR_FUTURE ? GatedClientCall.NOT_HELD : now + remaining;
    }
    holdLocked(call, now);
  }

  private void holdLocked(GatedClientCall<?, ?> call, long now) {
    if (held == null) {
      held = new ArrayList<>(4);
    }
    held.add(call);
    if (call.heldUntil != GatedClientCall.NOT_HELD) {
      armWakeupLocked(now);
    }
  }

  /** Ends the held calls whose deadlines have passed. */
  private void expireHeldLocked(long now) {
    if (held == null) {
      return;
    }
    for (java.util.Iterator<GatedClientCall<?, ?>> i = held.iterator(); i.hasNext(); ) {
      GatedClientCall<?, ?> call = i.next();
      if (call.heldUntil != GatedClientCall.NOT_HELD && call.heldUntil - now <= 0) {
        i.remove();
        batch().pastDeadline(call);
      }
    }
  }

  /** Offers the calls held while the stream opened to the gate, as arriving now. */
  private void admitHeldLocked(long now) {
    if (held == null) {
      return;
    }
    for (GatedClientCall<?, ?> call : held) {
      call.heldUntil = GatedClientCall.NOT_HELD;
      if (!gate.offer(call, now)) {
        batch().refused(call);
      }
    }
    held = null;
  }

  private Batch batch() {
    if (collecting == null) {
      collecting = new Batch();
    }
    return collecting;
  }

  /** Expires, releases what may go, takes the demand report, re-arms the wake-up. */
  private Batch drainLocked(long now) {
    gate.expire(now, expiredSink);
    expireHeldLocked(now);
    if (controlState != CONTROL_SUBSCRIBING) {
      Object next;
      while ((next = gate.poll(now, header.reset())) != null) {
        GatedClientCall<?, ?> call = (GatedClientCall<?, ?>) next;
        call.sentAt = now;
        call.releasedBy = gate;
        SpillwayMetadata.writeRequest(header, call.headers());
        batch().released(call);
      }
    }
    int demand = gate.takeDemandReport();
    if (demand >= 0) {
      batch().demand = demand;
    }
    armWakeupLocked(now);
    Batch batch = collecting;
    collecting = null;
    return batch;
  }

  private void armWakeupLocked(long now) {
    if (closed) {
      return;
    }
    boolean due = gate.queued() > 0;
    long at = due ? gate.nextWakeupNanos() : 0;
    if (held != null) { // only while the credit stream is being opened
      for (GatedClientCall<?, ?> call : held) {
        if (call.heldUntil != GatedClientCall.NOT_HELD && (!due || call.heldUntil - at < 0)) {
          at = call.heldUntil;
          due = true;
        }
      }
    }
    if (!due) {
      return;
    }
    if (wakeup != null && at - wakeupAt >= 0) {
      return; // an earlier or equal wake-up is already pending
    }
    if (wakeup != null) {
      wakeup.cancel();
    }
    wakeupAt = at;
    wakeup = scheduler.schedule(wakeupTask, Math.max(at - now, MIN_WAKEUP_NANOS));
  }

  // ---- outside the lock ----

  private void subscribe() {
    Channel ch = channel;
    CreditSubscription stream = new CreditSubscription(this);
    lock.lock();
    try {
      if (closed || controlState != CONTROL_SUBSCRIBING) {
        return;
      }
      subscription = stream;
    } finally {
      lock.unlock();
    }
    stream.start(ch, controlOptions(), controlHeaders());
  }

  /** Options of a control call: none of the application's but its per-call credentials. */
  private CallOptions controlOptions() {
    io.grpc.CallCredentials c = credentials;
    return c == null ? CallOptions.DEFAULT : CallOptions.DEFAULT.withCallCredentials(c);
  }

  private Metadata controlHeaders() {
    Metadata headers = new Metadata();
    headers.put(SpillwayMetadata.SESSION, Long.toString(sessionId));
    return headers;
  }

  private void sendDemand(int demand) {
    Channel ch = channel;
    if (ch == null) {
      return;
    }
    Metadata headers = controlHeaders();
    headers.put(SpillwayMetadata.DEMAND, Integer.toString(demand));
    sendControl(ch, SpillwayControlService.DEMAND, headers);
  }

  /** Fires a unary control call and forgets it: its answer carries nothing the session needs. */
  private void sendControl(Channel ch, MethodDescriptor<byte[], byte[]> method, Metadata headers) {
    // In the root context: a report made while serving some call must outlive that call.
    Context previous = Context.ROOT.attach();
    try {
      startControl(ch, method, headers);
    } finally {
      Context.ROOT.detach(previous);
    }
  }

  private void startControl(Channel ch, MethodDescriptor<byte[], byte[]> method, Metadata headers) {
    ClientCall<byte[], byte[]> call = ch.newCall(method, controlOptions());
    call.start(new ClientCall.Listener<>() {
      @Override
      public void onClose(Status status, Metadata trailers) {
        if (!status.isOk()) {
          LOG.log(Level.DEBUG, "session {0}: {1} failed: {2}", sessionId,
              method.getBareMethodName(), status);
        }
      }
    }, headers);
    call.request(1);
    call.sendMessage(ControlMarshallers.EMPTY);
    call.halfClose();
  }

  /**
   * What one drain decided, carried out after the lock is released. Allocated only when a drain
   * has something to do; the common case, one call released, allocates nothing more.
   */
  private final class Batch implements Runnable {
    private GatedClientCall<?, ?> firstReleased;
    private List<GatedClientCall<?, ?>> moreReleased;
    private List<GatedClientCall<?, ?>> expired;
    private List<GatedClientCall<?, ?>> refused;
    private List<GatedClientCall<?, ?>> pastDeadline;
    int demand = -1;

    void pastDeadline(GatedClientCall<?, ?> call) {
      if (pastDeadline == null) {
        pastDeadline = new ArrayList<>(2);
      }
      pastDeadline.add(call);
    }

    void refused(GatedClientCall<?, ?> call) {
      if (refused == null) {
        refused = new ArrayList<>(2);
      }
      refused.add(call);
    }

    void released(GatedClientCall<?, ?> call) {
      if (firstReleased == null) {
        firstReleased = call;
      } else {
        if (moreReleased == null) {
          moreReleased = new ArrayList<>(4);
        }
        moreReleased.add(call);
      }
    }

    void expired(GatedClientCall<?, ?> call) {
      if (expired == null) {
        expired = new ArrayList<>(2);
      }
      expired.add(call);
    }

    void failExpired(Status status) {
      if (expired != null) {
        for (GatedClientCall<?, ?> call : expired) {
          call.failQueued(status);
        }
      }
    }

    @Override
    public void run() {
      failExpired(EXPIRED);
      if (refused != null) {
        for (GatedClientCall<?, ?> call : refused) {
          call.failQueued(REFUSED);
        }
      }
      if (pastDeadline != null) {
        for (GatedClientCall<?, ?> call : pastDeadline) {
          call.failQueued(PAST_DEADLINE);
        }
      }
      if (firstReleased != null) {
        release(firstReleased);
        if (moreReleased != null) {
          for (GatedClientCall<?, ?> call : moreReleased) {
            release(call);
          }
        }
      }
      if (demand >= 0) {
        sendDemand(demand);
      }
    }

    private void release(GatedClientCall<?, ?> call) {
      if (!call.release()) {
        notSent(call);
      }
    }
  }

  /** Configures a {@link SpillwayClientInterceptor}. Not thread-safe. */
  public static final class Builder {
    private final OverloadScheme scheme;
    private long sessionId;
    private long sloNanos;
    private Ticker ticker = Ticker.system();
    private Scheduler scheduler;
    private OverloadMetrics metrics = OverloadMetrics.NONE;
    private InterfaceRegistry interfaces = new InterfaceRegistry();

    private Builder(OverloadScheme scheme) {
      this.scheme = scheme;
    }

    /**
     * The session's id, unique among the server's clients. Generated by default (unique in the
     * process, random across processes); set it only to reproduce a run.
     */
    public Builder sessionId(long value) {
      if (value == 0) {
        throw new IllegalArgumentException("session id 0 means no session");
      }
      sessionId = value;
      return this;
    }

    /**
     * The end-to-end SLO; the gate expires calls that cannot meet it. Required; with the default
     * scheme it also sets the scheme's parameters ({@code Spillway.forSlo}).
     */
    public Builder sloNanos(long value) {
      if (value <= 0) {
        throw new IllegalArgumentException("slo must be positive: " + value + " ns");
      }
      sloNanos = value;
      return this;
    }

    /** {@link #sloNanos} as a duration. */
    public Builder slo(java.time.Duration value) {
      return sloNanos(value.toNanos());
    }

    /** {@link #sloNanos} in milliseconds. */
    public Builder sloMillis(long value) {
      return sloNanos(value * 1_000_000);
    }

    /** The clock; {@link Ticker#system()} by default. */
    public Builder ticker(Ticker value) {
      ticker = Objects.requireNonNull(value, "ticker");
      return this;
    }

    /** Runs the expiry wake-ups; by default one shared daemon timer thread. */
    public Builder scheduler(Scheduler value) {
      scheduler = Objects.requireNonNull(value, "scheduler");
      return this;
    }

    /** Where the gate reports. */
    public Builder metrics(OverloadMetrics value) {
      metrics = Objects.requireNonNull(value, "metrics");
      return this;
    }

    /** Numbers the methods called; share one with the gate's other users if they read ids. */
    public Builder interfaces(InterfaceRegistry value) {
      interfaces = Objects.requireNonNull(value, "interfaces");
      return this;
    }

    /** @throws IllegalStateException if the SLO is missing */
    public SpillwayClientInterceptor build() {
      if (sloNanos == 0) {
        throw new IllegalStateException("a client session needs an SLO: slo(Duration)");
      }
      OverloadScheme chosen = scheme != null ? scheme : io.spillway.credit.Spillway.forSloNanos(sloNanos);
      long id = sessionId != 0 ? sessionId : SessionIds.next();
      OverloadMetrics m = metrics;
      long slo = sloNanos;
      LongFunction<ClientGate<Object>> renewal =
          renewedId -> chosen.newClientGate(new ClientEnvironment(renewedId, slo, m));
      SpillwayClientInterceptor session = new SpillwayClientInterceptor(renewal.apply(id), id,
          renewal, chosen.issuesCredits(), ticker,
          scheduler != null ? scheduler : SharedTimer.scheduler(), interfaces);
      session.sloNanos = slo;
      return session;
    }
  }
}
