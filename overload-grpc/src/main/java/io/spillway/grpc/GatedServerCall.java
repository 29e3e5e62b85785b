package io.spillway.grpc;

import io.grpc.Context;
import io.grpc.Deadline;
import io.grpc.ForwardingServerCall;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.Status;
import io.spillway.api.BudgetExceededException;
import io.spillway.api.Outcome;
import io.spillway.api.RequestBudget;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerPermit;
import java.lang.System.Logger.Level;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * An admitted call: completes its permit exactly once, whichever of close, cancel or a failing
 * callback comes first, and runs the handler's callbacks in the call's {@link Context} and budget
 * scope. See {@link SpillwayServerInterceptor} for the rules.
 *
 * <p>gRPC serialises a call's callbacks, but the application may close the call from another
 * thread while the transport cancels it: the completion is therefore guarded by a CAS.
 */
final class GatedServerCall<ReqT, RespT>
    extends ForwardingServerCall.SimpleForwardingServerCall<ReqT, RespT> {

  private static final VarHandle FINISHED;

  static {
    try {
      FINISHED = MethodHandles.lookup().findVarHandle(GatedServerCall.class, "finished", int.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private final ServerPermit permit;
  private final long sessionId;
  private final Context context;
  private final RequestBudget budget;
  /** The budget its deadline set; spent before the handler runs, the call is aborted unrun. */
  private final long deadlineBudgetNanos;
  private boolean abortedUnrun; // callbacks are serialised
  private final long admittedAt;
  private final long ticket;
  /** Where the call's ticket lives once it can change (a unary call measured by message); or null. */
  private final MessageArrival arrival;
  private boolean handlerReached; // callbacks are serialised
  private boolean permitStarted; // callbacks are serialised
  /** Whether the method's handler runs once the client has half-closed (one request message). */
  private final boolean runsAtHalfClose;
  private final SpillwayServerInterceptor owner;
  @SuppressWarnings("unused") // through FINISHED
  private volatile int finished;
  private volatile boolean closeCalled;
  private boolean budgetCharged; // callbacks are serialised
  /** When the handler first ran (read only with a budget, whose charge reads the clock anyway). */
  private volatile long startedAt;
  /** Its budget's charges when the handler got the call: later ones are waits inside it. */
  private volatile long chargedAtStart;
  private volatile boolean started;

  GatedServerCall(ServerCall<ReqT, RespT> delegate, ServerPermit permit, long sessionId,
      Context context, RequestBudget budget, long deadlineBudgetNanos, long admittedAt, long ticket,
      MessageArrival arrival, SpillwayServerInterceptor owner) {
    super(delegate);
    this.permit = permit;
    this.sessionId = sessionId;
    this.context = context;
    this.budget = budget;
    this.deadlineBudgetNanos = deadlineBudgetNanos;
    this.admittedAt = admittedAt;
    this.ticket = ticket;
    this.arrival = arrival;
    this.owner = owner;
    this.runsAtHalfClose = delegate.getMethodDescriptor().getType().clientSendsOneMessage();
  }

  /**
   * Ends the permit with the call's status and writes its fields into the trailers. A call whose
   * client has gone (cancelled, or past its deadline: gRPC cancels the call's context at once,
   * while the handler's close may still be on its way) never gets those trailers, so its permit
   * ends as a failure and a credit delta goes on the session's credit stream instead, as for a
   * cancel that comes first ({@link Listener#onCancel}).
   */
  @Override
  public void close(Status status, Metadata trailers) {
    closeCalled = true;
    long now = owner.ticker().read();
    boolean clientGone = context.isCancelled();
    Outcome handlers = outcomeOf(status);
    Outcome outcome = clientGone ? cancelledOutcome() : handlers;
    ResponseMetadata response = finish(outcome, now);
    if (started && (handlers == Outcome.SUCCESS || handlers == Outcome.FAILED)) {
      // The handler's own end gives its service time, also when its client left first. A cancel
      // gives none: it ends the permit while the handler may still be working, and a sample cut
      // short there would lower the p99 that deadlines are judged against.
      // Less its waits in budgeted locks, semaphores and pools: queueing, which the p99 of service
      // times (protego-nsdi23 §3.2) must not hold, or every contended lock would shrink later
      // calls' budgets and refuse them for the wait it already charges.
      long blocked = budget.chargedNanos() - chargedAtStart;
      owner.serviceTimes().record(Math.max(0, now - startedAt - blocked), now);
    }
    if (response != null && clientGone) {
      owner.sendOrphanCredit(sessionId, response);
    } else if (response != null) {
      // The trailers may be another call's: a handler that passes a callee's failure on with
      // onError(e) hands over the callee's trailers, whose Spillway fields are the session this
      // server holds with the callee. Read by this call's client they would move its own window
      // (overload-grpc/README.md, "Metadata": response fields are the answering server's).
      SpillwayMetadata.removeResponse(trailers);
      owner.writeResponse(response, trailers);
    }
    if (outcome == Outcome.ABORTED) {
      owner.addPushback(trailers, now);
      if (status.getCode() == Status.Code.UNKNOWN) {
        // A budget abort that an exception-mapping interceptor between the handler and this one
        // closed as an unmapped exception (Status.fromThrowable, as Spring gRPC's does once an
        // application declares a GrpcExceptionHandler): answered as this interceptor answers one,
        // a fast reject the client backs off from, not a server error.
        status = Status.RESOURCE_EXHAUSTED.withDescription("spillway: rejected (budget)")
            .withCause(status.getCause());
      }
    }
    super.close(status, trailers);
  }

  /**
   * Completes the permit if nobody has yet; returns the response fields to send, or {@code null}
   * if the permit was already completed (by another path, or by the handler itself).
   */
  ResponseMetadata finish(Outcome outcome, long now) {
    if (!FINISHED.compareAndSet(this, 0, 1) || permit.isCompleted()) {
      return null;
    }
    owner.handlerStarted(endTicket()); // a call that never reached its handler waits no more
    ResponseMetadata response = new ResponseMetadata().sessionId(sessionId);
    try {
      permit.complete(outcome, now, response);
    } catch (IllegalStateException completedByHandlerMeanwhile) {
      return null;
    } catch (RuntimeException gateFailed) {
      // The gate's completion (or the metrics it reports to) threw after the permit was marked
      // complete: the call must still close, or its client waits for an answer that never comes
      // when the application closes it from a thread gRPC does not watch.
      SpillwayServerInterceptor.LOG.log(Level.WARNING, getMethodDescriptor().getFullMethodName()
          + ": the gate failed completing the call's permit", gateFailed);
    }
    return response;
  }

  /** How a call its client left ends: timed out past its deadline, else failed. */
  private Outcome cancelledOutcome() {
    Deadline deadline = context.getDeadline();
    return deadline != null && deadline.isExpired() ? Outcome.TIMED_OUT : Outcome.FAILED;
  }

  private static Outcome outcomeOf(Status status) {
    if (status.isOk()) {
      return Outcome.SUCCESS;
    }
    if (status.getCause() instanceof BudgetExceededException) {
      return Outcome.ABORTED;
    }
    return status.getCode() == Status.Code.DEADLINE_EXCEEDED ? Outcome.TIMED_OUT : Outcome.FAILED;
  }

  ServerCall.Listener<ReqT> listener(ServerCall.Listener<ReqT> delegate) {
    return new Listener(delegate);
  }

  /** Whether the method's handler runs as the call starts (client-streaming and bidi methods). */
  boolean handlerRunsAtStart() {
    return !runsAtHalfClose;
  }

  /**
   * The handler has the call now: its wait for a worker ends here, and with it the wait its
   * budget is charged for. A client-streaming or bidi handler runs as the call starts, whether or
   * not the client ever sends a message; a unary or server-streaming one at its request message
   * and half-close ({@link Listener#dispatch}). Returns {@code false} if the budget its deadline
   * set was spent waiting: the call is then aborted unrun.
   */
  private boolean reachHandler(long now) {
    handlerReached = true;
    owner.handlerStarted(endTicket());
    if (budget != null && !budgetCharged) {
      // Its wait for the server's executor, every crossing of it, is queueing: charged once, as
      // the handler gets the request.
      budgetCharged = true;
      long waited = Math.max(0, now - admittedAt);
      if (waited >= deadlineBudgetNanos) {
        abortedUnrun = true;
        return false;
      }
      budget.charge(waited);
      chargedAtStart = budget.chargedNanos();
      startedAt = now;
      started = true;
    }
    return true;
  }

  /**
   * Starts a client-streaming or bidi call's permit as its handler starts ({@link
   * #reachHandler}); returns {@code false}, with the call closed, if it was aborted unrun.
   */
  boolean startStreaming() {
    long now = owner.ticker().read();
    permitStarted = true;
    permit.started(now);
    if (!reachHandler(now)) {
      failed(new BudgetExceededException(Math.max(0, now - admittedAt), deadlineBudgetNanos));
      return false;
    }
    return true;
  }

  /** The call's ticket in the unstarted set, for the last time (see {@link MessageArrival}). */
  private long endTicket() {
    return arrival != null ? arrival.end() : ticket;
  }

  /** A callback threw: end the call here, so the permit's fields still reach the client. */
  private void failed(Throwable t) {
    if (closeCalled) {
      rethrow(t); // the handler closed the call and then threw: gRPC deals with it as usual
      return;
    }
    Status status;
    Metadata trailers;
    if (t instanceof BudgetExceededException) {
      status = Status.RESOURCE_EXHAUSTED.withDescription("spillway: rejected (budget)").withCause(t);
      trailers = new Metadata();
    } else {
      status = Status.fromThrowable(t);
      trailers = Status.trailersFromThrowable(t);
      if (trailers == null) {
        trailers = new Metadata();
      }
      if (status.getCode() == Status.Code.UNKNOWN) {
        if (status.getDescription() == null) {
          status = status.withDescription("Application error processing RPC");
        }
        SpillwayServerInterceptor.LOG.log(Level.WARNING,
            getMethodDescriptor().getFullMethodName() + ": handler failed", t);
      }
    }
    try {
      close(status, trailers);
    } catch (RuntimeException closing) { // cancelled meanwhile: the permit is complete anyway
      t.addSuppressed(closing);
      rethrow(t);
    }
    if (t instanceof Error e) {
      throw e;
    }
  }

  @SuppressWarnings("unchecked")
  private static <T extends Throwable> void rethrow(Throwable t) throws T {
    throw (T) t;
  }

  private static final int MESSAGE = 0;
  private static final int HALF_CLOSE = 1;
  private static final int READY = 2;
  private static final int COMPLETE = 3;
  private static final int CANCEL = 4;

  /** Runs every callback in the call's context (and budget scope), catching what it throws. */
  private final class Listener extends ServerCall.Listener<ReqT> {
    private final ServerCall.Listener<ReqT> delegate;

    Listener(ServerCall.Listener<ReqT> delegate) {
      this.delegate = delegate;
    }

    @Override
    public void onMessage(ReqT message) {
      dispatch(MESSAGE, message);
    }

    @Override
    public void onHalfClose() {
      dispatch(HALF_CLOSE, null);
    }

    @Override
    public void onReady() {
      dispatch(READY, null);
    }

    @Override
    public void onComplete() {
      dispatch(COMPLETE, null);
    }

    @Override
    public void onCancel() {
      ResponseMetadata response = finish(cancelledOutcome(), owner.ticker().read());
      if (response != null) {
        owner.sendOrphanCredit(sessionId, response);
      }
      dispatch(CANCEL, null);
    }

    private void dispatch(int event, ReqT message) {
      if (!permitStarted && event == HALF_CLOSE) {
        // A unary or server-streaming handler runs at half-close, one more crossing of the
        // workers' queue after its message: until then the call still waits for a worker.
        permitStarted = true;
        permit.started(owner.ticker().read());
      }
      if (abortedUnrun && event != CANCEL && event != COMPLETE) {
        return; // closed before its handler saw it: nothing of it goes to the handler
      }
      Context previous = context.attach();
      try {
        if (!handlerReached && (event == MESSAGE || event == HALF_CLOSE)) {
          long now = budget == null ? 0 : owner.ticker().read(); // only a budget is charged
          if (!reachHandler(now)) {
            throw new BudgetExceededException(Math.max(0, now - admittedAt), deadlineBudgetNanos);
          }
        }
        if (budget == null) {
          deliver(event, message);
        } else {
          ScopedValue.where(RequestBudget.CURRENT, budget).run(() -> deliver(event, message));
        }
      } catch (RuntimeException | Error t) {
        if (event == CANCEL || event == COMPLETE) {
          throw t; // the call is over: nothing left to answer
        }
        failed(t);
      } finally {
        context.detach(previous);
      }
    }

    private void deliver(int event, ReqT message) {
      switch (event) {
        case MESSAGE -> delegate.onMessage(message);
        case HALF_CLOSE -> delegate.onHalfClose();
        case READY -> delegate.onReady();
        case COMPLETE -> delegate.onComplete();
        default -> delegate.onCancel();
      }
    }
  }
}
