package io.spillway.grpc;

import io.grpc.Context;
import io.grpc.Deadline;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallExecutorSupplier;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.spillway.api.CallGraphGate;
import io.spillway.api.ControlChannel;
import io.spillway.api.InterfacePrices;
import io.spillway.api.AbstractServerPermit;
import io.spillway.api.Outcome;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.RequestBudget;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerGate;
import io.spillway.api.ServerPermit;
import io.spillway.api.ServiceTimeTracker;
import io.spillway.api.Status;
import io.spillway.api.Ticker;
import java.lang.System.Logger.Level;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;

/**
 * Puts a {@link ServerGate} in front of gRPC services: every call is decided on as it starts,
 * from its request headers alone, before the handler sees a message (docs/design.md, "A
 * request's path on a server": drop as early as possible).
 *
 * <ul>
 *   <li>The {@link SpillwayMetadata} request headers become a {@link RequestMetadata}, its
 *       interface id taken from the full method name through an {@link InterfaceRegistry};
 *       malformed values count as absent (logged at DEBUG, never failing the call).
 *   <li>A rejected call is closed at once with {@link io.grpc.Status#RESOURCE_EXHAUSTED}, a
 *       description naming the reason ({@code "spillway: rejected (price 42)"}, see
 *       {@link SpillwayMetadata#describeReject}) and the response fields in its trailers; one
 *       refused for want of credit on a connection ({@code REJECTED_NO_CREDIT}: it came on no
 *       credit the server gave) is closed after its connection's hold instead
 *       ({@link CreditRefusalHolds}: from 50 µs, doubling while the connection keeps sending
 *       without credit, up to 10 ms), so that a client inventing sessions or ignoring its window
 *       is slowed, not answered as fast as it can send.
 *   <li>An admitted call runs with a {@link SpillwayContext} (the inbound fields and the permit)
 *       in its gRPC {@link Context}, and with its queueing budget, if the request carried one,
 *       bound to {@link RequestBudget#CURRENT} in each of its callbacks. Its permit is completed
 *       exactly once, when the call closes (the outcome follows the gRPC status; the response
 *       fields go into the trailers), when it is cancelled (deadline: {@code TIMED_OUT}; otherwise
 *       {@code FAILED}), or when a callback throws: then the interceptor closes the call itself,
 *       with {@code RESOURCE_EXHAUSTED} and outcome {@code ABORTED} for a
 *       {@link io.spillway.api.BudgetExceededException} and the exception's status
 *       ({@code UNKNOWN} for a plain exception) and outcome {@code FAILED} otherwise, so the
 *       trailers still carry the credit delta. One permit per call, unary or streaming.
 *   <li>A cancelled call has nobody to carry its credit delta back; its change, and the stamped
 *       window where the gate stamps it, is sent instead on the {@code orphanCredits} channel
 *       (the session's explicit credit stream, {@link SpillwayControlService}), so the client's
 *       view of its window stays right; the stamp also ends the doubt in which the client's own
 *       cancel left its window ({@link io.spillway.api.ClientGate#onUnanswered}).
 *   <li>A request's budget is the nearest of its {@code spillway-budget-ns} header, its gRPC
 *       deadline and the server-side target given to the constructor, the last two less the p99
 *       of the server's service time (protego-nsdi23 §3.2: budget = target − p99 service − p99
 *       network; the network share is left in the deadline or the target). The target is the
 *       latency the server promises: a call that queues past it because its client would wait
 *       longer, or claims a longer budget, takes the place of calls that would meet the target
 *       (§3.2 budgets from the SLO, not from a client's patience or its word). A deadline nearer
 *       than the target narrows the budget; without a target, the deadline alone sets it, and
 *       with neither, the header's budget stands, or the call has none. A call whose deadline is
 *       already too close to be met is refused at once ({@code REJECTED_BUDGET}), before the gate
 *       and before it queues, whatever its header claims. So a {@code BudgetedLock} in the
 *       handler works for any client. A call that spends the budget its deadline gave it
 *       waiting for a worker is aborted unrun (docs/design.md, "Request budget": a budget
 *       shrinks by the time spent in each queue): its answer would come too late for a client
 *       that gives up at the deadline, so its handler never sees it. A budget from the header or
 *       the server-side target bounds only the handler's waits: a Spillway client derives its
 *       header budget from its own send-to-response p99, which over gRPC holds milliseconds of
 *       call overhead, and enforcing it on the wait for a worker refused calls that would have
 *       met their SLO (docs/results/grpc.md, "Budgets").
 *   <li>Every reject carries {@code grpc-retry-pushback-ms}: the server's current queueing delay
 *       in milliseconds (at least 1), so a client's retry policy waits about as long as the queue
 *       needs to drain instead of retrying at once (gRFC A6).
 *   <li>Calls to {@link SpillwayControlService#SERVICE_NAME} are passed through unadmitted.
 * </ul>
 *
 * <p>Where the decision is made: installed by {@link SpillwayGrpcServer.Builder#install}, the
 * interceptor also serves as the server's {@link ServerCallExecutorSupplier}, which gRPC calls on
 * the transport thread as each call arrives, before any work is queued for it. The decision is
 * made there: a rejected call stays on the transport thread and is answered at once, never
 * waiting behind admitted work in the workers' queue; an admitted call is handed to the workers.
 * The decision is kept for {@link #interceptCall} by the call's headers object (identity); an
 * interceptor outside this one that hands the call on with a copy of its headers is followed by
 * the executor the decision chose, which is the decision itself and marks the call's start
 * with it, so a call is admitted once whatever its outer interceptors do. A call that is
 * cancelled between the two has its permit completed by a cancellation listener; gRPC still
 * starts it, and it is not decided on again then.
 * Used as a plain interceptor, the decision is made in {@link #interceptCall}.
 *
 * <p>Cost per call: one ticker reading at admission and one at completion (one more at the first
 * callback if the request carries a budget, and, installed, one for each hand-off of a streaming
 * call's work to the workers after the first), the request's and the response's metadata
 * objects, the call and listener wrappers, and a derived {@link Context}; installed, a
 * scoped-value binding around the call's first task. No threads and no timers, except the
 * timer that answers held refusals for credit.
 *
 * <p>Thread-safe; one instance serves any number of services and calls.
 */
public final class SpillwayServerInterceptor implements ServerInterceptor {

  static final System.Logger LOG = System.getLogger(SpillwayServerInterceptor.class.getName());

  /** gRFC A6's server pushback: milliseconds the client should wait before it retries. */
  public static final Metadata.Key<String> RETRY_PUSHBACK_MS =
      Metadata.Key.of("grpc-retry-pushback-ms", Metadata.ASCII_STRING_MARSHALLER);

  /** {@code targetBudgetNanos} for "no server-side target": only deadlines set budgets. */
  public static final long NO_TARGET = Long.MAX_VALUE;

  private static final long NANOS_PER_MS = 1_000_000;

  private final ServerGate gate;
  private final CallGraphGate callGraph;
  private final Ticker ticker;
  private final InterfaceRegistry interfaces;
  /** The last price list written, with its text. */
  private volatile PricesText lastPrices;
  private final ControlChannel orphanCredits;
  private final QueueDelaySignal queueDelay;
  private final long targetBudgetNanos;
  /**
   * Whether an admitted call whose budget the queueing delay already exceeds is refused before it
   * queues (Protego's ASQM at the run queue; {@link SpillwayGrpcServer.Builder#budgetedRunQueue}).
   * Set once, before the server starts.
   */
  boolean budgetedRunQueue;
  /**
   * Where the calls this interceptor refuses itself, before any gate decides (a deadline that
   * cannot be met), are counted as the gate counts its own refusals ({@code onAdmission}), so a
   * dashboard's refusals by reason include them. Set once, before the server starts.
   */
  OverloadMetrics metrics = OverloadMetrics.NONE;
  /**
   * Where refusals for credit on a connection wait before they are answered. Set once, before
   * the server starts; by default on the process's shared timer thread, started at the first hold.
   */
  CreditRefusalHolds holds = new CreditRefusalHolds(SharedTimer.scheduler());
  /** Decays only while it refuses calls: idleness at low load says nothing about service times. */
  private final ServiceTimeTracker serviceTimes = ServiceTimeTracker.decayingWhileRefusing();
  /** Admitted calls whose handlers have not started; {@code null} if not measured. */
  private final UnstartedCalls unstarted;
  /** Decisions made on the transport thread, waiting for {@link #interceptCall}. */
  private final ConcurrentHashMap<Metadata, Decision> decided = new ConcurrentHashMap<>();
  /**
   * The decision of the call whose start is running on this thread: gRPC starts a call (runs its
   * interceptors) in a task on the executor its decision chose, and that executor binds this. A
   * scoped value, not a thread-local: a binding costs the worker thread no map entry, which with
   * virtual-thread workers would be one per call. It
   * finds the decision when an interceptor outside this one handed the call on with a copy of
   * its headers, which {@link #decided} cannot match.
   */
  private static final ScopedValue<Decision> STARTING = ScopedValue.newInstance();

  /**
   * @param gate decides on every call; its {@link ServerGate#start()} is the caller's business
   * @param ticker the clock the gate is handed readings of, read once per call event
   * @param interfaces numbers the methods; share it with whatever else reads interface ids
   * @param orphanCredits where the credit delta of a call that ended without a response goes;
   *     {@link ControlChannel#DISCARD} if the scheme issues no credits
   * @param queueDelay the server's queueing delay, for the pushback on rejects
   * @param targetBudgetNanos the largest queueing budget any request gets, whatever its header
   *     or deadline, before the p99 service time is taken off; {@link #NO_TARGET} for none
   */
  public SpillwayServerInterceptor(ServerGate gate, Ticker ticker, InterfaceRegistry interfaces,
      ControlChannel orphanCredits, QueueDelaySignal queueDelay, long targetBudgetNanos) {
    this(gate, ticker, interfaces, orphanCredits, queueDelay, targetBudgetNanos, null);
  }

  /** As above, stamping admitted calls in {@code unstarted} until their handlers start. */
  SpillwayServerInterceptor(ServerGate gate, Ticker ticker, InterfaceRegistry interfaces,
      ControlChannel orphanCredits, QueueDelaySignal queueDelay, long targetBudgetNanos,
      UnstartedCalls unstarted) {
    this.unstarted = unstarted;
    this.gate = Objects.requireNonNull(gate, "gate");
    this.callGraph = gate instanceof CallGraphGate cg ? cg : null;
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    this.interfaces = Objects.requireNonNull(interfaces, "interfaces");
    this.orphanCredits = Objects.requireNonNull(orphanCredits, "orphanCredits");
    this.queueDelay = Objects.requireNonNull(queueDelay, "queueDelay");
    if (targetBudgetNanos <= 0) {
      throw new IllegalArgumentException("targetBudgetNanos must be positive: " + targetBudgetNanos);
    }
    this.targetBudgetNanos = targetBudgetNanos;
  }

  /** As above with no pushback delay (always 1 ms) and no server-side budget target. */
  public SpillwayServerInterceptor(ServerGate gate, Ticker ticker, InterfaceRegistry interfaces,
      ControlChannel orphanCredits) {
    this(gate, ticker, interfaces, orphanCredits, QueueDelaySignal.NONE, NO_TARGET);
  }

  /** An interceptor with a fresh {@link InterfaceRegistry} that discards orphaned credits. */
  public SpillwayServerInterceptor(ServerGate gate, Ticker ticker) {
    this(gate, ticker, new InterfaceRegistry(), ControlChannel.DISCARD);
  }

  /** The gate deciding on calls. */
  public ServerGate gate() {
    return gate;
  }

  /** The registry numbering this server's methods. */
  public InterfaceRegistry interfaces() {
    return interfaces;
  }

  /** The running p99 of the handlers' service time, in nanoseconds (zero before any call). */
  public long p99ServiceNanos() {
    return serviceTimes.p99Nanos(ticker.read());
  }

  /**
   * A {@link ServerCallExecutorSupplier} that decides on each call on the transport thread and
   * runs admitted calls on {@code workers}, rejected ones (and control calls) where they arrived.
   * Set the server's own executor to {@code directExecutor()} so that this choice is the only one.
   *
   * @param probe the event-loop probe to stamp as calls arrive, or {@code null}
   */
  ServerCallExecutorSupplier executorSupplier(Executor workers, EventLoopProbe probe) {
    return executorSupplier(workers, probe, null);
  }

  /** As above; with {@code threading}, an admitted call runs in-line when the adaptation says so. */
  ServerCallExecutorSupplier executorSupplier(Executor workers, EventLoopProbe probe, CallThreading threading) {
    Objects.requireNonNull(workers, "workers");
    return new ServerCallExecutorSupplier() {
      @Override
      public <ReqT, RespT> Executor getExecutor(ServerCall<ReqT, RespT> call, Metadata headers) {
        MethodDescriptor<ReqT, RespT> method = call.getMethodDescriptor();
        if (SpillwayControlService.SERVICE_NAME.equals(method.getServiceName())) {
          return null;
        }
        long now = ticker.read();
        if (probe != null) {
          probe.arrived(now);
        }
        MessageArrival arrival = MessageArrival.Factory.take(headers);
        Context context = Context.current(); // gRPC runs this in the call's context
        Decision d = decide(method.getFullMethodName(), headers, now, context.getDeadline(),
            originOf(call));
        d.context = context;
        d.headers = headers;
        decided.put(headers, d);
        // The call may be cancelled, or an interceptor outside this one may end it, before it
        // reaches interceptCall: the listener then takes the decision back (and ends its permit).
        context.addListener(d, Runnable::run);
        if (!d.admitted()) {
          return d; // a reject is answered on the transport thread
        }
        if (threading != null && threading.arrivedInline(now)) {
          handlerStarted(d.ticket); // runs where it arrived: it waits for no worker
          return d;
        }
        // A unary or server-streaming call counts from its admission until its request message
        // reaches the handler, the event loop's delivery of the message between its two
        // hand-offs included: on a saturated core that delivery is much of the wait
        // (docs/results/grpc.md, "A client that stalls after its headers"). A client-streaming
        // or bidi call, whose handler starts with it and may then wait for its client as long as
        // the client likes, counts only while it has work queued (CallHandOffs).
        boolean unary = method.getType().clientSendsOneMessage();
        d.target = d.ticket < 0 || unary ? workers : new CallHandOffs(workers, d.ticket);
        if (unary && d.ticket >= 0 && arrival != null) {
          // ...but not while it waits for a client that has not sent its message (MessageArrival)
          arrival.admitted(d.ticket);
          d.arrival = arrival;
        }
        return d;
      }
    };
  }

  /**
   * A client-streaming or bidi call's executor: each task gRPC hands the workers for it counts as
   * the call waiting ({@link UnstartedCalls}) from the hand-off until a worker runs it. gRPC hands
   * a call over as it starts, and again whenever work for it arrives while it has none queued
   * (a message, the half-close); between hand-offs the call waits for its client, not for the
   * server, so a stream its client leaves idle is not read as queueing delay. The first hand-off
   * is the call's start, stamped as it was admitted; a later one reads the clock. gRPC runs a
   * call's tasks one at a time through its own serializing executor, so a task queued while the
   * call's previous one runs is run by that worker and never handed off.
   */
  private final class CallHandOffs implements Executor {
    private final Executor workers;
    /** The admission's ticket, for the first hand-off; then -1. */
    private final java.util.concurrent.atomic.AtomicLong first;

    CallHandOffs(Executor workers, long admissionTicket) {
      this.workers = workers;
      this.first = new java.util.concurrent.atomic.AtomicLong(admissionTicket);
    }

    @Override
    public void execute(Runnable task) {
      long t = first.getAndSet(-1);
      long ticket = t >= 0 ? t : unstarted.arrived(ticker.read());
      workers.execute(() -> {
        unstarted.started(ticket);
        task.run();
      });
    }
  }

  @Override
  public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(ServerCall<ReqT, RespT> call,
      Metadata headers, ServerCallHandler<ReqT, RespT> next) {
    MethodDescriptor<ReqT, RespT> method = call.getMethodDescriptor();
    if (SpillwayControlService.SERVICE_NAME.equals(method.getServiceName())) {
      return next.startCall(call, headers);
    }
    Decision d = decided.remove(headers);
    if (d == null) { // an outer interceptor may have copied the headers: this call's decision
      Decision starting = STARTING.isBound() ? STARTING.get() : null;
      if (starting != null && !starting.claimed) {
        if (!decided.remove(starting.headers, starting)) { // its cancellation took it back
          return ended(call, starting);
        }
        d = starting;
      }
    }
    if (d != null) {
      d.claimed = true;
      if (d.context != null) {
        d.context.removeListener(d);
      }
    } else {
      d = decide(method.getFullMethodName(), headers, ticker.read(),
          Context.current().getDeadline(), originOf(call));
    }
    if (!d.admitted()) {
      reject(call, d);
      return new ServerCall.Listener<>() { };
    }
    SpillwayContext spillway = new SpillwayContext(d.request, d.permit, callGraph, d.budget);
    Context context = Context.current().withValue(SpillwayContext.KEY, spillway);
    GatedServerCall<ReqT, RespT> gated = new GatedServerCall<>(call, d.permit,
        d.request.sessionId(), context, d.budget, d.deadlineBudgetNanos, d.at, d.ticket, d.arrival,
        this);
    ServerCall.Listener<ReqT> listener;
    Context previous = context.attach();
    try {
      if (gated.handlerRunsAtStart() && !gated.startStreaming()) {
        return new ServerCall.Listener<>() { }; // its deadline's budget went waiting: closed unrun
      }
      listener = next.startCall(gated, headers);
      if (d.arrival != null) {
        d.arrival.handlerAsked(); // the handler has asked for its message
      }
    } catch (RuntimeException | Error e) {
      gated.finish(Outcome.FAILED, ticker.read()); // gRPC fails the call; the permit must end too
      throw e;
    } finally {
      context.detach(previous);
    }
    return gated.listener(listener);
  }

  /**
   * A call whose decision its cancellation took back ({@link Decision#cancelled}) while its start
   * waited for a worker: gRPC starts it all the same, and only then tells the interceptors of the
   * cancel. It has ended, and was counted as it ended; decided on again, it would be counted
   * twice, and an interceptor outside this one would count the second decision in place of the
   * first (a refusal, if its deadline has passed meanwhile, for a call the gate admitted). So a
   * refused call is answered with its own refusal, and an admitted one is left to the cancel.
   */
  private <ReqT> ServerCall.Listener<ReqT> ended(ServerCall<ReqT, ?> call, Decision d) {
    if (!d.admitted()) {
      reject(call, d);
    }
    return new ServerCall.Listener<>() { };
  }

  /**
   * The call's connection as the gate knows it ({@link RequestMetadata#origin}): its remote IP
   * address and port, hashed, never 0; 0 for a transport without one (in-process), whose callers
   * share a JVM and no connection. Two connections whose addresses hash alike share what the gate
   * allows one connection (Breakwater's server gate, "Newcomers").
   */
  static long originOf(ServerCall<?, ?> call) {
    SocketAddress remote = call.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR);
    return remote instanceof InetSocketAddress ? ((long) remote.hashCode() << 1) | 1 : 0;
  }

  /** Reads the headers, sets the budget, and asks the gate; a reject's permit is completed here. */
  private Decision decide(String fullMethodName, Metadata headers, long now, Deadline deadline,
      long origin) {
    RequestMetadata request = new RequestMetadata();
    String problem = SpillwayMetadata.readRequest(headers, request);
    request.origin(origin);
    if (problem != null) {
      LOG.log(Level.DEBUG, "{0}: {1}", fullMethodName, problem);
    }
    request.interfaceId(interfaces.idOf(fullMethodName));
    long deadlineBudget = Long.MAX_VALUE; // from its deadline: spent unrun, the call is aborted
    if (deadline != null || targetBudgetNanos != NO_TARGET) {
      long p99 = serviceTimes.p99Nanos(now); // decays while it refuses calls (ServiceTimeTracker)
      // The header's budget is the client's claim: a looser one than the deadline's or the
      // server's target loosens neither, and a deadline that cannot be met is refused whatever
      // the header claims (Protego §3.2 budgets from the target).
      long budget = request.budgetNanos();
      if (deadline != null) {
        deadlineBudget = deadline.timeRemaining(TimeUnit.NANOSECONDS) - p99;
        if (deadlineBudget <= 0) { // the deadline cannot be met: refuse before the call queues
          serviceTimes.refused(now);
          metrics.onAdmission(Status.REJECTED_BUDGET);
          return rejected(new Refused(Status.REJECTED_BUDGET, metrics), request, now);
        }
        budget = Math.min(budget, deadlineBudget);
      }
      if (targetBudgetNanos != NO_TARGET) {
        budget = Math.min(budget, Math.max(0, targetBudgetNanos - p99));
      }
      request.budgetNanos(budget);
    }
    ServerPermit permit = gate.admit(request, now);
    if (!permit.isAdmitted()) {
      return rejected(permit, request, now);
    }
    RequestBudget requestBudget = request.budgetNanos() == Long.MAX_VALUE
        ? null : RequestBudget.of(request.budgetNanos());
    if (budgetedRunQueue && requestBudget != null
        && !requestBudget.fits(queueDelay.queueingDelayNanos(now))) {
      // Protego §3.2: the queue it would join is already longer than its budget
      return rejected(permit, Outcome.ABORTED, request, now);
    }
    holds.admitted(origin);
    Decision d = new Decision(request, permit, requestBudget, null, now);
    d.deadlineBudgetNanos = deadlineBudget;
    if (unstarted != null) {
      d.ticket = unstarted.arrived(now);
    }
    return d;
  }

  private Decision rejected(ServerPermit permit, RequestMetadata request, long now) {
    return rejected(permit, Outcome.DROPPED, request, now);
  }

  /** Ends {@code permit} with {@code outcome} and makes the reject its response carries. */
  private Decision rejected(ServerPermit permit, Outcome outcome, RequestMetadata request, long now) {
    ResponseMetadata response = new ResponseMetadata().sessionId(request.sessionId())
        .requestId(request.requestId());
    permit.complete(outcome, now, response);
    return new Decision(request, permit, null, response, now);
  }

  private void reject(ServerCall<?, ?> call, Decision d) {
    Metadata trailers = new Metadata();
    writeResponse(d.rejectResponse, trailers);
    addPushback(trailers, d.at);
    io.grpc.Status status = io.grpc.Status.RESOURCE_EXHAUSTED
        .withDescription(SpillwayMetadata.describeReject(d.rejectResponse));
    long origin = d.request.origin();
    if (origin != 0 && d.rejectResponse.status() == Status.REJECTED_NO_CREDIT
        && holds.hold(origin, () -> call.close(status, trailers))) {
      return; // answered at the end of its connection's hold (CreditRefusalHolds)
    }
    call.close(status, trailers);
  }

  /** Adds {@link #RETRY_PUSHBACK_MS}: the queueing delay at {@code now}, in whole ms, at least 1. */
  void addPushback(Metadata trailers, long now) {
    long delay = queueDelay.queueingDelayNanos(now);
    trailers.discardAll(RETRY_PUSHBACK_MS); // a callee's, passed on by the handler: this server's wins
    trailers.put(RETRY_PUSHBACK_MS, Long.toString(Math.max(1, (delay + NANOS_PER_MS - 1) / NANOS_PER_MS)));
  }

  /**
   * Writes {@code response}'s fields into {@code trailers}. A Rajomon gate attaches one price list
   * to every response between two price updates, so its text is formatted once per list, not once
   * per response.
   */
  void writeResponse(ResponseMetadata response, Metadata trailers) {
    SpillwayMetadata.writeResponse(response, trailers);
    InterfacePrices prices = response.interfacePrices();
    if (prices.isEmpty()) {
      return;
    }
    PricesText last = lastPrices;
    if (last == null || last.prices() != prices) {
      last = new PricesText(prices, SpillwayMetadata.pricesText(prices, interfaces));
      lastPrices = last; // racing writers format the same list twice at worst
    }
    if (last.text() != null) {
      trailers.put(SpillwayMetadata.PRICES, last.text());
    }
  }

  /** A price list and its {@code spillway-prices} text ({@code null}: no id has a method). */
  private record PricesText(InterfacePrices prices, String text) { }

  Ticker ticker() {
    return ticker;
  }

  /**
   * Sends the credit message of {@code response}, the answer to a call its client left, on the
   * session's credit stream: the change if any, the stamped window if the gate stamps.
   */
  void sendOrphanCredit(long sessionId, ResponseMetadata response) {
    if (response.creditSeq() != 0) {
      orphanCredits.sendCredit(sessionId, response.creditDelta(), response.creditWindow(),
          response.creditSeq());
    } else if (response.creditDelta() != 0) {
      orphanCredits.sendCredit(sessionId, response.creditDelta());
    }
  }

  /** The call with {@code ticket} reached its handler or ended (no ticket: -1). */
  void handlerStarted(long ticket) {
    if (ticket >= 0 && unstarted != null) {
      unstarted.started(ticket);
    }
  }

  ServiceTimeTracker serviceTimes() {
    return serviceTimes;
  }

  /** Decisions waiting for their calls to start; for tests. */
  int undecidedCalls() {
    return decided.size();
  }

  /**
   * One call's admission, from the transport thread to {@link #interceptCall}. As a cancellation
   * listener it takes back a decision whose call ended before reaching {@link #interceptCall}
   * (cancelled, or closed by an interceptor outside this one) and ends an admitted permit:
   * whichever of the two removes it from {@link #decided} first owns it. A reject's permit is
   * complete already.
   */
  private final class Decision implements Context.CancellationListener, Executor, Runnable {
    final RequestMetadata request;
    final ServerPermit permit;
    final RequestBudget budget;
    final ResponseMetadata rejectResponse;
    final long at;
    Context context; // set before the decision is published
    Metadata headers;
    long ticket = -1; // in unstarted, if measured
    /** Its request message's arrival, if the call is measured by it; set before publication. */
    MessageArrival arrival;
    /** The budget its deadline set (spent unrun: aborted), else {@code Long.MAX_VALUE}. */
    long deadlineBudgetNanos = Long.MAX_VALUE;
    /** Where its call runs: the workers (or its hand-offs); {@code null}: where it arrived. */
    Executor target;
    /** The task handed to {@link #target} and not yet run, while the call is starting. */
    private Runnable starting;
    /** Set once {@link #interceptCall} has it; read racily (a stale read only marks a task). */
    boolean claimed;

    Decision(RequestMetadata request, ServerPermit permit, RequestBudget budget,
        ResponseMetadata rejectResponse, long at) {
      this.request = request;
      this.permit = permit;
      this.budget = budget;
      this.rejectResponse = rejectResponse;
      this.at = at;
    }

    boolean admitted() {
      return rejectResponse == null;
    }

    /**
     * The call's executor. gRPC runs one task of a call at a time, so until {@link
     * #interceptCall} has claimed the decision, each task runs as this decision's own task (no
     * allocation), marked with it in {@link #STARTING}; after that, tasks pass straight through.
     */
    @Override
    public void execute(Runnable task) {
      if (claimed) {
        run(task);
        return;
      }
      if (target == null) {
        runStarting(task);
        return;
      }
      synchronized (this) {
        if (starting != null) { // not expected: gRPC hands over one task at a time
          target.execute(() -> runStarting(task));
          return;
        }
        starting = task;
      }
      target.execute(this);
    }

    private void run(Runnable task) {
      if (target == null) {
        task.run();
      } else {
        target.execute(task);
      }
    }

    @Override
    public void run() {
      Runnable task;
      synchronized (this) {
        task = starting;
        starting = null;
      }
      runStarting(task);
    }

    private void runStarting(Runnable task) {
      ScopedValue.where(STARTING, this).run(task);
    }

    @Override
    public void cancelled(Context cancelled) {
      if (decided.remove(headers, this) && admitted()) { // rare: ended before interceptCall
        handlerStarted(ticket);
        ResponseMetadata response = new ResponseMetadata().sessionId(request.sessionId());
        Deadline deadline = cancelled.getDeadline();
        permit.complete(deadline != null && deadline.isExpired() ? Outcome.TIMED_OUT
            : Outcome.FAILED, ticker.read(), response);
        sendOrphanCredit(request.sessionId(), response);
      }
    }
  }

  /**
   * A call this interceptor refuses before any gate decides; it ends, as a gate's refused permit
   * does, with its completion counted ({@code onCompletion}, {@code DROPPED}).
   */
  private static final class Refused extends AbstractServerPermit {
    private final OverloadMetrics metrics;

    Refused(Status status, OverloadMetrics metrics) {
      super(status);
      this.metrics = metrics;
    }

    @Override
    protected void onComplete(Outcome outcome, long nowNanos, ResponseMetadata response) {
      metrics.onCompletion(outcome);
    }
  }
}
