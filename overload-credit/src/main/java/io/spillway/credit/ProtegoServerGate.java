package io.spillway.credit;

import io.spillway.api.Cancellable;
import io.spillway.api.Outcome;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.Scheduler;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.ServerPermit;
import io.spillway.api.Status;
import io.spillway.api.Ticker;
import java.util.concurrent.atomic.LongAdder;

/**
 * Protego's server: Breakwater's credit machinery with the pool size C decided by throughput
 * slope instead of queueing delay (protego-nsdi23 §3.1, Algorithm 1), by default as the authors'
 * server decides it ({@link ProtegoConfig.Rule}; {@link ProtegoPolicy} has both rules).
 *
 * <pre>
 * Credits (§3.1 "Operation": "the credit-based scheme we developed for Breakwater"): composed, not
 *   copied. A {@link BreakwaterServerGate} with demand speculation and no delay AQM does the
 *   per-session windows, lazy distribution on responses (eq. 4–6), overcommit and explicit credits
 *   to drained sessions; its own delay-driven loop is never started. This gate only sets C
 *   through {@link BreakwaterServerGate#resizePool}, starting at
 *   {@link ProtegoConfig#initialPoolPerCore} · parallelism (the authors: 10 · cores). Under the
 *   authors' rule the distribution takes the authors' one change ([A7] in {@link ProtegoPolicy}):
 *   a session keeps its last credit unless its request was dropped (bw2_server.c,
 *   srpc_update_credit), so C bounds the credits beyond one per session and drops drain sessions.
 *   A session refused for credit while credits are scarce gives a credit back on a later answer,
 *   its last included ({@link BreakwaterServerGate}): "a client only sends a request after it
 *   receives a credit" (§3.1), and one that keeps its last credit busy by resending refusals would
 *   otherwise be served more than the same client waiting for its answers.
 * Measures (Alg. 1 lines 4–6), per request, O(1), on LongAdders, as the authors count them
 *   (bw2_server.c: srpc_cm_in_cnt in srpc_recv_one before the drop check, srpc_cm_out_cnt in
 *   srpc_worker for requests not dropped):
 *   in   requests that passed the credit check at admission (dropped ones included);
 *   out  permits completed {@link Outcome#SUCCESS} (throughput);
 *   drop admitted permits completed {@link Outcome#DROPPED} or {@link Outcome#ABORTED} (ASQM).
 * Iterations (Alg. 1 line 10, §4 "Performance measurement"), on the injected scheduler:
 *   t0           pool updated
 *   t0 + RTT     current measures reset: the load has had one end-to-end RTT to follow C
 *   t0 + k·RTT   the rule decides and sets C on the measures since t0 + RTT; lines 24–25
 *                keep them as "last"; the RTT estimate is refreshed; next iteration starts
 *   (k = {@link ProtegoConfig#rttsPerIteration}, 4 by default: footnote 1). The authors' server
 *   has the same shape with constants: the measures are reset SRPC_CM_P99_RTT = 100 µs after an
 *   update and the pool is updated at SRPC_CM_UPDATE_INTERVAL = 200 µs, for a 10 µs network RTT
 *   (srpc_update_credit_pool). The measures are passed as rates over the measured span, so
 *   that spans of different lengths (the RTT estimate moves) compare fairly.
 * End-to-end RTT (§3.1: "the elapsed time between credit issue and the successful response
 *   return which is tracked with an 8B unique credit ID"): every response this gate completes
 *   carries a credit id that encodes when it was sent, {@code now − epoch + 1} (never 0, wrap-safe
 *   for 584 years); the credits it piggybacks are stamped with it. {@link ProtegoClientGate} echoes
 *   on each request the latest id it received, advanced by the time that credit then waited at
 *   the client; when the request's response succeeds, {@code now − id} is one sample: the network
 *   RTT plus the request's time in the server, the lag with which the measures follow C. Taken
 *   literally, credit issue to response would also count how long a credit sits at an idle client
 *   (with 1,000 clients, milliseconds: the previous session measured 4–14 ms), which is no delay
 *   of the control loop: a pool change reaches the measures through clients that have requests.
 *   Samples at or below zero or above {@link ProtegoConfig#maxRttNanos} (a response later than
 *   the SLO is no successful return) are
 *   discarded. The estimate moves toward each iteration's sample mean with gain 1/8, as TCP's
 *   smoothed RTT (RFC 6298): the paper does not say how samples are combined, and in
 *   scenarios/protego-two-path at 1.4× an iteration's 20–60 samples have means from 46 to 170 µs,
 *   so an unsmoothed estimate would make the iteration length, and with it the noise in the
 *   counts, random. (At equilibrium the estimate is 90–110 µs there, close to the authors'
 *   SRPC_CM_P99_RTT = 100 µs.) The id needs no table at the server.
 * </pre>
 *
 * <p>Thread-safe. {@link #admit} and permit completion run concurrently and touch only the shared
 * credit gate and the adders; the iteration state is confined to the scheduler's task (one at a
 * time, each scheduling the next). Adders are reset while requests may be counting, so an update
 * racing the reset may land in either span, as readings of shared counters in the authors' server
 * may be a moment stale.
 */
public final class ProtegoServerGate implements ServerGate {

  /** Gain of the smoothed RTT: RFC 6298's α = 1/8, as a divisor. */
  private static final long RTT_GAIN_DIVISOR = 8;

  private final ProtegoConfig config;
  private final BreakwaterServerGate credits;
  private final Ticker ticker;
  private final Scheduler scheduler;
  private final long minimumPool;
  private final long epoch;

  private final LongAdder in = new LongAdder();
  private final LongAdder out = new LongAdder();
  private final LongAdder drops = new LongAdder();
  private final LongAdder rttSum = new LongAdder();
  private final LongAdder rttSamples = new LongAdder();

  // Iteration state: written only by the control task.
  private long measureStart;
  private double inLast;
  private double outLast;
  private double carry;
  private volatile long rttNanos;
  private volatile ProtegoPolicy.Decision lastDecision;
  private volatile long iterations;

  private Cancellable nextTask;
  private boolean started;
  private boolean closed;

  /**
   * A gate with the given parameters; call {@link #start()} to begin the control loop. Users get
   * one from {@link Protego#newServerGate}.
   */
  ProtegoServerGate(ProtegoConfig config, ServerEnvironment environment) {
    if (config == null || environment == null) {
      throw new NullPointerException(config == null ? "config" : "environment");
    }
    this.config = config;
    // The authors' rule grows only a fully handed-out pool ([A3]), which keeps C near one credit
    // per session when the sessions are idle; without their per-session rule every dip of C below
    // C_issued would drain idle sessions, whose next requests then wait for an explicit credit.
    this.credits = new BreakwaterServerGate(config.creditMachinery(), environment,
        config.rule() == ProtegoConfig.Rule.AUTHORS);
    this.ticker = environment.ticker();
    this.scheduler = environment.scheduler();
    this.minimumPool = environment.parallelism();
    this.epoch = ticker.read();
    this.rttNanos = config.initialRttNanos();
    // The authors' server starts C at 10 credits per core (bw2_server.c, srpc_listener); the
    // first iteration clamps it to [parallelism, 64·n_c] (Alg. 1 lines 22–23).
    credits.resizePool((long) config.initialPoolPerCore() * Math.max(1, minimumPool), 0);
  }

  @Override
  public synchronized void start() {
    if (!started && !closed) {
      started = true;
      nextTask = scheduler.schedule(this::beginMeasurement, rttNanos);
    }
  }

  @Override
  public synchronized void close() {
    closed = true;
    if (nextTask != null) {
      nextTask.cancel();
    }
  }

  @Override
  public ServerPermit admit(RequestMetadata request, long nowNanos) {
    ServerPermit permit = credits.admit(request, nowNanos);
    if (permit.isAdmitted()) {
      in.increment();
    }
    return new Permit(permit, request.creditId());
  }

  @Override
  public void onDemand(long sessionId, int demand, long nowNanos) {
    credits.onDemand(sessionId, demand, nowNanos);
  }

  @Override
  public void deregister(long sessionId, long nowNanos) {
    credits.deregister(sessionId, nowNanos);
  }

  /** C, the current size of the credit pool. */
  public long poolSize() {
    return credits.poolSize();
  }

  /** Credits currently held by sessions (in flight plus unused). */
  public long issuedCredits() {
    return credits.issuedCredits();
  }

  /** n_c, sessions currently registered. */
  public int sessionCount() {
    return credits.sessionCount();
  }

  /** The window a session holds, or -1 if it is not registered. For tests and diagnostics. */
  public int windowOf(long sessionId) {
    return credits.windowOf(sessionId);
  }

  /** The current end-to-end RTT estimate; an iteration lasts {@code rttsPerIteration} of these. */
  public long rttNanos() {
    return rttNanos;
  }

  /** Iterations of Algorithm 1 run so far. */
  public long iterations() {
    return iterations;
  }

  /** The branch of Algorithm 1 the last iteration took, or {@code null} before the first. */
  ProtegoPolicy.Decision lastDecision() {
    return lastDecision;
  }

  /** The configuration this gate runs with. */
  public ProtegoConfig config() {
    return config;
  }

  /** The credit id a response sent at {@code nowNanos} carries: its send time, never zero. */
  long creditIdAt(long nowNanos) {
    return nowNanos - epoch + 1;
  }

  // ---- control loop ------------------------------------------------------------------------

  /** §4: one RTT after C changed, reset the current measures and measure the rest of the iteration. */
  private void beginMeasurement() {
    long now = ticker.read();
    in.reset();
    out.reset();
    drops.reset();
    rttSum.reset();
    rttSamples.reset();
    measureStart = now;
    reschedule(this::endIteration, (config.rttsPerIteration() - 1) * rttNanos);
  }

  /**
   * Algorithm 1 lines 11–25 on the measures since {@link #beginMeasurement}, by the configured
   * rule; the authors' rule reads C_issued and C at the same moment, as srpc_update_credit_pool
   * reads credit_used and credit_pool.
   */
  private void endIteration() {
    long now = ticker.read();
    credits.evictIdleSessions(now);
    long span = now - measureStart;
    if (span > 0) {
      double perNano = 1.0 / span;
      double inCur = in.sum() * perNano;
      double outCur = out.sum() * perNano;
      double dropCur = drops.sum() * perNano;
      int n = credits.activeSessions();
      long pool = credits.poolSize();
      ProtegoPolicy.Decision decision;
      long next;
      if (config.rule() == ProtegoConfig.Rule.AUTHORS) {
        decision = ProtegoPolicy.decideAuthors(inCur, inLast, outCur, outLast, dropCur,
            credits.issuedCredits(), pool, config.efficiencyThreshold(), config.maxDropRate());
        ProtegoPolicy.Step step = ProtegoPolicy.authorsStep(pool, carry, decision,
            config.increaseFraction(), n);
        next = step.pool();
        carry = step.carry();
      } else {
        decision = ProtegoPolicy.decidePaper(inCur, inLast, outCur, outLast, dropCur,
            config.efficiencyThreshold(), config.maxDropRate());
        next = ProtegoPolicy.nextPoolSize(pool, decision,
            ProtegoPolicy.increment(config.increaseFraction(), n), config.decreaseFactor());
      }
      next = CreditPolicy.clampPoolSize(next, minimumPool, config.perSessionCap(), n); // l. 22–23
      credits.resizePool(next, n);
      inLast = inCur;                                                                // l. 24
      outLast = outCur;                                                              // l. 25
      lastDecision = decision;
      iterations = iterations + 1;
    }
    long samples = rttSamples.sum();
    if (samples > 0) {
      long mean = rttSum.sum() / samples;
      rttNanos = Math.max(1, rttNanos + (mean - rttNanos) / RTT_GAIN_DIVISOR);
    }
    reschedule(this::beginMeasurement, rttNanos);
  }

  private synchronized void reschedule(Runnable task, long delayNanos) {
    if (!closed) {
      nextTask = scheduler.schedule(task, delayNanos);
    }
  }

  private void onCompleted(boolean admitted, Outcome outcome, long creditId, long nowNanos) {
    if (!admitted) {
      return; // a request refused at admission was never counted in
    }
    switch (outcome) {
      case SUCCESS -> {
        out.increment();
        if (creditId != 0) {
          long sample = nowNanos - (epoch + (creditId - 1));
          if (sample > 0 && sample <= config.maxRttNanos()) {
            rttSum.add(sample);
            rttSamples.increment();
          }
        }
      }
      case DROPPED, ABORTED -> drops.increment();
      default -> { }
    }
  }

  /** Wraps the credit gate's permit: counts the outcome and stamps the response's credit id. */
  private final class Permit implements ServerPermit {
    private final ServerPermit credit;
    private final long creditId;

    Permit(ServerPermit credit, long creditId) {
      this.credit = credit;
      this.creditId = creditId;
    }

    @Override
    public boolean isAdmitted() {
      return credit.isAdmitted();
    }

    @Override
    public Status status() {
      return credit.status();
    }

    @Override
    public boolean isCompleted() {
      return credit.isCompleted();
    }

    @Override
    public void started(long nowNanos) {
      credit.started(nowNanos);
    }

    @Override
    public void complete(Outcome outcome, long nowNanos, ResponseMetadata response) {
      credit.complete(outcome, nowNanos, response); // exactly-once is enforced there
      response.creditId(creditIdAt(nowNanos));
      onCompleted(credit.isAdmitted(), outcome, creditId, nowNanos);
    }

    @Override
    public String toString() {
      return "ProtegoPermit[" + credit + ", creditId=" + creditId + "]";
    }
  }
}
