package io.spillway.credit;

import io.spillway.api.ClientEnvironment;
import io.spillway.api.ClientGate;
import io.spillway.api.OverloadScheme;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.ServerPermit;
import java.time.Duration;
import java.util.Objects;

/**
 * The scheme a user gets without naming one: Breakwater's credits for clients that speak Spillway,
 * and server-only protection (delay-based AQM plus an adaptive concurrency limit,
 * {@code DelayLimitGate}) for clients that do not (docs/design.md, "Clients that do not
 * speak Spillway"). Both are decided by one server gate and steer by the same queueing delay, so
 * one server serves both kinds; a request is Spillway-aware when it carries a session id.
 *
 * <p>Everything is derived from the SLO, as Breakwater's §5.1 derives its parameters from it:
 * target delay d_t = 40 % of the SLO, AQM threshold 2·d_t, client queue timeout adapting to the
 * workload within half the SLO ({@link BreakwaterConfig#adaptiveClientTimeout}), and a request
 * budget adapting with it (below). Where the host says when handlers start, the AQM threshold and
 * d_t of both halves shrink to what the handlers' residence leaves of the SLO ({@code
 * QueueShare}: the median for the credit half, whose requests carry budgets, the p99 for plain
 * clients'; the credit half's also leaves its clients' queues a tenth of the SLO, the least their
 * timeout may be): Breakwater's split leaves a fifth of the SLO for the handler, far less than a
 * handler that blocks on a downstream call takes.
 * The control period is the one value the paper ties to the network (one RTT, §3.2.1). Spillway
 * splits it in two. The pool follows the queue every {@link #poolUpdateNanos}, a twentieth of the
 * SLO (the paper's RTT where the SLO is set by its rule, 10 × (service + RTT), and the service time
 * is no longer than the RTT; longer when the service time is, which the Fig. 5 reproduction found
 * better at 100 µs: docs/results/simulation.md), and these updates ride on admissions: the request
 * that finds the interval passed updates the pool, so an update costs no wake-up. A timer runs
 * every {@link #defaultPeriodNanos}, a twentieth of the SLO within [1 ms, 10 ms], only while a
 * drained session waits for an explicit credit, which no admission brings; otherwise every hundred
 * periods, and a session that drains wakes it ({@code QuietTimer}). The plain half's limit is
 * updated by its admissions too, and its timer runs every hundred periods ({@code
 * DelayLimitGate}). Each run is a wake-up of the thread it runs on, and
 * at a light load the runs, not the requests, were most of what the scheme cost a server: a run
 * every millisecond cost about a tenth of a core at 100 requests a second
 * (docs/results/server-cpu.md). The floor departs from the paper, whose servers poll on dedicated
 * cores: on the JVM each timer run is a wake-up that takes the CPU from the requests of a busy server;
 * measured on the gRPC demo's one-core server (docs/results/grpc.md), a 250 µs period cost about a
 * fifth of its capacity, a 1 ms one no more than the run-to-run spread. Updated by that timer
 * alone, the pool would trail the queue of a 200 µs SLO by five SLOs (docs/results/robustness.md
 * measures the cost: the pool kept 0.32 × capacity at 1.2×).
 *
 * <p>The pool follows the credits out (C_issued), which the server counts, in two places where the
 * paper's rules assume that a change of C_total takes effect within a period.
 *
 * <p><b>Decrease.</b> Eq. 2 (breakwater-osdi20 §3.2.1) cuts C_total once a period, and the server
 * takes credits back lazily, one per response to the session holding them (eq. 6, §4), so a cut
 * lands only as those sessions send again: within an RTT when each session keeps requests in
 * flight, but after about n_c ÷ throughput when sessions are many and each sends rarely (10,000
 * clients at 850 k requests/s: 12 ms, about 1,200 periods). Compounded over those periods, eq. 2
 * halves the pool before its first cut has landed; the queue then empties and the pool regrows by
 * A = α·n_c a period (eq. 1 and 3): a saw-tooth in which the server idles while requests expire in
 * client queues (exponential 10 µs, 10,000 clients, 1.2×: 0.885 of capacity, more requests
 * expired than the demand's excess). Spillway measures each decrease from the
 * larger of C_total and C_issued instead ({@link CreditPolicy#nextPoolSizeFromIssued}): while
 * earlier cuts are being taken back it cuts for the load actually out, once; where they land within
 * a period, it is eq. 2. On docs/results/robustness.md's matrix this raised that cell to 0.957.
 * Scaling α down instead (eq. 3 gives 10 credits an update at 10,000 clients) made it worse: 0.856
 * with α ten times smaller; the increase was not the fault.
 *
 * <p><b>Start.</b> The paper does not say where C_total starts (it measures from two seconds into
 * a run, §5.1); here it starts at the server's parallelism, growing by A = max(α·n_c, 1) an
 * update, which is one credit every SLO/20 at 1,000 clients, so that where the credits must cover
 * a long RTT (500 µs) the pool took 250 ms to reach them and the ramp cell kept 0.869 of what
 * could be served. Spillway starts the
 * way TCP does: the pool doubles each update while every credit is out and the queue is below
 * d_t/2, and never again once the queue reaches d_t/2 or a doubling leaves credits unused ({@link
 * CreditPolicy#startUp}); eq. 1–3 from then on. Doubling without the second exit (while the queue
 * stayed short) grew the pool through a light first phase to its ceiling, and the step up after it
 * overshot (RTT 500 µs step cell: p99 1.34 × the SLO); with it, that cell keeps p99 within the SLO.
 *
 * <p><b>Growth.</b> The pool grows (eq. 1) only while it is in use ({@code
 * CreditPolicy.growOnlyIfUsed}: C_total ≤ C_issued + n_c), so that a few sessions' lulls do not
 * store credits their next burst spends at once (docs/results/grpc.md).
 *
 * <p><b>Handlers that hold calls.</b> Eq. 4 overcommits about one credit a session beyond its
 * calls in flight (with the growth rule above), and a credit comes back only with an answer. Where
 * handlers answer within microseconds that is the paper's design; where they block on a downstream
 * call for most of the SLO, a call that finds its session's window full waits about a residence for
 * the next answer, past its queue timeout: in the simulator (scenarios/blocking-handlers.conf, 100
 * sessions, 30 ms blocks, SLO 50 ms) a third of the calls expired in their sessions' queues at half
 * the capacity. So where the median residence exceeds d_t, a session's answers come back too
 * rarely to bring it a credit within half of d_t, and the queue is under d_t/2 when one is
 * answered, its window covers the calls it starts in a
 * residence ({@link CreditPolicy#windowForResidence}, from the gap between its requests), and the
 * credits sessions ask for that way and cannot get grow the pool by up to a
 * doubling a residence while the queue is short ({@link CreditPolicy#coverResidenceShortfall});
 * eq. 1's A an update took seconds to reach a pool that size. Where handlers are fast neither
 * applies, and docs/results/robustness.md's 150 cells are as they were.
 *
 * <p><b>Few sessions.</b> The authors' per-session cap of 64 credits bounds the pool at 64·n_c,
 * too few where a handful of sessions carry the whole load (a few front ends, each one channel,
 * calling handlers that block on a downstream call). Spillway lets a session's window pass the cap
 * while no session within it is short of credits, takes it back a credit an answer while one is,
 * and grows the pool by what sessions ask beyond the cap and cannot get (BreakwaterServerGate's
 * class comment, "The per-session cap"). In the simulator (scenarios/blocking-handlers.conf, 2
 * cores, 30 ms blocks) two sessions were served at 0.26 of capacity with the fixed cap and 0.96
 * with this, at 1× to 2× demand; at 100 sessions, where 64 a session is no bound, nothing changes.
 *
 * <p><b>Budget.</b> Each request a session sends carries a queueing budget ({@link
 * BreakwaterConfig#adaptiveRequestBudget}): the SLO less the p99 of what its client measured a
 * request to need beyond the queues, less its own wait in the client queue; the server aborts it
 * unrun once its queue has taken the rest (docs/design.md, "Request budget"). Breakwater bounds
 * the client queue by a timeout and the server's by AQM at 2·d_t, and the two with a service
 * time's tail exceed the SLO: on docs/results/robustness.md's matrix without it the p99 was over
 * the SLO in 12 of 150 cells, with it in none.
 *
 * <p>{@link #of(BreakwaterConfig)} keeps the paper's values (timer only, every period, eq. 1–3 on
 * C_total from the server's parallelism, growth on delay alone, fixed client queue timeout, the
 * per-session cap as a ceiling) reachable.
 *
 * <p>Immutable and thread-safe.
 */
public final class Spillway implements OverloadScheme {

  private static final long MIN_PERIOD_NANOS = 1_000_000;
  private static final long MAX_PERIOD_NANOS = 10_000_000;

  private final BreakwaterConfig config;
  /** Send-to-response times of this instance's sessions, for the adaptive client queue timeout. */
  private final io.spillway.api.ServiceTimeTracker pathLatency = new io.spillway.api.ServiceTimeTracker();
  /** The pool's update interval on admissions, 0 for the timer alone. */
  private final long poolUpdateNanos;
  /** Whether the pool follows the credits out: decrease and start (see the class comment). */
  private final boolean followsCreditsOut;
  /**
   * The SLO the defaults were derived from, 0 when the parameters were given in full: with it, both
   * halves' queue gets what the handlers' residence leaves of it ({@code QueueShare}).
   */
  private final long sloNanos;

  private Spillway(BreakwaterConfig config, long poolUpdateNanos, boolean followsCreditsOut,
      long sloNanos) {
    this.config = Objects.requireNonNull(config, "config");
    this.sloNanos = sloNanos;
    this.poolUpdateNanos = poolUpdateNanos;
    this.followsCreditsOut = followsCreditsOut;
  }

  /** The defaults for an SLO: see the class comment. */
  public static Spillway forSlo(Duration slo) {
    return forSloNanos(slo.toNanos());
  }

  /** The defaults for an SLO in nanoseconds. */
  public static Spillway forSloNanos(long sloNanos) {
    if (sloNanos <= 0) {
      throw new IllegalArgumentException("the SLO must be positive: " + sloNanos + " ns");
    }
    return new Spillway(BreakwaterConfig.forSlo(sloNanos, defaultPeriodNanos(sloNanos)).toBuilder()
        .adaptiveClientTimeout(true).adaptiveRequestBudget(true).build(), poolUpdateNanos(sloNanos),
        true, sloNanos);
  }

  /**
   * Spillway with Breakwater's parameters given in full (the paper's, or tuned ones): the pool is
   * updated by the timer alone, every {@link BreakwaterConfig#controlPeriodNanos}, by eq. 1–3 as
   * the paper states them.
   */
  public static Spillway of(BreakwaterConfig config) {
    return new Spillway(config, 0, false, 0);
  }

  /**
   * These defaults with every request carrying an end-to-end queueing budget ({@link
   * BreakwaterConfig#requestBudgetNanos}): the client sends what is left of it after the request's
   * wait in its queue, and the server aborts the request unrun once that is spent.
   */
  public Spillway withRequestBudgetNanos(long budgetNanos) {
    return new Spillway(config.toBuilder().requestBudgetNanos(budgetNanos).build(),
        poolUpdateNanos, followsCreditsOut, sloNanos);
  }

  /** A twentieth of the SLO, at least 1 µs: how often admissions update the pool. */
  public static long poolUpdateNanos(long sloNanos) {
    return Math.max(1_000, sloNanos / 20);
  }

  /** How often admissions update the pool; 0 when only the timer does ({@link #of}). */
  public long admissionUpdateNanos() {
    return poolUpdateNanos;
  }

  /**
   * Whether the pool follows the credits out, its decrease measured from them and its start by
   * doubling (see the class comment); false for {@link #of}.
   */
  public boolean followsCreditsOut() {
    return followsCreditsOut;
  }

  /** A twentieth of the SLO, at least 1 ms and at most 10 ms. */
  public static long defaultPeriodNanos(long sloNanos) {
    return Math.max(MIN_PERIOD_NANOS, Math.min(MAX_PERIOD_NANOS, sloNanos / 20));
  }

  /** The parameters both halves run with. */
  public BreakwaterConfig config() {
    return config;
  }

  @Override
  public String name() {
    return "spillway";
  }

  @Override
  public ServerGate newServerGate(ServerEnvironment environment) {
    // One queue, one share of the SLO for it: both halves steer to it and both feed it.
    QueueShare share = new QueueShare(sloNanos, config.targetDelayNanos(), config.dropThresholdNanos());
    return new MixedGate(new BreakwaterServerGate(config, environment, false, poolUpdateNanos,
        followsCreditsOut, followsCreditsOut, // of() keeps the paper's pool rules
        sloNanos > 0 ? share : null),
        new DelayLimitGate(share, config.controlPeriodNanos(), config.beta(), environment));
  }

  @Override
  public <R> ClientGate<R> newClientGate(ClientEnvironment environment) {
    return new BreakwaterClientGate<>(config, environment, pathLatency);
  }

  @Override
  public boolean issuesCredits() {
    return true;
  }

  @Override
  public String toString() {
    return "spillway " + config + (poolUpdateNanos > 0 ? ", poolUpdate=" + poolUpdateNanos / 1000.0 + "us on admissions" : "")
        + (followsCreditsOut ? ", pool follows credits out" : "");
  }

  /**
   * Routes each request by whether it carries a session: with one, to Breakwater's credits; with
   * none (session id 0, a client that does not speak Spillway), to the server-only limit.
   * Thread-safe, as both halves are.
   */
  static final class MixedGate implements ServerGate {
    private final BreakwaterServerGate credits;
    private final DelayLimitGate plain;

    MixedGate(BreakwaterServerGate credits, DelayLimitGate plain) {
      this.credits = credits;
      this.plain = plain;
    }

    @Override
    public ServerPermit admit(RequestMetadata request, long nowNanos) {
      return request.sessionId() == 0 ? plain.admit(request, nowNanos)
          : credits.admit(request, nowNanos);
    }

    @Override
    public void onDemand(long sessionId, int demand, long nowNanos) {
      if (sessionId != 0) {
        credits.onDemand(sessionId, demand, nowNanos);
      }
    }

    @Override
    public void deregister(long sessionId, long nowNanos) {
      if (sessionId != 0) {
        credits.deregister(sessionId, nowNanos);
      }
    }

    @Override
    public void start() {
      credits.start();
      plain.start();
    }

    @Override
    public void close() {
      credits.close();
      plain.close();
    }

    BreakwaterServerGate credits() {
      return credits;
    }

    DelayLimitGate plain() {
      return plain;
    }
  }
}
