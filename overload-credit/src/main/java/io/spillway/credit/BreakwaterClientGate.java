package io.spillway.credit;

import io.spillway.api.ClientEnvironment;
import io.spillway.api.ClientGate;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServiceTimeTracker;
import io.spillway.api.TimestampedQueue;
import java.util.function.Consumer;

/**
 * Breakwater's client for one session (breakwater-osdi20 §3.3): requests wait in a queue until
 * the session has a credit, and expire if they wait longer than the client queue timeout.
 *
 * <ul>
 *   <li>The first request registers the session and carries its own credit.
 *   <li>Each request sent piggybacks the demand: requests still queued behind it (§3.2.2).
 *   <li>Responses and explicit credit messages change the window by their signed delta; a
 *       negative delta revokes unused credits, and when none are unused nothing happens beyond the
 *       window shrinking (§3.3: "if a client has already consumed all of its credits, no action is
 *       taken"). The window is the sum of the deltas received, never clamped: responses answered
 *       on different server threads (or cores) can arrive in another order than the server
 *       computed their deltas in, so a revocation may arrive before the grant it follows and take
 *       the window below zero for a moment. Clamping it at zero there would drop part of the
 *       revocation for good and leave the client one or more credits above the server's ledger,
 *       and the server refuses requests beyond its ledger ({@link BreakwaterServerGate}).
 *   <li>Beyond the paper, a message that carries the window itself with a sequence number
 *       ({@link ResponseMetadata#creditSeq()}) sets the window to it if it is newer than the last
 *       such message applied, and changes nothing if it is older: its change is already in the
 *       window held. The two ledgers then agree after every message whatever was lost or
 *       reordered before it. Deltas alone drift for good once one is lost: a caller that gives up
 *       on a call after the server answered it never reads the answer's delta, and a client whose
 *       count of a window the server holds open has drifted to nothing waits for an explicit
 *       credit the server never sends.
 *   <li>So a request that ends unanswered ({@link #onUnanswered}) leaves the window in doubt; if
 *       the session then has queued requests and nothing in flight that could bring a message,
 *       and its window lets none go, the gate asks the server once, as a demand report, to
 *       restate the window ({@link BreakwaterServerGate#onDemand}), and again each time a request
 *       expires while it is still stalled so (the ask or its answer may be lost). The doubt ends only with a
 *       message after that ask: a message that arrives earlier may have been stamped before the
 *       lost one (answers on different server threads arrive out of order) and leave the window
 *       as wrong as before, whereas the server answers an ask only with nothing of the session's
 *       pending, after every message it lost. A window in doubt that still lets requests go needs
 *       no asking: their answers carry the server's window.
 *   <li>With demand synchronisation (the ablation without speculation) a client that holds queued
 *       requests and no credit reports its demand once in an explicit message and waits for the
 *       server's answer, as the authors' client does.
 *   <li>Beyond the paper, with a {@linkplain BreakwaterConfig#requestBudgetNanos request budget},
 *       each request sent carries what is left of the budget after its wait in this queue
 *       ({@link RequestMetadata#budgetNanos()}), so the server can abort it unrun if its queues
 *       take the rest; and the queue's timeout is at most the budget, so no request is sent with
 *       none left. The client queue's timeout bounds one queue and the AQM threshold another;
 *       only a budget that travels bounds their sum, which is what an end-to-end SLO is about
 *       (docs/design.md, "Request budget").
 *   <li>With an {@linkplain BreakwaterConfig#adaptiveClientTimeout adaptive timeout}, a request
 *       expires once it has queued longer than the SLO minus the p99 of the time from sending a
 *       request to its successful response (a {@link ServiceTimeTracker} over those times, shared
 *       by the sessions of one scheme instance) and minus that estimate's step ({@link
 *       ServiceTimeTracker#stepNanos()}, a sixteenth of it), within [SLO/10, the configured
 *       timeout]; until a response has been seen, the configured timeout. The step is how far the
 *       estimate moves on one sample, the width it dithers in around the true p99: under overload
 *       most requests served have queued for about the whole timeout, so a timeout of exactly
 *       SLO − p99 puts the p99 of the sum at the SLO, and over it whenever the estimate dithers
 *       low. Of the ten steady-overload cells at 10 and 100 clients whose p99 was 1.00–1.02 ×
 *       the SLO in docs/results/robustness.md's matrix, nine are within it with the margin
 *       (0.96–0.99 ×).
 *   <li>With an {@linkplain BreakwaterConfig#adaptiveRequestBudget adaptive request budget} (and
 *       no fixed one), the budget a request starts with is the SLO less the p99 of what it needs
 *       beyond the queues, and less the estimate's step; what is left after its wait in this queue
 *       rides in its header, as a fixed budget's does. The client measures send-to-response times
 *       (the tracker above), which include the server's queue; the pool steers that queue to d_t
 *       (§3.2.1), so their p99 less d_t estimates the tail of the service time and network. Under
 *       overload that is what the server's queue holds; at light load the queue is short, the
 *       estimate low by up to d_t and the budget that much looser, so it then aborts only requests
 *       a stall held far past their share. At least a tenth of the SLO, as the timeout. Why a
 *       budget: the timeout bounds the client queue and AQM (2·d_t) the server's, and the two
 *       together with a service time's tail exceed the SLO (docs/results/harness.md: exponential
 *       25 µs service, SLO 750 µs, 2× demand, p99 910 µs in the simulator without it). Why d_t
 *       and not more of the p99 (1.5·d_t, or AQM's 2·d_t): a looser budget lets the server's
 *       queue run longer, which lengthens the p99 the timeout above subtracts, so more requests
 *       expire in this queue; on sockets that cost goodput under overload, and 2·d_t let the p99
 *       past the SLO where the service time is heavy-tailed (docs/results/harness.md, "Spillway's
 *       default on sockets"; docs/results/robustness.md, the budget's variants).
 * </ul>
 *
 * <p>Not thread-safe: confined to the session's thread, per {@link ClientGate}.
 *
 * @param <R> the driver's request type
 */
public final class BreakwaterClientGate<R> implements ClientGate<R> {

  private final long sessionId;
  private final long queueTimeoutNanos;
  private final boolean demandSync;
  private final long requestBudgetNanos;
  private final long sloNanos;
  private final long targetDelayNanos;
  /** Whether requests carry {@link #adaptiveBudgetNanos}: adaptive and no fixed budget. */
  private final boolean adaptiveBudget;
  /** p99 of send-to-response times, or {@code null} for the fixed timeout. */
  private final ServiceTimeTracker pathLatency;
  private final TimestampedQueue<R> queue = new TimestampedQueue<>();
  private boolean registered;
  /** The sum of the deltas received: the server's window once every message has arrived. */
  private int window;
  private int inFlight;
  private int demandReport = -1;
  private boolean awaitingCredit;
  /** The newest stamped credit message applied, 0 if none ({@link ResponseMetadata#creditSeq()}). */
  private long creditSeq;
  /** A request ended unanswered since the last stamped message: the window may be wrong. */
  private boolean inDoubt;
  /** A restatement was asked for while {@link #inDoubt} and has not come. */
  private boolean restateAsked;

  /**
   * A client gate for the session in {@code environment}. Users get one from the scheme's {@code
   * newClientGate}.
   */
  BreakwaterClientGate(BreakwaterConfig config, ClientEnvironment environment) {
    this(config, environment, new ServiceTimeTracker());
  }

  /** As above, sharing {@code pathLatency} with the scheme's other sessions. */
  BreakwaterClientGate(BreakwaterConfig config, ClientEnvironment environment,
      ServiceTimeTracker pathLatency) {
    this.sessionId = environment.sessionId();
    this.sloNanos = environment.sloNanos();
    this.pathLatency = config.adaptiveClientTimeout() ? pathLatency : null;
    this.queueTimeoutNanos = Math.min(Math.min(config.clientQueueTimeoutNanos(), environment.sloNanos()),
        config.requestBudgetNanos());
    this.demandSync = !config.demandSpeculation();
    this.requestBudgetNanos = config.requestBudgetNanos();
    this.targetDelayNanos = config.targetDelayNanos();
    this.adaptiveBudget = config.adaptiveRequestBudget() && !config.hasRequestBudget();
  }

  @Override
  public boolean offer(R request, long arrivalNanos, long nowNanos) {
    queue.offer(request, ClientGate.queuedSince(arrivalNanos, nowNanos));
    if (demandSync && registered && inFlight >= window && !awaitingCredit) {
      demandReport = queue.size();
      awaitingCredit = true;
    }
    askForRestatement();
    return true;
  }

  @Override
  public R poll(long nowNanos, RequestMetadata header) {
    if (queue.isEmpty()) {
      return null;
    }
    int flags = 0;
    if (!registered) {
      registered = true;
      window = 1;
      flags = RequestMetadata.FLAG_REGISTER;
    } else if (inFlight >= window) {
      return null;
    }
    long queuedSince = queue.oldestEnqueueNanos();
    R request = queue.poll();
    inFlight++;
    header.sessionId(sessionId).demand(queue.size()).flags(flags);
    long budget = adaptiveBudget ? adaptiveBudgetNanos() : requestBudgetNanos;
    if (budget != Long.MAX_VALUE) { // NO_REQUEST_BUDGET, or no estimate yet
      header.budgetNanos(Math.max(0, budget - Math.max(0, nowNanos - queuedSince)));
    }
    return request;
  }

  @Override
  public void onResponse(ResponseMetadata response, long sentAtNanos, long nowNanos) {
    if (inFlight > 0) {
      inFlight--;
    }
    if (pathLatency != null && response.status() == io.spillway.api.Status.OK) {
      pathLatency.record(Math.max(0, nowNanos - sentAtNanos));
    }
    applyCredit(response);
  }

  @Override
  public void onUnanswered(ResponseMetadata response, long sentAtNanos, long nowNanos) {
    if (inFlight > 0) {
      inFlight--;
    }
    inDoubt = true;
    askForRestatement();
  }

  @Override
  public void onControl(ResponseMetadata control, long nowNanos) {
    applyCredit(control);
  }

  private void applyCredit(ResponseMetadata message) {
    long seq = message.creditSeq();
    if (seq == 0) {
      window += message.creditDelta();
    } else if (ResponseMetadata.isNewerCredit(seq, creditSeq)) {
      creditSeq = seq;
      window = message.creditWindow();
      if (restateAsked) {
        // Asked with nothing in flight, so the server's answer (or, for a request it still held,
        // that request's credit on the control channel) was stamped after every lost message:
        // this one, or one close behind it, restates the window.
        inDoubt = false;
        restateAsked = false;
      }
    } else {
      return; // older than the window held, which already counts its change
    }
    awaitingCredit = false;
    if (demandSync && inFlight >= window && !queue.isEmpty()) {
      demandReport = queue.size();
      awaitingCredit = true;
    }
    askForRestatement();
  }

  /**
   * Asks the server to restate the window (a demand report) when it is in doubt, requests wait,
   * none may go and none is in flight to bring a message; once until the next message arrives.
   */
  private void askForRestatement() {
    if (inDoubt && !restateAsked && registered && inFlight == 0 && inFlight >= window
        && !queue.isEmpty()) {
      demandReport = queue.size();
      restateAsked = true;
    }
  }

  @Override
  public int expire(long nowNanos, Consumer<? super R> expired) {
    int removed = queue.pollOlderThan(nowNanos, queueTimeoutNanos(), expired);
    if (removed > 0 && inDoubt && restateAsked) {
      // Still stalled a queue timeout after asking: the ask or its answer was lost (a control
      // call that failed, an answer the server sent on a connection its client had left). Ask
      // again, at most once a queue timeout, only while in doubt.
      restateAsked = false;
    }
    askForRestatement();
    if (removed > 0 && demandSync && registered && inFlight >= window) {
      // The demand the server knows is now stale; tell it (the authors' client does the same).
      demandReport = queue.size();
      awaitingCredit = !queue.isEmpty();
    }
    return removed;
  }

  @Override
  public boolean remove(R request, long nowNanos) {
    if (!queue.removeFirst(queued -> queued == request)) {
      return false;
    }
    if (demandSync && registered && inFlight >= window) {
      demandReport = queue.size(); // stale now, as after an expiry
      awaitingCredit = !queue.isEmpty();
    }
    return true;
  }

  @Override
  public long nextWakeupNanos() {
    return queue.oldestEnqueueNanos() + queueTimeoutNanos();
  }

  /**
   * The queueing budget a request starts with now under {@link
   * BreakwaterConfig#adaptiveRequestBudget}, or {@link Long#MAX_VALUE} (none) until a response has
   * been seen: see the class comment.
   */
  public long adaptiveBudgetNanos() {
    long p99 = pathLatency.p99Nanos();
    if (p99 == 0) {
      return Long.MAX_VALUE;
    }
    long beyondQueues = Math.max(0, p99 - targetDelayNanos);
    return Math.max(sloNanos / 10, sloNanos - beyondQueues - pathLatency.stepNanos());
  }

  /**
   * How long a request may queue here now: see the class comment. The configured timeout (and a
   * request budget, if smaller) bounds it before the floor of a tenth of the SLO does, so that no
   * request waits here past its budget and is sent with none left.
   */
  public long queueTimeoutNanos() {
    if (pathLatency == null) {
      return queueTimeoutNanos;
    }
    long p99 = pathLatency.p99Nanos();
    if (p99 == 0) {
      return queueTimeoutNanos;
    }
    return Math.min(queueTimeoutNanos, Math.max(sloNanos / QueueShare.CLIENT_SHARE_DIVISOR,
        sloNanos - p99 - pathLatency.stepNanos()));
  }

  @Override
  public int queued() {
    return queue.size();
  }

  @Override
  public int takeDemandReport() {
    int report = demandReport;
    demandReport = -1;
    return report;
  }

  @Override
  public boolean isRegistered() {
    return registered;
  }

  /**
   * The session's credit window as this client knows it (in flight plus unused); below zero for
   * a moment where a revocation arrived before a grant the server made earlier (see the class
   * comment).
   */
  public int window() {
    return window;
  }

  /** Requests sent and not yet answered. */
  public int inFlight() {
    return inFlight;
  }
}
