package io.spillway.grpc;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Deadline;
import io.grpc.ForwardingClientCall;
import io.grpc.ForwardingClientCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.spillway.api.CallGraphGate;
import io.spillway.api.RequestBudget;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.Ticker;
import java.lang.System.Logger.Level;
import java.util.Objects;

/**
 * For the calls a service makes while serving a Spillway call: the hop from one node of a call
 * graph to the next. Put it on the channels to the service's callees.
 *
 * <ul>
 *   <li>The sub-request inherits the inbound request's tokens (rajomon-nsdi25 §3.2, §3.4: "RAJOMON
 *       simply forwards a request's token holdings through the graph"), its priority (DAGOR: one
 *       priority for the whole call graph) and its remaining queueing budget (ASQM), read from the
 *       {@link SpillwayContext} of the gRPC {@link io.grpc.Context} the call is made in. Values the
 *       application already put in the headers win.
 *   <li>Optionally the call also waits in a per-callee client gate: a
 *       {@link SpillwayClientInterceptor} for the callee ({@code breakwater-d}: Breakwater at every
 *       hop, rajomon-nsdi25 §4), if it is unary: a stream passes through, for the reason
 *       {@link SpillwayClientInterceptor#interceptCall} gives. The inherited fields take
 *       precedence over the gate's. Such a
 *       call does not inherit the caller's cancellation (only its deadline): once the session has
 *       sent it, it runs to its answer, whose credits the session needs; a call still queued when
 *       the caller's context is cancelled ends with that context's status, unsent.
 *   <li>Every answer that carries Spillway trailers, response or reject, is reported to the inbound
 *       server gate if it implements {@link CallGraphGate}, with the inbound call's interface id and
 *       the callee's key from the {@code callees} registry (Rajomon §3.4, "Maximum Total Price").
 * </ul>
 *
 * <p>A call made outside any Spillway call passes through (through the per-callee gate, if any),
 * carrying only the remaining budget of a request served by other means ({@link
 * RequestBudget#CURRENT}, as an HTTP filter binds it) if there is one.
 *
 * <p>Thread-safe. Per call: the forwarding wrappers, and at the answer, when the inbound gate
 * listens, one {@link ResponseMetadata} and one ticker reading.
 */
public final class SpillwayDownstreamInterceptor implements ClientInterceptor {

  private static final System.Logger LOG =
      System.getLogger(SpillwayDownstreamInterceptor.class.getName());

  private final InterfaceRegistry callees;
  private final Ticker ticker;
  private final SpillwayClientInterceptor perCallee;

  /**
   * @param callees numbers the callee methods (the {@code calleeKey} of
   *     {@link CallGraphGate#onDownstreamResponse}); share it with the gate that reads the keys
   * @param ticker read when a downstream answer is reported
   * @param perCallee the session this service holds with the callee, or {@code null} for none
   */
  public SpillwayDownstreamInterceptor(InterfaceRegistry callees, Ticker ticker,
      SpillwayClientInterceptor perCallee) {
    this.callees = Objects.requireNonNull(callees, "callees");
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    this.perCallee = perCallee;
  }

  /** The callee registry. */
  public InterfaceRegistry callees() {
    return callees;
  }

  @Override
  public <ReqT, RespT> ClientCall<ReqT, RespT> interceptCall(MethodDescriptor<ReqT, RespT> method,
      CallOptions callOptions, Channel next) {
    ClientCall<ReqT, RespT> call = perCallee != null && SpillwayClientInterceptor.takesCredit(method)
        ? sessionCall(method, callOptions, next)
        : next.newCall(method, callOptions);
    SpillwayContext inbound = SpillwayContext.current();
    if (inbound == null) {
      RequestBudget budget = RequestBudget.currentOrNull();
      return budget == null ? call : new BudgetOnly<>(call, budget);
    }
    return new SubRequest<>(call, inbound, callees.idOf(method.getFullMethodName()));
  }

  /** Puts {@code value} under {@code key} if {@code present} and the application put none. */
  private static void inherit(Metadata headers, Metadata.Key<String> key, long value,
      boolean present) {
    if (present && !headers.containsKey(key)) {
      headers.put(key, Long.toString(value));
    }
  }

  /**
   * A call made while serving a request that did not come over gRPC (an HTTP request, whose
   * filter bound its budget to {@link RequestBudget#CURRENT}): it carries what is left of that
   * budget, as the HTTP clients' filters carry it, so the callee's budgeted locks see it.
   */
  private static final class BudgetOnly<ReqT, RespT>
      extends ForwardingClientCall.SimpleForwardingClientCall<ReqT, RespT> {
    private final RequestBudget budget;

    BudgetOnly(ClientCall<ReqT, RespT> delegate, RequestBudget budget) {
      super(delegate);
      this.budget = budget;
    }

    @Override
    public void start(Listener<RespT> responseListener, Metadata headers) {
      inherit(headers, SpillwayMetadata.BUDGET, budget.remainingNanos(), true);
      super.start(responseListener, headers);
    }
  }

  /**
   * A call through the per-callee session, made in a fork of the caller's {@link Context}: it keeps
   * the context's values and deadline (moved into the call options) but not its cancellation. A
   * sub-request is typically made while serving an inbound call, whose context gRPC cancels as
   * soon as that call ends, often while sibling sub-requests are still in flight (a fan-out
   * answered early with a sibling's failure). Cancelling a sent sub-request would lose the credit
   * delta its answer carries whenever the callee has already answered: the client drops trailers
   * that arrive after a local cancel, and the callee, which saw no cancel, sends no orphan credit.
   * The callee then counts credits the session never heard of and, thinking the session holds
   * them, never sends it the explicit credit a drained session waits for (breakwater-osdi20 §3.2:
   * credits are conserved between server and client; a lost one is lost for good). So a sent
   * sub-request runs to its answer, as a request does in Breakwater's own RPC layer, which has no
   * cancellation; one still queued in the session when the caller's context is cancelled ends at
   * once with the context's status and is never sent.
   */
  private <ReqT, RespT> ClientCall<ReqT, RespT> sessionCall(MethodDescriptor<ReqT, RespT> method,
      CallOptions callOptions, Channel next) {
    Context caller = Context.current();
    Deadline deadline = caller.getDeadline();
    if (deadline != null && (callOptions.getDeadline() == null
        || deadline.isBefore(callOptions.getDeadline()))) {
      callOptions = callOptions.withDeadline(deadline);
    }
    Context detached = caller.fork();
    Context previous = detached.attach();
    GatedClientCall<ReqT, RespT> call;
    try {
      call = perCallee.gatedCall(method, callOptions, next);
    } finally {
      detached.detach(previous);
    }
    return new UnsentWhileCallerLives<>(call, caller);
  }

  /** Ends a queued call when its caller's context is cancelled; leaves a sent one alone. */
  private static final class UnsentWhileCallerLives<ReqT, RespT>
      extends ForwardingClientCall.SimpleForwardingClientCall<ReqT, RespT>
      implements Context.CancellationListener {
    private final GatedClientCall<ReqT, RespT> gated;
    private final Context caller;

    UnsentWhileCallerLives(GatedClientCall<ReqT, RespT> gated, Context caller) {
      super(gated);
      this.gated = gated;
      this.caller = caller;
    }

    @Override
    public void start(Listener<RespT> responseListener, Metadata headers) {
      super.start(new ForwardingClientCallListener.SimpleForwardingClientCallListener<>(responseListener) {
        @Override
        public void onClose(Status status, Metadata trailers) {
          caller.removeListener(UnsentWhileCallerLives.this);
          super.onClose(status, trailers);
        }
      }, headers);
      caller.addListener(this, Runnable::run); // a no-op for a context never cancelled
    }

    @Override
    public void cancelled(Context context) {
      gated.cancelIfQueued(Contexts.statusFromCancelled(context));
    }
  }

  private final class SubRequest<ReqT, RespT>
      extends ForwardingClientCall.SimpleForwardingClientCall<ReqT, RespT> {
    private final SpillwayContext inbound;
    private final int calleeKey;

    SubRequest(ClientCall<ReqT, RespT> delegate, SpillwayContext inbound, int calleeKey) {
      super(delegate);
      this.inbound = inbound;
      this.calleeKey = calleeKey;
    }

    @Override
    public void start(Listener<RespT> responseListener, Metadata headers) {
      inherit(headers, SpillwayMetadata.TOKENS, inbound.tokens(), inbound.tokens() != 0);
      inherit(headers, SpillwayMetadata.PRIORITY, inbound.priority(), inbound.priority() != 0);
      RequestBudget budget = inbound.budget();
      if (budget != null) {
        inherit(headers, SpillwayMetadata.BUDGET, budget.remainingNanos(), true);
      }
      CallGraphGate graph = inbound.callGraph();
      super.start(graph == null ? responseListener : new Report<>(responseListener, graph), headers);
    }


    /** Hands the callee's answer to the inbound gate before the application sees it. */
    private final class Report<R> extends ForwardingClientCallListener.SimpleForwardingClientCallListener<R> {
      private final CallGraphGate graph;

      Report(Listener<R> delegate, CallGraphGate graph) {
        super(delegate);
        this.graph = graph;
      }

      @Override
      public void onClose(Status status, Metadata trailers) {
        if (SpillwayMetadata.hasResponse(trailers)) {
          ResponseMetadata response = new ResponseMetadata().interfaceId(calleeKey);
          String problem = SpillwayMetadata.readResponse(trailers, response);
          if (problem != null) {
            LOG.log(Level.DEBUG, "{0}: {1}", callees.nameOf(calleeKey), problem);
          }
          try {
            graph.onDownstreamResponse(inbound.interfaceId(), calleeKey, response, ticker.read());
          } catch (RuntimeException e) { // the gate's bug must not break the application's call
            LOG.log(Level.WARNING, "call-graph gate failed on a downstream response", e);
          }
        }
        super.onClose(status, trailers);
      }
    }
  }

  /** Configures a {@link SpillwayDownstreamInterceptor}. Not thread-safe. */
  public static final class Builder {
    private InterfaceRegistry callees = new InterfaceRegistry();
    private Ticker ticker = Ticker.system();
    private SpillwayClientInterceptor perCallee;

    Builder() { }

    /** Numbers the callee methods; share it with the call-graph gate. */
    public Builder callees(InterfaceRegistry value) {
      callees = Objects.requireNonNull(value, "callees");
      return this;
    }

    /** The clock; {@link Ticker#system()} by default. */
    public Builder ticker(Ticker value) {
      ticker = Objects.requireNonNull(value, "ticker");
      return this;
    }

    /**
     * Also queue every call in this session with the callee ({@code breakwater-d}). The session
     * is owned by the caller, who closes it.
     */
    public Builder perCalleeSession(SpillwayClientInterceptor value) {
      perCallee = Objects.requireNonNull(value, "perCallee");
      return this;
    }

    public SpillwayDownstreamInterceptor build() {
      return new SpillwayDownstreamInterceptor(callees, ticker, perCallee);
    }
  }
}
