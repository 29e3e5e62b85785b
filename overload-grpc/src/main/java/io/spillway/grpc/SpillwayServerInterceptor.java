package io.spillway.grpc;

import io.grpc.Context;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.spillway.api.CallGraphGate;
import io.spillway.api.ControlChannel;
import io.spillway.api.InterfacePrices;
import io.spillway.api.Outcome;
import io.spillway.api.RequestBudget;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerGate;
import io.spillway.api.ServerPermit;
import io.spillway.api.Ticker;
import java.lang.System.Logger.Level;
import java.util.Objects;

/**
 * Puts a {@link ServerGate} in front of gRPC services: every call is decided on as it starts,
 * from its request headers alone, before the handler sees a message (../shared/DESIGN.md, "A
 * request's path on a server": drop as early as possible).
 *
 * <ul>
 *   <li>The {@link SpillwayMetadata} request headers become a {@link RequestMetadata}, its
 *       interface id taken from the full method name through an {@link InterfaceRegistry};
 *       malformed values count as absent (logged at DEBUG, never failing the call).
 *   <li>A rejected call is closed at once with {@link io.grpc.Status#RESOURCE_EXHAUSTED}, a
 *       description naming the reason ({@code "spillway: rejected (price 42)"}, see
 *       {@link SpillwayMetadata#describeReject}) and the response fields in its trailers.
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
 *   <li>A cancelled call has nobody to carry its credit delta back; a non-zero delta is sent
 *       instead on the {@code orphanCredits} channel (the session's explicit credit stream,
 *       {@link SpillwayControlService}), so the client's view of its window stays right.
 *   <li>Calls to {@link SpillwayControlService#SERVICE_NAME} are passed through unadmitted.
 * </ul>
 *
 * <p>Cost per call: one ticker reading at admission and one at completion (one more at the first
 * callback if the request carries a budget), the request's and the response's metadata objects,
 * the call and listener wrappers, and a derived {@link Context}. No threads, no timers.
 *
 * <p>Thread-safe; one instance serves any number of services and calls.
 */
public final class SpillwayServerInterceptor implements ServerInterceptor {

  static final System.Logger LOG = System.getLogger(SpillwayServerInterceptor.class.getName());

  private final ServerGate gate;
  private final CallGraphGate callGraph;
  private final Ticker ticker;
  private final InterfaceRegistry interfaces;
  /** The last price list written, with its text. */
  private volatile PricesText lastPrices;
  private final ControlChannel orphanCredits;

  /**
   * @param gate decides on every call; its {@link ServerGate#start()} is the caller's business
   * @param ticker the clock the gate is handed readings of, read once per call event
   * @param interfaces numbers the methods; share it with whatever else reads interface ids
   * @param orphanCredits where the credit delta of a call that ended without a response goes;
   *     {@link ControlChannel#DISCARD} if the scheme issues no credits
   */
  public SpillwayServerInterceptor(ServerGate gate, Ticker ticker, InterfaceRegistry interfaces,
      ControlChannel orphanCredits) {
    this.gate = Objects.requireNonNull(gate, "gate");
    this.callGraph = gate instanceof CallGraphGate cg ? cg : null;
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    this.interfaces = Objects.requireNonNull(interfaces, "interfaces");
    this.orphanCredits = Objects.requireNonNull(orphanCredits, "orphanCredits");
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

  @Override
  public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(ServerCall<ReqT, RespT> call,
      Metadata headers, ServerCallHandler<ReqT, RespT> next) {
    MethodDescriptor<ReqT, RespT> method = call.getMethodDescriptor();
    if (SpillwayControlService.SERVICE_NAME.equals(method.getServiceName())) {
      return next.startCall(call, headers);
    }
    long now = ticker.read();
    RequestMetadata request = new RequestMetadata();
    String problem = SpillwayMetadata.readRequest(headers, request);
    if (problem != null) {
      LOG.log(Level.DEBUG, "{0}: {1}", method.getFullMethodName(), problem);
    }
    request.interfaceId(interfaces.idOf(method.getFullMethodName()));
    ServerPermit permit = gate.admit(request, now);
    if (!permit.isAdmitted()) {
      reject(call, permit, request, now);
      return new ServerCall.Listener<>() { };
    }
    RequestBudget budget = request.budgetNanos() == Long.MAX_VALUE
        ? null : RequestBudget.of(request.budgetNanos());
    SpillwayContext spillway = new SpillwayContext(request, permit, callGraph, budget);
    Context context = Context.current().withValue(SpillwayContext.KEY, spillway);
    GatedServerCall<ReqT, RespT> gated =
        new GatedServerCall<>(call, permit, request.sessionId(), context, budget, now, this);
    ServerCall.Listener<ReqT> listener;
    Context previous = context.attach();
    try {
      listener = next.startCall(gated, headers);
    } catch (RuntimeException | Error e) {
      gated.finish(Outcome.FAILED, ticker.read()); // gRPC fails the call; the permit must end too
      throw e;
    } finally {
      context.detach(previous);
    }
    return gated.listener(listener);
  }

  private void reject(ServerCall<?, ?> call, ServerPermit permit, RequestMetadata request, long now) {
    ResponseMetadata response = new ResponseMetadata().sessionId(request.sessionId())
        .requestId(request.requestId());
    permit.complete(Outcome.DROPPED, now, response);
    Metadata trailers = new Metadata();
    writeResponse(response, trailers);
    call.close(io.grpc.Status.RESOURCE_EXHAUSTED
        .withDescription(SpillwayMetadata.describeReject(response)), trailers);
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

  ControlChannel orphanCredits() {
    return orphanCredits;
  }
}
