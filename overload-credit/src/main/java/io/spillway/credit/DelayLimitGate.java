package io.spillway.credit;

import io.spillway.api.AbstractServerPermit;
import io.spillway.api.Cancellable;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.Outcome;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.ServerPermit;
import io.spillway.api.Status;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * Server-only protection for clients that carry no session, credit or token
 * (docs/design.md, "Clients that do not speak Spillway"): delay-based AQM and an adaptive
 * limit on the requests waiting to run, both steered by the server's queueing delay, decided
 * before the handler runs.
 *
 * <pre>
 * Per request (admit), O(1):
 *   AQM: drop at once if the queueing delay is at or above the drop threshold
 *        (breakwater-osdi20 §3.2.3, the same threshold Breakwater uses, 2·d_t);
 *   limit: admit only while fewer than L admitted requests wait to run, else REJECTED_LIMIT;
 *          where the host reports starts, not applied until a request has waited behind
 *          another (below).
 * Per control period, on the first admission a period after the last update:
 *   L ← L + 1                                          if d_m &lt; d_t and the limit was used
 *   L ← L · max(1 − β·(d_m − d_t)/d_t, 0.5)            if d_m ≥ d_t
 *   L clamped to [floor, ∞), floor = μ · d_t (at least 1) where the host reports starts,
 *                             parallelism + μ · d_t where it does not;
 *                             μ = max(X, Σ position / Σ wait), X over the last periods,
 *                             the drain rate over the last periods that sampled it
 * </pre>
 *
 * <p>The update is Breakwater's eq. 1–3 ({@link CreditPolicy#nextPoolSize}) with one client: a
 * credit pool is a concurrency limit on requests in flight plus credits not yet spent, and a
 * client that holds no credits leaves only the first term. The limit grows only while at least
 * half of it was in use during the period ("application-limited" periods leave it alone, as TCP's
 * congestion window validation does, RFC 7661 §4.3), so a server idling under light load does not
 * build a limit that would let a burst through at once.
 *
 * <p><b>What the limit counts.</b> A request counts from its admission until its handler has it
 * ({@link ServerPermit#started}), or until it completes where the host does not say when handlers
 * start. Breakwater's servers run each request on a core to completion (§4), so what is in flight
 * there is what waits plus one per core. A JVM service's handler may instead block for most of
 * its time (a downstream call, a database), on a virtual thread or one of many platform threads:
 * it holds its request in flight without anyone waiting behind it, and its server may keep many
 * times its cores in flight with no queue at all. Counted in flight, such requests held the limit
 * at its floor and refused a blocking service's bursts while its workers were idle; counted while
 * they wait, the limit bounds exactly the queue that the delay signal measures and the target
 * allows.
 *
 * <p><b>The floor</b> is the queue that empties in d_t: μ · d_t waiting requests, μ the rate the
 * queue drains at (Little's law), plus, where requests count until they complete, the {@code
 * parallelism} whose handlers hold them. A multiplicative decrease after a short spike of delay
 * would otherwise leave the limit at the parallelism, and a server near its capacity would refuse
 * every small burst until the limit had grown back one per period.
 *
 * <p>μ is the larger of two rates, each over {@value #FLOOR_PERIODS} periods. X, the rate
 * requests complete, is the drain rate of a server that runs requests to completion and is
 * saturated; under overload the floor is then a d_t queue, where eq. 1–2 steer anyway. But X is
 * only the rate requests arrive at a server that keeps up, and where handlers block it is far
 * below the rate the queue empties: a worker that blocks is free for the next request at once. So
 * where the host reports starts, each started request that waited is a sample of the drain rate:
 * it waited W behind the n − 1 admitted before it that were still waiting (n its position at
 * admission), so n ≈ μ · W, and μ is estimated as Σ n / Σ W, a ratio that weighs each sample by its
 * wait. A request that found no other waiting (n = 1) waited only for a hand-off to a worker,
 * which would overstate μ many times at moderate load, so it is not a sample. The drain rate is
 * a property of the server (its workers and what its handlers do), not of the load, so periods
 * that sampled nothing (a quiet spell, or requests that never queued) do not age it out: the
 * window holds the last {@value #FLOOR_PERIODS} periods that sampled it. The completion rate X
 * follows the load and spans the last periods of time.
 *
 * <p><b>Before the first measurement.</b> A gate whose host reports starts ({@link
 * ServerEnvironment#reportsStarts}) and that has not yet seen a request wait behind another has no
 * measure of the queue its target allows: the same burst is a few milliseconds of queue on a
 * service whose workers block and many times its SLO on one whose single worker computes. Until
 * then the limit does not refuse; the AQM threshold and the requests' budgets bound the queue,
 * and the first request that waits behind another is the first sample, so a server started into
 * overload is limited from its first queue on. A limit of the parallelism from the start would refuse most of
 * a fresh blocking service's first burst while its workers are idle (docs/results/grpc.md, "Plain
 * clients whose handlers block", measures both). A host that does not report starts gives no
 * samples and counts requests until they complete, so its limit applies from the first request: a
 * blocking service's requests admitted unlimited until the first completed would hold its count
 * far above the limit for as long as they block.
 *
 * <p><b>The queue's share of the SLO.</b> Where the gate knows the SLO and the host reports starts,
 * d_t and the AQM threshold leave room for the handlers' p99 residence ({@link QueueShare#tail}:
 * these requests carry no budget of their own), which this gate's permits measure from their start
 * to their completion.
 *
 * <p><b>Updates ride on admissions.</b> The limit matters only to the next admission, so the
 * admission that finds a period passed since the last update makes it (one volatile read on every
 * admission, the update once a period), and a timer runs only every {@link
 * QuietTimer#QUIET_PERIODS} periods to keep an idle gate's limit and metrics current. A timer
 * that ran every period was a wake-up of the server every millisecond under the default period:
 * about a tenth of a core at a light load (docs/results/server-cpu.md), and on a one-core gRPC
 * server under overload, capacity taken from the requests (docs/results/grpc.md, "What the
 * defaults cost"). Under load an admission comes every period, so the limit is updated as often
 * as the timer updated it.
 *
 * <p>Thread-safe: the waiting count and its peak are atomics; L and the targets are written only
 * by the one thread updating them.
 */
final class DelayLimitGate implements ServerGate {

  /** Feeds the handlers' residence; its tail targets are this gate's d_t and AQM threshold. */
  private final QueueShare share;
  private final QueueShare.Targets targets;
  private final long periodNanos;
  private final double beta;
  private final ServerEnvironment environment;
  private final QueueDelaySignal queueDelay;
  private final OverloadMetrics metrics;
  private final int minimum;

  /** How many control periods the floor's rates are measured over. */
  static final int FLOOR_PERIODS = 100;

  /** Admitted requests whose handlers do not have them yet. */
  private final AtomicInteger waiting = new AtomicInteger();
  /** Requests completed in the current period. */
  private final LongAdder periodCompleted = new LongAdder();
  /** Started requests of the current period: their queue positions at admission, and waits. */
  private final LongAdder periodPositions = new LongAdder();
  private final LongAdder periodWaits = new LongAdder();
  /** Whether the host has said when handlers start ({@link ServerPermit#started}). */
  private volatile boolean startsReported;
  /**
   * Whether the limit applies: from the start where the host does not report starts, else from
   * the first drain-rate sample (class comment, "Before the first measurement").
   */
  private volatile boolean measured;
  /** Positions and waits of the last FLOOR_PERIODS periods that sampled them; control loop only. */
  private final long[] recentPositions = new long[FLOOR_PERIODS];
  private final long[] recentWaits = new long[FLOOR_PERIODS];
  private int drainIndex;
  /**
   * Completions of the last FLOOR_PERIODS periods, and when the window began; control loop only. A
   * period lasts from one update to the next: a control period, or longer where no admission came.
   */
  private final long[] recentCompleted = new long[FLOOR_PERIODS];
  private final long[] recentStart = new long[FLOOR_PERIODS];
  private int recentIndex;
  /**
   * When the current period began, once {@link #windowStarted}: a flag, not a reserved reading,
   * since the ticker may read any value, {@code Long.MIN_VALUE} included, where it wraps.
   */
  private long periodStart;
  private boolean windowStarted;
  /** Most requests waiting since the last control period. */
  private final AtomicInteger peak = new AtomicInteger();
  private volatile long limit;
  /** The limit's updates: the first admission a period after the last makes the next. */
  private final DueUpdate updates;
  private Cancellable controlLoop;

  /**
   * @param targetDelayNanos d_t, the queueing delay the limit steers to
   * @param dropThresholdNanos AQM drops requests arriving at or above this queueing delay
   * @param periodNanos how often the limit is updated
   * @param beta multiplicative-decrease sensitivity (eq. 2)
   */
  DelayLimitGate(long targetDelayNanos, long dropThresholdNanos, long periodNanos, double beta,
      ServerEnvironment environment) {
    this(new QueueShare(0, targetDelayNanos, dropThresholdNanos), periodNanos, beta, environment);
  }

  /**
   * As above, steering by a queue share that other gates of the server may also use and feed:
   * with an SLO, the targets leave room for the handlers' residence (class comment).
   */
  DelayLimitGate(QueueShare share, long periodNanos, double beta, ServerEnvironment environment) {
    if (periodNanos <= 0 || !(beta > 0)) {
      throw new IllegalArgumentException("period and beta must be positive: " + periodNanos + ", " + beta);
    }
    this.share = share;
    this.targets = share.tail(); // plain clients' requests carry no budget (QueueShare)
    this.periodNanos = periodNanos;
    this.beta = beta;
    this.environment = environment;
    this.queueDelay = environment.queueDelay();
    this.metrics = environment.metrics();
    this.minimum = environment.parallelism();
    this.limit = minimum;
    this.measured = !environment.reportsStarts();
    this.updates = new DueUpdate(environment.ticker().read(), this::updateLimit, new FailureLog(
        DelayLimitGate.class, "the plain clients' limit update failed; admissions go on"));
  }

  @Override
  public synchronized void start() {
    if (controlLoop == null) {
      // The admissions update the limit; this timer only keeps an idle gate's limit and metrics
      // current, so it runs every QuietTimer.QUIET_PERIODS periods (class comment).
      controlLoop = environment.scheduler().every(QuietTimer.QUIET_PERIODS * periodNanos,
          () -> updateIfDue(environment.ticker().read()));
    }
  }

  @Override
  public synchronized void close() {
    if (controlLoop != null) {
      controlLoop.cancel();
    }
  }

  @Override
  public ServerPermit admit(RequestMetadata request, long nowNanos) {
    updateIfDue(nowNanos);
    Status decision;
    if (queueDelay.queueingDelayNanos(nowNanos) >= targets.dropThresholdNanos()) {
      decision = Status.REJECTED_AQM;
    } else {
      int n = waiting.incrementAndGet();
      if (n > limit && measured) {
        waiting.decrementAndGet();
        decision = Status.REJECTED_LIMIT;
      } else {
        int p;
        while (n > (p = peak.get()) && !peak.compareAndSet(p, n)) {
          // another request raised the peak meanwhile; retry against its value
        }
        metrics.onAdmission(Status.OK);
        return new Permit(Status.OK, nowNanos, n);
      }
    }
    metrics.onAdmission(decision);
    return new Permit(decision, nowNanos, 0);
  }

  @Override
  public void deregister(long sessionId, long nowNanos) {
    // no sessions
  }

  /**
   * Updates the limit if a period has passed since its last update and no other thread is
   * updating it: on an admission, or on the idle timer's run.
   */
  void updateIfDue(long nowNanos) {
    updates.runIfDue(nowNanos, periodNanos);
  }

  /**
   * One control period: the limit follows the queueing delay. Under {@link #updates}' lock, or in
   * tests.
   */
  void updateLimit(long nowNanos) {
    share.retarget(nowNanos);
    long targetDelayNanos = targets.targetDelayNanos();
    long delay = queueDelay.queueingDelayNanos(nowNanos);
    long current = limit;
    int used = peak.getAndSet(waiting.get());
    long next;
    if (delay < targetDelayNanos && 2L * used < current) {
      next = current; // application-limited: the limit was not what held requests back
    } else {
      next = CreditPolicy.nextPoolSize(current, delay, targetDelayNanos, 0, beta, 1);
    }
    limit = Math.min(Math.max(floor(nowNanos, targetDelayNanos), next), Integer.MAX_VALUE);
    metrics.onConcurrencyLimit(limit, waiting.get());
  }

  /** d_t now (class comment). */
  long targetDelayNanos() {
    return targets.targetDelayNanos();
  }

  /** The AQM threshold now. */
  long dropThresholdNanos() {
    return targets.dropThresholdNanos();
  }

  /**
   * The queue a target's delay allows, μ · d_t, with μ the larger of the completion rate and the
   * queue's drain rate over the last periods; plus the parallelism where requests count until they
   * complete. See the class comment.
   */
  private long floor(long nowNanos, long targetDelayNanos) {
    if (!windowStarted) {
      windowStarted = true;
      periodStart = nowNanos - periodNanos;
      java.util.Arrays.fill(recentStart, periodStart);
    }
    recentCompleted[recentIndex] = periodCompleted.sumThenReset();
    long periodWaited = periodWaits.sumThenReset();
    long periodPositioned = periodPositions.sumThenReset();
    if (periodWaited > 0) { // a period without samples says nothing of the drain rate
      recentPositions[drainIndex] = periodPositioned;
      recentWaits[drainIndex] = periodWaited;
      drainIndex = (drainIndex + 1) % FLOOR_PERIODS;
    }
    recentStart[recentIndex] = periodStart;
    periodStart = nowNanos;
    recentIndex = (recentIndex + 1) % FLOOR_PERIODS;
    long oldest = recentStart[recentIndex]; // the window's first period began here
    long completed = 0;
    long positions = 0;
    long waits = 0;
    for (int i = 0; i < FLOOR_PERIODS; i++) {
      completed += recentCompleted[i];
      positions += recentPositions[i];
      waits += recentWaits[i];
    }
    long span = nowNanos - oldest;
    double perNano = span > 0 ? (double) completed / span : 0; // X
    if (waits > 0) {
      perNano = Math.max(perNano, (double) positions / waits); // the drain rate
    }
    long queue = (long) (perNano * targetDelayNanos);
    return startsReported ? Math.max(1, queue) : minimum + queue;
  }

  /** L, the current concurrency limit; it refuses nothing until {@link #measured()}. */
  long limit() {
    return limit;
  }

  /** Whether the limit applies yet (class comment, "Before the first measurement"). */
  boolean measured() {
    return measured;
  }

  /** Requests admitted whose handlers do not have them yet and that have not completed. */
  int waiting() {
    return waiting.get();
  }

  private static final VarHandle LEFT_QUEUE;

  static {
    try {
      LEFT_QUEUE = MethodHandles.lookup().findVarHandle(Permit.class, "leftQueue", int.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  /** Permit states ({@code leftQueue}): waiting to run, its handler has it, completed unstarted. */
  private static final int WAITING = 0;
  private static final int STARTED = 1;
  private static final int ENDED_UNSTARTED = 2;

  private final class Permit extends AbstractServerPermit {
    /** WAITING until the request stops counting as waiting: STARTED, or ENDED_UNSTARTED. */
    @SuppressWarnings("unused") // accessed through LEFT_QUEUE
    private volatile int leftQueue;
    /** When its handler got it; written before leftQueue becomes STARTED. */
    private long startedAt;
    private final long admittedAt;
    /** Requests waiting when it was admitted, itself included. */
    private final int position;

    Permit(Status status, long admittedAt, int position) {
      super(status);
      this.admittedAt = admittedAt;
      this.position = position;
    }

    @Override
    public void started(long nowNanos) {
      if (!isAdmitted() || leftQueue != WAITING) {
        return;
      }
      startedAt = nowNanos;
      if (LEFT_QUEUE.compareAndSet(this, WAITING, STARTED)) {
        waiting.decrementAndGet();
        if (!startsReported) {
          startsReported = true;
        }
        long waited = nowNanos - admittedAt;
        // Alone in the queue, it waited only for a hand-off, which says nothing of how fast a
        // queue drains; nor does no wait at all.
        if (position > 1 && waited > 0) {
          periodPositions.add(position);
          periodWaits.add(waited);
          if (!measured) {
            measured = true;
          }
        }
      }
    }

    @Override
    protected void onComplete(Outcome outcome, long nowNanos, ResponseMetadata response) {
      if (isAdmitted()) {
        if (LEFT_QUEUE.compareAndSet(this, WAITING, ENDED_UNSTARTED)) {
          waiting.decrementAndGet(); // completed without starting: it waits no more either
        } else if ((int) LEFT_QUEUE.getVolatile(this) == STARTED) {
          share.record(nowNanos - startedAt, nowNanos);
        }
        if (outcome == Outcome.SUCCESS) {
          periodCompleted.increment();
        }
      }
      metrics.onCompletion(outcome);
    }
  }
}
