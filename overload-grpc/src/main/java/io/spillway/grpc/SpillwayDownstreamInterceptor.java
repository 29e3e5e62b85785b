package io.spillway.grpc;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
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
 *       hop, rajomon-nsdi25 §4). The inherited fields take precedence over the gate's.
 *   <li>Every answer that carries Spillway trailers, response or reject, is reported to the inbound
 *       server gate if it implements {@link CallGraphGate}, with the inbound call's interface id and
 *       the callee's key from the {@code callees} registry (Rajomon §3.4, "Maximum Total Price").
 * </ul>
 *
 * <p>A call made outside any Spillway call passes through (through the per-callee gate, if any).
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
    ClientCall<ReqT, RespT> call = perCallee != null
        ? perCallee.interceptCall(method, callOptions, next)
        : next.newCall(method, callOptions);
    SpillwayContext inbound = SpillwayContext.current();
    if (inbound == null) {
      return call;
    }
    return new SubRequest<>(call, inbound, callees.idOf(method.getFullMethodName()));
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

    private static void inherit(Metadata headers, Metadata.Key<String> key, long value,
        boolean present) {
      if (present && !headers.containsKey(key)) {
        headers.put(key, Long.toString(value));
      }
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
