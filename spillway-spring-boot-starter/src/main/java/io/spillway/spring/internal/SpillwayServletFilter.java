package io.spillway.spring.internal;

import io.spillway.api.BudgetExceededException;
import io.spillway.api.Outcome;
import io.spillway.api.RequestBudget;
import io.spillway.api.ResponseMetadata;
import io.spillway.spring.SpillwayHttpGate;
import io.spillway.spring.SpillwayHttpGate.Admission;
import io.spillway.spring.SpillwayHttpHeaders;
import io.spillway.spring.SpillwayProperties;
import jakarta.servlet.AsyncEvent;
import jakarta.servlet.AsyncListener;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.InetSocketAddress;

/**
 * Spillway in front of Spring MVC: decides on each request before any other filter or the
 * dispatcher sees it, answers a reject at once (the configured status, {@code 429} by default,
 * with {@code Retry-After}; {@link SpillwayProperties#getRejectStatus}), binds an
 * admitted request's budget to {@link RequestBudget#CURRENT} around the rest of the chain, and
 * ends its permit exactly once: when the chain returns, or, for an asynchronous request, when the
 * container reports its end. A {@link io.spillway.api.BudgetExceededException} from the handler
 * (a {@code BudgetedLock} that would have outlasted the budget) becomes a fast reject of that
 * status if the response is not committed yet, and the permit ends as aborted.
 *
 * <p>On a platform thread an admitted request then takes one of the {@link RunSlots} (waiting for
 * it in arrival order; refused at once, as a budget abort, if the slots' queue is already longer
 * than its budget), and the wait is charged to its budget. Where the kernel's run queue is measured
 * ({@link RunQueueDelay}), the filter samples a request's CPU time and its wait for the CPU around
 * the rest of the chain, on the thread that runs it, and the slots size themselves from that.
 *
 * <p>A request from a Spillway session ({@code Spillway-Session}) gets its response fields, the
 * credit delta among them, in its response headers: its permit ends as the response is about to
 * be committed (the handler asked for the body's stream, flushed, or sent an error or a redirect)
 * or, if nothing committed it, when the chain returns. Its credit stream ({@value
 * HttpCreditStreams#PATH}) is served here too ({@link ServletCreditStream}), under the context
 * path, which the answers of a context other than the root name ({@link
 * SpillwayHttpHeaders#CREDITS}).
 *
 * <p>Only the request dispatch is decided on; error and async re-dispatches pass through, except
 * that a budget abort an async re-dispatch throws is a fast reject too, and a session's request
 * whose async re-dispatch returns without committing its answer gets its fields in the headers
 * then (an empty body is committed only as the request completes).
 * Thread-safe.
 */
public final class SpillwayServletFilter implements Filter {

  /** The request attribute that keeps an admitted asynchronous request for its re-dispatch. */
  private static final String SERVED = SpillwayServletFilter.class.getName() + ".served";
  /** Set on a request this filter admitted, for {@link BudgetAbortExceptionResolver}. */
  static final String ADMITTED = SpillwayServletFilter.class.getName() + ".admitted";

  private final SpillwayHttpGate gate;
  private final RunQueueDelay runQueue;
  private final RunSlots slots;
  private final HttpCreditStreams credits;
  private final int rejectStatus;

  /**
   * @param runQueue the run-queue stage to sample, or {@code null} where it is not measured
   * @param slots the run slots of admitted requests on platform threads, or {@code null} for none
   * @param credits where the credit streams of Spillway sessions are kept ({@value
   *     HttpCreditStreams#PATH} is served from it), or {@code null} to serve no such path
   * @param rejectStatus the status of a refused or aborted request (429 or 503)
   */
  public SpillwayServletFilter(SpillwayHttpGate gate, RunQueueDelay runQueue, RunSlots slots,
      HttpCreditStreams credits, int rejectStatus) {
    if (!SpillwayProperties.REJECT_STATUSES.contains(rejectStatus)) {
      throw new IllegalArgumentException("rejectStatus must be 429 or 503, not " + rejectStatus);
    }
    this.gate = gate;
    this.runQueue = runQueue;
    this.slots = slots;
    this.credits = credits;
    this.rejectStatus = rejectStatus;
  }

  @Override
  public void doFilter(ServletRequest req, ServletResponse res, FilterChain chain)
      throws IOException, ServletException {
    if (!(req instanceof HttpServletRequest request) || !(res instanceof HttpServletResponse response)) {
      chain.doFilter(req, res);
      return;
    }
    if (request.getDispatcherType() == DispatcherType.ASYNC
        && request.getAttribute(SERVED) instanceof Served served) {
      redispatched(request, response, chain, served);
      return;
    }
    if (request.getDispatcherType() != DispatcherType.REQUEST) {
      chain.doFilter(req, res);
      return;
    }
    String uri = request.getRequestURI();
    String path = uri.substring(Math.min(uri.length(), request.getContextPath().length()));
    if (credits != null && HttpCreditStreams.PATH.equals(path)) {
      ServletCreditStream.serve(request, response, credits, gate);
      return;
    }
    SpillwayHttpGate.Endpoint endpoint = gate.endpointFor(path);
    if (endpoint == null) {
      chain.doFilter(req, res);
      return;
    }
    String contextPath = request.getContextPath();
    if (credits != null && !contextPath.isEmpty()) {
      // clients look for the stream at the origin's path first: name the one it is at
      response.setHeader(SpillwayHttpHeaders.CREDITS, contextPath + HttpCreditStreams.PATH);
    }
    Admission admission = gate.admit(endpoint, request::getHeader, connectionOf(request));
    if (!admission.isAdmitted()) {
      response.setStatus(rejectStatus);
      admission.writeRejectHeaders(response::setHeader);
      return;
    }
    RequestBudget budget = admission.budget();
    boolean slotted = slots != null && !Thread.currentThread().isVirtual();
    long slotWait = 0;
    if (slotted) {
      long waited = slots.acquire(admission.decidedAtNanos(),
          budget == null ? Long.MAX_VALUE : budget.remainingNanos());
      if (waited < 0) {
        long now = gate.ticker().read();
        response.setStatus(rejectStatus);
        admission.writeAbortHeaders(admission.end(rejectStatus,
            new BudgetExceededException(slots.queueingDelayNanos(now), budget.remainingNanos())),
            response::setHeader);
        return;
      }
      if (budget != null) {
        budget.charge(waited);
      }
      slotWait = waited;
    }
    // past the run slots: what it waits for now is the CPU, locks, I/O
    admission.started(admission.decidedAtNanos() + slotWait);
    request.setAttribute(ADMITTED, Boolean.TRUE);
    Served served = new Served(admission, response, budget, slotted, slotWait);
    // An asynchronous answer keeps this response: Spring MVC starts async processing with the
    // request and response its chain was given, so the async dispatch writes through the wrapper.
    HttpServletResponse out = admission.hasSession() ? new CreditCarryingResponse(response, served)
        : response;
    Throwable failure = null;
    try {
      if (budget == null) {
        chain.doFilter(request, out);
      } else {
        ScopedValue.where(RequestBudget.CURRENT, budget).call(() -> {
          chain.doFilter(request, out);
          return null;
        });
      }
    } catch (IOException | ServletException | RuntimeException | Error e) {
      failure = e;
    } catch (Exception e) { // ScopedValue.call's checked type; the chain throws none other
      failure = new ServletException(e);
    } finally {
      boolean async = failure == null && request.isAsyncStarted();
      served.account(async);
      if (slotted) {
        slots.release();
      }
      if (async) {
        request.getAsyncContext().addListener(new End(served));
        request.setAttribute(SERVED, served);
      } else if (answeredAsAbort(failure, admission, response)) {
        failure = null; // answered: a fast reject, not an error
      } else {
        served.end(response.getStatus(), failure);
      }
    }
    rethrow(failure);
  }

  /**
   * Answers {@code failure} as a fast reject if it is a budget abort and the response is not
   * committed yet: the reject status and the abort's fields, the admission ended. Whether it did.
   */
  private boolean answeredAsAbort(Throwable failure, Admission admission,
      HttpServletResponse response) {
    if (failure == null || SpillwayHttpGate.budgetExceeded(failure) == null || response.isCommitted()) {
      return false;
    }
    response.resetBuffer();
    response.setStatus(rejectStatus);
    admission.writeAbortHeaders(admission.end(rejectStatus, failure), response::setHeader);
    return true;
  }

  /**
   * The connection {@code request} came on, its remote address and port (unresolved: no lookup),
   * which names its origin to the gate ({@link SpillwayHttpGate#admit}); {@code null} if the
   * container gives no address.
   */
  private static InetSocketAddress connectionOf(HttpServletRequest request) {
    String address = request.getRemoteAddr();
    if (address == null) {
      return null;
    }
    int port = request.getRemotePort();
    return InetSocketAddress.createUnresolved(address, port >= 0 && port <= 0xFFFF ? port : 0);
  }

  private static void rethrow(Throwable failure) throws IOException, ServletException {
    if (failure instanceof IOException e) {
      throw e;
    } else if (failure instanceof ServletException e) {
      throw e;
    } else if (failure instanceof RuntimeException e) {
      throw e;
    } else if (failure instanceof Error e) {
      throw e;
    }
  }

  /**
   * The async re-dispatch of an admitted request: the dispatch that writes its answer. A budget
   * abort it throws (Spring MVC's resolver hands it on out of the dispatcher) is answered as a
   * fast reject, as on the request dispatch, if the response is not committed yet. A session's
   * answer that asks for no stream (an empty body) is committed only as the request completes,
   * after this dispatch, too late for the fields: they go in its headers as the dispatch returns,
   * unless it started another async cycle. Any other request's permit ends as it completes
   * ({@link End}).
   */
  private void redispatched(HttpServletRequest request, HttpServletResponse response,
      FilterChain chain, Served served) throws IOException, ServletException {
    Throwable failure = null;
    try {
      chain.doFilter(request, response);
    } catch (IOException | ServletException | RuntimeException | Error e) {
      failure = e;
    }
    boolean over = !request.isAsyncStarted();
    if (over) {
      request.removeAttribute(SERVED);
    }
    if (answeredAsAbort(failure, served.admission, response)) {
      failure = null; // answered: a fast reject, not an error
    } else if (over && served.admission.hasSession()) {
      served.end(failure != null ? HttpServletResponse.SC_INTERNAL_SERVER_ERROR
          : response.getStatus(), failure);
    }
    rethrow(failure);
  }

  /**
   * One admitted request's accounting after its handler: its CPU and run-queue sample, what it
   * queued after admission, and the end of its permit with the response fields in its headers.
   * The accounting runs once, on the thread that ran the chain (the run-queue sample is that
   * thread's); the end runs once, from whichever comes first of the response's commit ({@link
   * CreditCarryingResponse}) and the chain's return.
   */
  private final class Served implements java.util.function.IntConsumer {
    private final Admission admission;
    private final HttpServletResponse response;
    private final RequestBudget budget;
    private final boolean slotted;
    private final long slotWait;
    private final Thread thread = Thread.currentThread();
    /** What its budget had been charged when the handler started (its slot wait included). */
    private final long chargedAtStart;
    private final boolean sampled;
    private final long startedAt;
    private boolean accounted;

    Served(Admission admission, HttpServletResponse response, RequestBudget budget,
        boolean slotted, long slotWait) {
      this.admission = admission;
      this.response = response;
      this.budget = budget;
      this.slotted = slotted;
      this.slotWait = slotWait;
      this.chargedAtStart = budget == null ? 0 : budget.chargedNanos();
      this.sampled = runQueue != null && runQueue.begin();
      this.startedAt = sampled ? gate.ticker().read() : 0;
    }

    void account(boolean async) {
      if (accounted) {
        return;
      }
      accounted = true;
      // Its waits in budgeted locks, semaphores and pools since it started: queueing, not service
      // (charged in full, also past an exhausted budget).
      long blocked = budget == null ? 0 : budget.chargedNanos() - chargedAtStart;
      if (sampled) {
        long cpuWait = runQueue.end();
        if (cpuWait >= 0 && slotted && !async) {
          slots.observe(gate.ticker().read() - startedAt, blocked, runQueue.cpuNanos(), cpuWait);
        }
        // an async request's wait goes on elsewhere: not counted as this request's
        admission.queuedAfterAdmission(async || cpuWait < 0 ? -1 : slotWait + cpuWait + blocked);
      } else if (runQueue != null) {
        admission.queuedAfterAdmission(-1);
      } else if (!async) {
        admission.queuedAfterAdmission(blocked); // no run queue to read: the budgeted waits alone
      }
    }

    /** Ends the permit; a session's response fields go in the headers if they are not sent. */
    void end(int status, Throwable failure) {
      ResponseMetadata fields = admission.end(status, failure);
      if (fields != null && admission.hasSession() && !response.isCommitted()) {
        SpillwayHttpHeaders.writeResponse(fields, response::setHeader);
      }
    }

    /** The request timed out; a session's fields go in the headers if they are not sent. */
    void timedOut() {
      ResponseMetadata fields = admission.end(Outcome.TIMED_OUT);
      if (fields != null && admission.hasSession() && !response.isCommitted()) {
        SpillwayHttpHeaders.writeResponse(fields, response::setHeader);
      }
    }

    /** The response is about to be committed with {@code status}: the handler is done with it. */
    @Override
    public void accept(int status) {
      if (Thread.currentThread() == thread) {
        account(false);
      }
      end(status, null);
    }
  }

  /** Ends an asynchronous request's permit when the container reports its end. */
  private static final class End implements AsyncListener {
    private final Served served;

    End(Served served) {
      this.served = served;
    }

    @Override
    public void onComplete(AsyncEvent event) {
      int status = event.getSuppliedResponse() instanceof HttpServletResponse r ? r.getStatus() : 200;
      served.admission.end(status, null);
    }

    @Override
    public void onTimeout(AsyncEvent event) {
      // The application answers the timeout after this (Spring MVC dispatches a 503): that answer
      // is the session's, and carries the fields of the permit the timeout ends.
      served.timedOut();
    }

    @Override
    public void onError(AsyncEvent event) {
      served.admission.end(500, event.getThrowable());
    }

    @Override
    public void onStartAsync(AsyncEvent event) {
      event.getAsyncContext().addListener(this); // a new async cycle: keep listening
    }
  }
}
