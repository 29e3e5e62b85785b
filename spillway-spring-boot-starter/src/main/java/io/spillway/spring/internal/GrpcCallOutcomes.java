package io.spillway.spring.internal;

import io.grpc.Context;
import io.grpc.Deadline;
import io.grpc.ForwardingServerCall;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.spillway.api.BudgetExceededException;
import io.spillway.api.Outcome;
import io.spillway.api.Status;
import io.spillway.grpc.SpillwayControlService;
import io.spillway.grpc.SpillwayMetadata;
import io.spillway.spring.GateStats;
import io.spillway.spring.GrpcServerStats;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * Counts each call Spillway decides on under its method ({@link GrpcServerStats#method}), as the
 * gate counts it for the whole server, and hands its close to the JFR events where they are on.
 *
 * <p>Added to the server builder after Spillway's interceptor, so outside it: Spillway refuses a
 * call inside its {@code interceptCall}, by closing it with its status in the {@code
 * spillway-status} trailer, so a call closed while this interceptor starts it with a shed status
 * there is a refusal (by that reason, and ended as dropped, as every refusal is), and any other
 * call was admitted. An admitted call ends once, at its close or its client's cancel, whichever
 * comes first, with the outcome Spillway gives its permit (the same rules as overload-grpc's
 * {@code GatedServerCall}: a call whose client has gone ended timed out past its deadline, else
 * failed; otherwise its status: OK succeeded, a {@link BudgetExceededException} aborted,
 * {@code DEADLINE_EXCEEDED} timed out, the rest failed).
 *
 * <p>Why not the gate's own counters: the gate reports to one {@link io.spillway.api.OverloadMetrics}
 * per server, without the call's method. The interceptor sees every call the gate decides on,
 * also one that ended while its start waited for a worker (its client cancelled it, or its
 * deadline passed): gRPC starts it all the same, and Spillway, which has ended its permit, lets
 * it through unclosed if it admitted it, so it is counted admitted and then ended by the cancel
 * gRPC delivers next, as the gate counted it.
 *
 * <p>Cost per call: a forwarding call (shared with the JFR events) and, for an admitted call, a
 * forwarding listener; a map lookup of the method's counters by the name gRPC's descriptor holds
 * and their {@code LongAdder} increments; a trailer read only for a call closed with {@code
 * RESOURCE_EXHAUSTED} as it starts. No meter or tag is made per call.
 *
 * <p>Thread-safe.
 */
final class GrpcCallOutcomes implements ServerInterceptor {

  private final GrpcServerStats stats;
  /** The JFR events, or {@code null} where they are off. */
  private final GrpcJfrEvents events;

  GrpcCallOutcomes(GrpcServerStats stats, GrpcJfrEvents events) {
    this.stats = stats;
    this.events = events;
  }

  @Override
  public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
      ServerCallHandler<Q, R> next) {
    MethodDescriptor<Q, R> method = call.getMethodDescriptor();
    if (SpillwayControlService.SERVICE_NAME.equals(method.getServiceName())) {
      return next.startCall(call, headers); // passed through unadmitted, as Spillway does
    }
    CountedCall<Q, R> counted = new CountedCall<>(call, headers,
        stats.method(method.getFullMethodName()), Context.current());
    ServerCall.Listener<Q> listener;
    try {
      listener = next.startCall(counted, headers);
    } catch (RuntimeException | Error e) {
      counted.startFailed(); // Spillway ends an admitted call's permit as failed and rethrows
      throw e;
    }
    if (!counted.started()) {
      return listener; // refused: closed already, nothing more comes
    }
    return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(listener) {
      @Override
      public void onCancel() {
        counted.cancelled();
        super.onCancel();
      }
    };
  }

  /** A call being counted; its end is counted once, whichever of close and cancel comes first. */
  private final class CountedCall<Q, R> extends ForwardingServerCall.SimpleForwardingServerCall<Q, R> {
    private static final VarHandle ENDED;

    static {
      try {
        ENDED = MethodHandles.lookup().findVarHandle(CountedCall.class, "ended", int.class);
      } catch (ReflectiveOperationException e) {
        throw new ExceptionInInitializerError(e);
      }
    }

    private final Metadata headers;
    private final GateStats method;
    private final Context context;
    /** While {@code interceptCall} starts the call: when Spillway refuses. */
    private volatile boolean starting = true;
    /** Set by a refusal, which closes the call on the thread that starts it. */
    private boolean refused;
    @SuppressWarnings("unused") // through ENDED
    private volatile int ended;

    CountedCall(ServerCall<Q, R> delegate, Metadata headers, GateStats method, Context context) {
      super(delegate);
      this.headers = headers;
      this.method = method;
      this.context = context;
    }

    @Override
    public void close(io.grpc.Status status, Metadata trailers) {
      if (events != null) {
        events.report(status, trailers, headers);
      }
      Status refusal = starting ? refusal(status, trailers) : null;
      if (refusal != null) {
        refused = true;
        if (ENDED.compareAndSet(this, 0, 1)) {
          method.onAdmission(refusal);
          method.onCompletion(Outcome.DROPPED);
        }
      } else {
        end(context.isCancelled() ? cancelledOutcome() : outcomeOf(status));
      }
      super.close(status, trailers);
    }

    /** Spillway has started the call; whether it was admitted (counted so here). */
    boolean started() {
      starting = false;
      if (refused) {
        return false;
      }
      method.onAdmission(Status.OK);
      return true;
    }

    void startFailed() {
      starting = false;
      if (!refused) {
        method.onAdmission(Status.OK);
        end(Outcome.FAILED);
      }
    }

    void cancelled() {
      end(cancelledOutcome());
    }

    private void end(Outcome outcome) {
      if (ENDED.compareAndSet(this, 0, 1)) {
        method.onCompletion(outcome);
      }
    }

    /** How a call its client left ends: timed out past its deadline, else failed. */
    private Outcome cancelledOutcome() {
      Deadline deadline = context.getDeadline();
      return deadline != null && deadline.isExpired() ? Outcome.TIMED_OUT : Outcome.FAILED;
    }
  }

  /** The reason Spillway refused a call it closes so, or {@code null} if it did not refuse it. */
  private static Status refusal(io.grpc.Status status, Metadata trailers) {
    if (status.getCode() != io.grpc.Status.Code.RESOURCE_EXHAUSTED
        || status.getCause() instanceof BudgetExceededException) {
      return null; // an admitted call: a budget abort, or its handler's own answer
    }
    String code = trailers.get(SpillwayMetadata.STATUS);
    if (code == null) {
      return null;
    }
    try {
      Status s = Status.fromCode(Integer.parseInt(code));
      return s.isShed() ? s : null;
    } catch (IllegalArgumentException malformed) {
      return null;
    }
  }

  private static Outcome outcomeOf(io.grpc.Status status) {
    if (status.isOk()) {
      return Outcome.SUCCESS;
    }
    if (status.getCause() instanceof BudgetExceededException) {
      return Outcome.ABORTED;
    }
    return status.getCode() == io.grpc.Status.Code.DEADLINE_EXCEEDED ? Outcome.TIMED_OUT
        : Outcome.FAILED;
  }
}
