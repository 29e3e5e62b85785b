package io.spillway.credit;

import io.spillway.api.AbstractServerPermit;
import io.spillway.api.Cancellable;
import io.spillway.api.ControlChannel;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.Outcome;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.ServerPermit;
import io.spillway.api.Status;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Breakwater's server: a credit pool sized from queueing delay, credits handed out lazily on
 * responses, explicit credits only to drained sessions, and delay-based AQM (breakwater-osdi20
 * §3.2, §4).
 *
 * <pre>
 * Per request (admit), O(1): find the session (registering it on its first request, or
 *   refusing it: "Newcomers" below), record its
 *   piggybacked demand, refuse it (REJECTED_NO_CREDIT; one credit owed if credits are scarce) if
 *   the session already has its whole window in flight, else count it pending, and drop it at once
 *   if AQM is on and the queueing delay is at or above the drop threshold (§3.2.3, "drop as early
 *   as possible").
 * Per response (permit completion), O(1): the request leaves pending, and the session's window is
 *   recomputed by eq. 5/6 (lazy distribution, §4), or cut by one if it owes a credit; the signed
 *   difference rides on the response.
 *   A session left with no window and nothing pending joins the drained queue.
 * Per control period (one RTT, on the injected scheduler): C_total by eq. 1–3, clamped to
 *   [parallelism, 64·n_c] (with the per-session cap as a share, below: [parallelism, ∞)); while
 *   credits are open, pop drained sessions and send each one credit in an explicit message
 *   (§3.2.1: "explicit credit messages are only generated when piggybacking is not possible").
 *   The authors wake drained sessions in FIFO order per core; one FIFO here.
 * </pre>
 *
 * <p>A session's window already holds its overcommitted credits (eq. 5 and 6 grant up to
 * demand + C_oc unused), so the window is the most it may have in flight; credits on their way to
 * the client are counted in it from the moment they are granted. A revocation on its way is not
 * yet known to the client, so the window the client last knew stays the limit until the client
 * has certainly read it (one old window's worth of further requests; the reasoning is on
 * {@code Session.ceiling}). A well-behaved client is therefore never refused for credit (unless
 * it starts more new sessions on one connection at once than "Newcomers" below allows), and one
 * that ignores its window is held to it.
 *
 * <p>Holding such a client to its window is not enough to hold it to an honest share. A client that
 * resends each refused request at once always has one waiting at the server, so a credit of its
 * is taken again the moment its request is answered; an honest client's credit spends a round trip
 * on the way (the response to the client, the next request back) every time it is used. Where
 * windows are small and the RTT is not far below the service time, that alone serves the greedy
 * client more than the same client honouring its window (docs/results/reliability.md, "Credit
 * windows at the server", measures it). Breakwater's server admits only with explicit permission
 * (§2.4) and is free to take back credits (§3.2.1); a request refused for credit is proof that its
 * client sent without permission (a well-behaved client never is refused, but for a cancel that
 * races its request: the client frees a credit the server still counts). So each refusal while
 * credits are scarce (C_issued ≥ C_total, where a credit the greedy client keeps busy is one that
 * another session waits for) is a debt of one credit, paid on the session's next answered request
 * that leaves it a credit not in flight: that answer takes back at least one credit, eq. 5 or 6
 * and then at most the window less one (the step of eq. 6, {@code c_x ← c_x − 1}, for this session
 * alone). A refusal while credits are open
 * costs nothing: the session takes no one's credit, and its window may grow by eq. 5 to cover what
 * it sends, after which it is no longer refused; a debt there would hold it below its window for
 * good, each resend refused and adding to the debt, and answering those refusals costs the server
 * more than serving the client would. The revocation keeps its grace ({@code Session.ceiling}), so
 * an honest client refused once loses one credit, once, and is never refused again through it. The
 * debt is capped at the per-session cap, so a client that behaves again has its window back,
 * growing by eq. 5, after at most that many answers; one that keeps resending while credits are
 * scarce drains to no window and waits among the drained sessions for an explicit credit (§3.2.1),
 * sending one request per credit. §6 ("Fairness") suggests timing out over a longer timescale the
 * clients that take the most credits; this times out those that take credits they were not given.
 * It costs the refusal path a read of C_issued and a counter under the session's monitor, already
 * held; the admission path nothing.
 *
 * <p>With a {@link QueueShare} (the default scheme), where the handlers' median residence exceeds
 * d_t, a session's answers are too sparse to refresh its credits within half of d_t and the queue
 * is under d_t/2, eq. 5 asks for at least the window that covers the calls it starts in a
 * residence, and what it cannot grant grows the pool ({@link Spillway}'s class comment, "Handlers
 * that hold calls"). It costs the admission path a few arithmetic operations under the session's
 * monitor, already held (the gap since the session's last request, into its mean).
 *
 * <p><b>The per-session cap.</b> The paper's equations bound a session's window by its demand and
 * the open credits (eq. 5) only; the authors' implementation also caps it at 64 (SRPC_MAX_WINDOW),
 * and so does this gate, which also holds C_total to 64·n_c. With {@code growOnlyIfUsed} (the
 * default scheme, whose pool cannot outgrow the credits in use) the cap is a share instead of a
 * ceiling: a session may hold more than 64 while no session within 64 has lately (within d_t) been
 * left short of credits the pool could not give (an answer whose eq. 5 found none open, or a
 * drained session waiting while the pool is full); while one has, each answer to a session above
 * the cap gives one credit back, eq. 6's step, down to the cap. What a session asks beyond the cap
 * and eq. 5 cannot grant grows the pool as a residence window's shortfall does (below). A fixed 64
 * is no bound where a few sessions carry all the load: two gRPC channels, each multiplexing the
 * calls of a busy front end, to handlers that hold each call 30 ms for a downstream answer need
 * about 235 calls in flight each at capacity; capped at 64 they were served at 0.26 of capacity
 * (scenarios/blocking-handlers.conf with two sessions, docs/results/robustness.md, "Few sessions").
 * The check costs an answer a comparison and, for a session left short, a volatile read (and a
 * write at most once a quarter of d_t).
 *
 * <p><b>Newcomers.</b> Breakwater's first request of a session rides on its register message with a
 * credit of its own (§3): an overcommit that eq. 6 takes back later. That is harmless while
 * sessions are few and long-lived, but the session id is the client's to choose, so a client that
 * invents one for every request is admitted on every request and leaves a registered session behind
 * each time, holding credits and counting in C_issued: in the contract world
 * (docs/results/reliability.md, "Session floods") such a client left the other sessions 0–24 % of
 * their goodput. So a session registered from a named origin ({@link RequestMetadata#origin}: the
 * connection, which the client does not choose) is on probation until a later request of it is
 * admitted, that is, until it comes back on the credit it registered with, which an invented id
 * never does. On probation its window is that one credit, provisional: not in C_issued (nor the
 * session in n_c), not grown or taken back by eq. 5–6 (its answers carry no change), so sessions
 * that never come back take no credit from the others. When it comes back, the credit joins
 * C_issued and eq. 4–6 apply from its next answer: an honest session reaches the paper's behaviour
 * one request later. An origin may have at most {@link #NEWCOMERS_PER_ORIGIN} sessions on
 * probation, and while a queue forms (queueing delay at or above d_t/2, the mark below which {@link
 * CreditPolicy#startUp} counts the server idle) at most one session's share of the pool, {@code
 * max(1, C_total / n_c)}, of their registering requests in the server, so that the next batch of
 * invented ids cannot arrive as one burst; the registering request of a session beyond either is
 * refused {@code REJECTED_NO_CREDIT} with no credit change, so the client keeps the credit it
 * counted and its next request tries again. It is a refusal for credit, as for a session its
 * connection may not add at all (the native transport's per-connection cap): the request came on no
 * credit the server gave, and the native transport stops reading the connection until its next
 * answer, so a client that keeps inventing ids costs the server a refusal per hold, not one per
 * request. A session leaves probation when it comes back, leaves, or is evicted idle ({@link
 * #SESSION_IDLE_TIMEOUT_NANOS}), so a client that invents ids is served that many requests per idle
 * timeout and connection. Requests whose transport names no origin (0), as in the simulator, are
 * registered as the paper does. A well-behaved client is refused here only if it starts more than
 * that many sessions on one connection at once. The cost is on the path of new sessions only: a map
 * update when one registers and one when it comes back.
 *
 * <p>No operation scans the sessions: the per-request cost is independent of their number.
 *
 * <p>Thread-safe. Each session's window is guarded by the session's monitor; C_issued and the
 * session count are atomics; C_total is written only by the control loop. Readings of the globals
 * inside a session update may be a moment stale, as in the authors' implementation.
 */
public final class BreakwaterServerGate implements ServerGate {

  private final BreakwaterConfig config;
  private final ServerEnvironment environment;
  private final QueueDelaySignal queueDelay;
  private final ControlChannel control;
  private final OverloadMetrics metrics;
  private final long minimumPool;
  private final boolean keepLastCredit;
  /** The pool's update interval when updates ride on admissions, or 0 (timer only). */
  private final long admissionUpdateNanos;
  /**
   * Eq. 1 grows the pool only while it is in use ({@link CreditPolicy#growOnlyIfUsed}); and with
   * it the per-session cap is a share, not a ceiling (class comment, "The per-session cap").
   */
  private final boolean growOnlyIfUsed;
  /**
   * The last time a session within the per-session cap was left short of credits the pool could
   * not give (an answer whose eq. 5 found no open credit, or a drained session waiting while the
   * pool was full), and whether that has happened; for the elastic cap ({@link #sessionCap}).
   */
  private volatile long shortAt;
  private volatile boolean shortSeen;
  /**
   * Whether the pool follows the credits out (for {@link Spillway}): a decrease is measured from
   * them ({@link CreditPolicy#nextPoolSizeFromIssued}), and the pool starts by doubling while all
   * of it is out ({@link CreditPolicy#startUp}).
   */
  private final boolean followsCreditsOut;
  /**
   * d_t and the AQM threshold where they follow the handlers' median residence ({@link
   * QueueShare#typical}: these requests carry budgets); null: the config's.
   */
  private final QueueShare share;
  /** The start-up's state; written under {@link #updates}' lock or on the control loop's thread. */
  private boolean startingUp = true;
  private boolean doubled;
  /** The pool's updates on admissions ({@code admissionUpdateNanos > 0}), and their lock. */
  private final DueUpdate updates = new DueUpdate(0, this::updatePoolSize,
      new FailureLog(BreakwaterServerGate.class,
          "the credit pool's update on an admission failed; admissions go on"));

  private final SessionTable<Session> sessions = new SessionTable<>();
  private final ConcurrentLinkedQueue<Session> drained = new ConcurrentLinkedQueue<>();
  /** Entries in {@link #drained}, closed sessions' included. */
  private final AtomicInteger drainedEntries = new AtomicInteger();
  /**
   * Sessions closed with an entry in {@link #drained} since it was last pruned. The queue is
   * polled only while credits are open, so under sustained overload, with sessions coming and
   * going, closed sessions' entries would pile up in it without bound; it is pruned once they are
   * half of it ({@link #pruneDrained}).
   */
  private final AtomicInteger closedInDrained = new AtomicInteger();
  /** Closed entries below which the drained queue is not pruned: a scan costs its length. */
  private static final int PRUNE_MIN = 64;
  private final AtomicLong issued = new AtomicLong();
  /**
   * Credits asked for by {@link CreditPolicy#windowForResidence} and not granted since the last
   * pool update ({@link CreditPolicy#coverResidenceShortfall}); 0 where handlers are fast.
   */
  private final AtomicLong residenceShortfall = new AtomicLong();
  /**
   * When {@link #updatePoolSize} last ran, and last found the queue at d_t or above (the first run
   * counts as such); whether it has run. Written under {@link #updates}' lock or by the timer.
   */
  private long lastResize;
  private long lastAtTarget;
  private boolean resized;
  private final AtomicInteger sessionCount = new AtomicInteger();
  /**
   * Numbers the gate's session records, for the high half of their credit stamps ({@link
   * Session#seq}): a session registered again after being dropped gets a new number, which its
   * client takes as newer whatever the count. Starts at a random value so that a restarted
   * server's records differ from the ones a client kept from before the restart.
   */
  private final AtomicInteger records = new AtomicInteger(new java.util.SplittableRandom().nextInt());
  /**
   * Sessions on probation by origin (class comment, "Newcomers"); an entry exists only while its
   * origin has one. Touched only when a session registers or leaves probation.
   */
  private final ConcurrentHashMap<Long, Newcomers> newcomers = new ConcurrentHashMap<>();
  /** Sessions on probation, of all origins. */
  private final AtomicInteger probationers = new AtomicInteger();
  /**
   * How many sessions one origin may have on probation: four times the per-session cap's default.
   * A client that invents a session id for every request is served this many requests per
   * connection and idle timeout (about 26 a second), and its sessions take no credit from the
   * others (class comment, "Newcomers"). An honest client that starts more sessions than this on
   * one connection at once has the rest refused until the first ones send again; the Spillway
   * client spreads its sessions over its connections, and the harnesses here start at most 250 on
   * one.
   */
  static final int NEWCOMERS_PER_ORIGIN = 4 * BreakwaterConfig.DEFAULT_PER_SESSION_CAP;
  private volatile long total;
  private volatile Cancellable controlLoop;
  /**
   * The timer where admissions update the pool ({@code admissionUpdateNanos > 0}): it runs every
   * period only while a drained session waits for an explicit credit, which no admission brings,
   * and is woken when one drains; null for the paper's timer, which runs every period.
   */
  private volatile QuietTimer quietTimer;

  /**
   * A gate with the given parameters; call {@link #start()} to begin the control loop. Users get
   * one from {@link Breakwater#newServerGate}; package-private so that the scheme stays the only
   * way in, and its options the only options.
   */
  BreakwaterServerGate(BreakwaterConfig config, ServerEnvironment environment) {
    this(config, environment, false);
  }

  /**
   * As above; with {@code keepLastCredit} a session whose window would fall to zero on a response
   * that is not a drop keeps C_oc credits instead (eq. 4, at least one), so that only sessions
   * whose requests were dropped drain. This is the Protego authors' distribution
   * (bw2_server.c, srpc_update_credit: "prioritize the session"), for {@link ProtegoServerGate}
   * only; Breakwater's own gate never sets it.
   */
  BreakwaterServerGate(BreakwaterConfig config, ServerEnvironment environment,
      boolean keepLastCredit) {
    this(config, environment, keepLastCredit, 0);
  }

  /**
   * As above; with {@code admissionUpdateNanos > 0} the pool is also updated on an admission when
   * that long has passed since its last update, so that it follows the queue at that pace while
   * the timer ({@link BreakwaterConfig#controlPeriodNanos}) wakes up far less often. The timer's
   * runs then only update the pool when no admission has for that long (an idle or drained
   * server), and the timer runs every period only while a drained session waits for an explicit
   * credit, otherwise every hundred ({@link QuietTimer#QUIET_PERIODS}). For {@link Spillway},
   * whose timer period has a floor for the JVM's sake.
   */
  BreakwaterServerGate(BreakwaterConfig config, ServerEnvironment environment,
      boolean keepLastCredit, long admissionUpdateNanos) {
    this(config, environment, keepLastCredit, admissionUpdateNanos, false, false);
  }

  /**
   * As above; with {@code followsCreditsOut} the pool's size follows the credits out: a decrease
   * is measured from them while earlier cuts are still being taken back ({@link
   * CreditPolicy#nextPoolSizeFromIssued}) instead of compounding eq. 2 over every period, and the
   * pool starts from the server's parallelism by doubling while all of it is out ({@link
   * CreditPolicy#startUp}) instead of growing by A an update. With {@code growOnlyIfUsed} eq. 1
   * grows the pool only while it is in use, C_issued + n_c ≥ C_total ({@link
   * CreditPolicy#growOnlyIfUsed}, which gives the reason). Both for {@link Spillway}; the paper's
   * Breakwater has neither.
   */
  BreakwaterServerGate(BreakwaterConfig config, ServerEnvironment environment,
      boolean keepLastCredit, long admissionUpdateNanos, boolean followsCreditsOut, boolean growOnlyIfUsed) {
    this(config, environment, keepLastCredit, admissionUpdateNanos, followsCreditsOut,
        growOnlyIfUsed, null);
  }

  /**
   * As above, steering to the d_t and AQM threshold of {@code share} ({@link QueueShare}: what the
   * handlers' residence leaves of the SLO), which this gate's permits feed, where not null.
   */
  BreakwaterServerGate(BreakwaterConfig config, ServerEnvironment environment,
      boolean keepLastCredit, long admissionUpdateNanos, boolean followsCreditsOut, boolean growOnlyIfUsed,
      QueueShare share) {
    this.share = share;
    this.followsCreditsOut = followsCreditsOut;
    this.growOnlyIfUsed = growOnlyIfUsed;
    if (admissionUpdateNanos < 0) {
      throw new IllegalArgumentException("admissionUpdateNanos must not be negative: " + admissionUpdateNanos);
    }
    this.admissionUpdateNanos = admissionUpdateNanos;
    if (config == null || environment == null) {
      throw new NullPointerException(config == null ? "config" : "environment");
    }
    this.config = config;
    this.environment = environment;
    this.queueDelay = environment.queueDelay();
    this.control = environment.control();
    this.metrics = environment.metrics();
    this.minimumPool = environment.parallelism();
    this.total = minimumPool;
    this.keepLastCredit = keepLastCredit;
  }

  @Override
  public synchronized void start() {
    if (controlLoop == null) {
      updates.restart(environment.ticker().read());
      if (admissionUpdateNanos == 0) {
        controlLoop = environment.scheduler().every(config.controlPeriodNanos(),
            () -> timerUpdate(environment.ticker().read()));
      } else {
        QuietTimer timer = new QuietTimer(environment.scheduler(),
            environment.ticker(), config.controlPeriodNanos(),
            quietPeriodNanos(config.controlPeriodNanos()), () -> {
              timerUpdate(environment.ticker().read());
              return drainedWaiting();
            }, this::drainedWaiting);
        quietTimer = timer;
        controlLoop = timer;
        timer.start();
      }
    }
  }

  /**
   * How often the timer runs while no drained session waits, where admissions update the pool:
   * every {@link QuietTimer#QUIET_PERIODS} periods, and no more whole periods than fit in a
   * quarter of {@link #SESSION_IDLE_TIMEOUT_NANOS}, so that idle sessions are still swept on time.
   */
  static long quietPeriodNanos(long periodNanos) {
    long periods = Math.min(QuietTimer.QUIET_PERIODS,
        SESSION_IDLE_TIMEOUT_NANOS / 4 / periodNanos);
    return Math.max(1, periods) * periodNanos;
  }

  /** Whether the control loop sleeps its quiet period ({@link QuietTimer}); false for the paper's. */
  boolean controlLoopQuiet() {
    QuietTimer timer = quietTimer;
    return timer != null && timer.isQuiet();
  }

  /** Whether a drained session may wait for an explicit credit: a live entry in the queue. */
  private boolean drainedWaiting() {
    return drainedEntries.get() > closedInDrained.get();
  }

  @Override
  public synchronized void close() {
    if (controlLoop != null) {
      controlLoop.cancel();
    }
  }

  @Override
  public ServerPermit admit(RequestMetadata request, long nowNanos) {
    Session session = sessions.get(request.sessionId());
    boolean registering = false;
    if (session == null) {
      long origin = request.origin();
      if (origin != 0 && !enterNewcomerLine(origin,
          2 * queueDelay.queueingDelayNanos(nowNanos) >= targetDelayNanos())) {
        metrics.onAdmission(Status.REJECTED_NO_CREDIT);
        return new Unregistered(request.sessionId());
      }
      // The registering request carries its own credit (Breakwater §3), so the session starts
      // with a window of one; from a named origin the credit is provisional (see Newcomers).
      Session fresh = new Session(request.sessionId(), 1, records.incrementAndGet());
      fresh.lastActive = nowNanos;
      fresh.probation = origin != 0;
      fresh.origin = origin;
      Session existing;
      // Counted under the new session's monitor: once in the table, another request of it may
      // end its probation (graduate) or a deregistration may close it, and either must find its
      // credit and its place among the probationers already counted, or C_issued and n_c drift.
      synchronized (fresh) {
        existing = sessions.putIfAbsent(request.sessionId(), fresh);
        if (existing == null) {
          if (fresh.probation) {
            probationers.incrementAndGet();
          } else {
            issued.incrementAndGet();
          }
          sessionCount.incrementAndGet();
        }
      }
      if (existing == null) {
        session = fresh;
        registering = true;
      } else { // registered meanwhile by another request
        if (origin != 0) {
          leaveNewcomerLine(origin, true, true);
        }
        session = existing;
      }
    }
    Status decision = Status.OK;
    synchronized (session) {
      if (session.closed) {
        // Deregistered while this request was on its way: nothing to account against.
        decision = Status.REJECTED_NO_CREDIT;
      } else {
        session.lastActive = nowNanos;
        session.demand = request.demand();
        session.drained = false; // lazily removed from the drained queue
        if (session.pending >= (growOnlyIfUsed ? session.ceiling()
            : Math.min(session.ceiling(), config.perSessionCap()))) {
          decision = Status.REJECTED_NO_CREDIT;
          if (issued.get() >= total) { // credits are scarce: what it takes, another waits for
            session.refused(config.perSessionCap());
          }
        } else {
          session.pending++;
          if (session.probation && !registering) {
            graduate(session); // it came back on the credit it was given: not an invented id
          }
          if (config.aqm() && queueDelay.queueingDelayNanos(nowNanos) >= dropThresholdNanos()) {
            decision = Status.REJECTED_AQM;
          }
        }
        session.arrived(nowNanos, share != null);
      }
    }
    metrics.onAdmission(decision);
    if (admissionUpdateNanos > 0) {
      updates.runIfDue(nowNanos, admissionUpdateNanos);
    }
    return new Permit(session, decision, decision != Status.REJECTED_NO_CREDIT,
        registering && request.origin() != 0);
  }

  /**
   * Takes a place among the sessions on probation of {@code origin} for a session registering now,
   * if the origin has fewer than {@link #NEWCOMERS_PER_ORIGIN}; and, while a queue forms (queueing
   * delay at or above d_t/2), if fewer than one session's share of the pool, {@code max(1, C_total
   * / n_c)}, of its registering requests are in the server (class comment, "Newcomers").
   */
  private boolean enterNewcomerLine(long origin, boolean queueForming) {
    long share = Math.max(1, total / Math.max(1, activeSessions()));
    boolean[] entered = new boolean[1];
    newcomers.compute(origin, (key, line) -> {
      Newcomers n = line == null ? new Newcomers() : line;
      if (n.onProbation >= NEWCOMERS_PER_ORIGIN || (queueForming && n.inServer >= share)) {
        return line;
      }
      n.onProbation++;
      n.inServer++;
      entered[0] = true;
      return n;
    });
    return entered[0];
  }

  /**
   * Gives back what {@link #enterNewcomerLine} took: a session's place when its probation ends,
   * its registering request's when that is answered.
   */
  private void leaveNewcomerLine(long origin, boolean probationEnds, boolean requestEnds) {
    newcomers.computeIfPresent(origin, (key, n) -> {
      if (probationEnds) {
        n.onProbation--;
      }
      if (requestEnds) {
        n.inServer--;
      }
      return n.onProbation <= 0 && n.inServer <= 0 ? null : n;
    });
  }

  /** One origin's newcomers; mutated only inside the map's per-key {@code compute}. */
  private static final class Newcomers {
    int onProbation;
    int inServer;
  }

  /** The timer's run: everything, unless an admission updated the pool within the interval. */
  private void timerUpdate(long nowNanos) {
    if (admissionUpdateNanos == 0) {
      updatePool(nowNanos);
      return;
    }
    updates.lock().lock();
    try {
      evictIdleSessions(nowNanos);
      if (updates.claim(nowNanos, admissionUpdateNanos)) {
        updatePoolSize(nowNanos);
      }
    } finally {
      updates.lock().unlock();
    }
  }

  /**
   * {@inheritDoc}
   *
   * <p>With demand speculation the report changes nothing (only piggybacked demand counts); the
   * session's window is restated as it stands, once per report, in a stamped message with no
   * change: a client sends one when its window is in doubt and lets nothing go ({@link
   * BreakwaterClientGate}). A session with requests pending needs none, their answers carry the
   * window. With demand synchronisation the demand is taken and the window recomputed (eq. 4–6)
   * as the authors' server does, and the result stamped as every credit message.
   */
  @Override
  public void onDemand(long sessionId, int demand, long nowNanos) {
    Session session = sessions.get(sessionId);
    if (session == null) {
      // A client reports demand only for a session it has registered with a request (§3.3), so
      // this one left, was evicted, or was never registered: a stale message or an invented id.
      // Registering it would hand out a credit no request brought, and a client could collect
      // one for every id it makes up.
      return;
    }
    int delta;
    int window;
    long seq;
    synchronized (session) {
      if (session.closed || session.pending > 0) {
        return; // a response is coming and will carry the window
      }
      session.lastActive = nowNanos;
      if (config.demandSpeculation()) {
        delta = 0;
      } else {
        session.demand = demand;
        delta = redistribute(session, false, true, false, nowNanos);
        if (delta == 0) {
          return;
        }
      }
      window = session.window;
      seq = session.nextSeq();
    }
    metrics.onControlMessage();
    control.sendCredit(sessionId, delta, window, seq);
  }

  @Override
  public void deregister(long sessionId, long nowNanos) {
    Session session = sessions.remove(sessionId);
    if (session == null) {
      return;
    }
    synchronized (session) {
      if (session.closed) {
        return;
      }
      close(session);
    }
    sessionCount.decrementAndGet();
  }

  /**
   * Closes a session taken out of the table: its credits leave C_issued (or its probation place
   * is freed). Caller holds its monitor.
   */
  private void close(Session session) {
    session.closed = true;
    if (session.probation) {
      session.probation = false; // its credit was never in C_issued
      probationers.decrementAndGet();
      leaveNewcomerLine(session.origin, true, false);
    } else {
      issued.addAndGet(-session.window);
    }
    session.window = 0;
    session.drained = false;
    if (session.queued) {
      closedInDrained.incrementAndGet();
    }
  }

  /**
   * Removes closed sessions' entries from the drained queue once they are at least {@link
   * #PRUNE_MIN} and half of it, so that a scan's cost is paid for by the closings behind it.
   */
  private void pruneDrained() {
    int closed = closedInDrained.get();
    if (closed < PRUNE_MIN || 2L * closed < drainedEntries.get()) {
      return;
    }
    closedInDrained.addAndGet(-closed);
    drained.removeIf(session -> {
      synchronized (session) {
        if (session.closed && session.queued) {
          session.queued = false;
          drainedEntries.decrementAndGet();
          return true;
        }
        return false;
      }
    });
  }

  /** Entries in the drained queue, closed sessions' included. For tests and diagnostics. */
  int drainedQueueLength() {
    return drainedEntries.get();
  }

  /** C_total, the current size of the credit pool. */
  public long poolSize() {
    return total;
  }

  /** d_t now: the config's, or what the handlers leave of the SLO ({@link QueueShare}). */
  private long targetDelayNanos() {
    return share != null ? share.typical().targetDelayNanos() : config.targetDelayNanos();
  }

  /** The AQM threshold now, likewise. */
  private long dropThresholdNanos() {
    return share != null ? share.typical().dropThresholdNanos() : config.dropThresholdNanos();
  }

  /** C_issued, credits currently held by sessions (in flight plus unused). */
  public long issuedCredits() {
    return issued.get();
  }

  /**
   * n_c as eq. 1–6 count it: sessions registered and off probation. A session on probation holds
   * no credit of the pool's (class comment, "Newcomers"), so it takes no share of it either: counted,
   * sessions that never come back would raise the pool's ceiling (64·n_c) and the room Spillway's
   * pool may grow into (C_issued + n_c), and shrink everyone's C_oc.
   */
  int activeSessions() {
    return sessionCount.get() - probationers.get();
  }

  /** Sessions currently registered, those on probation included. */
  public int sessionCount() {
    return sessionCount.get();
  }

  /** The window a session holds, or -1 if it is not registered. For tests and diagnostics. */
  public int windowOf(long sessionId) {
    Session session = sessions.get(sessionId);
    if (session == null) {
      return -1;
    }
    synchronized (session) {
      return session.window;
    }
  }

  /** The configuration this gate runs with. */
  public BreakwaterConfig config() {
    return config;
  }

  /**
   * One control period: resize the pool from the queueing delay (eq. 1–3) and hand open credits to
   * drained sessions. Runs on the environment's scheduler, which is how a driver that keeps its
   * own time (the simulator, a benchmark) ticks the gate; tests in this package call it directly.
   */
  void updatePool(long nowNanos) {
    evictIdleSessions(nowNanos);
    updatePoolSize(nowNanos);
  }

  /** Eq. 1–3 and the explicit credits, without the idle-session sweep. */
  private void updatePoolSize(long nowNanos) {
    int n = activeSessions();
    long delay = queueDelay.queueingDelayNanos(nowNanos);
    if (share != null) {
      share.retarget(nowNanos);
    }
    long target = targetDelayNanos();
    long next;
    if (followsCreditsOut) {
      long out = issued.get();
      next = CreditPolicy.nextPoolSizeFromIssued(total, out, delay, target,
          config.alpha(), config.beta(), n);
      if (startingUp) {
        switch (CreditPolicy.startUp(doubled, total, out, delay, target)) {
          case DOUBLE -> {
            next = Math.max(next, 2 * total);
            doubled = true;
          }
          case OVER -> startingUp = false;
          case HOLD -> { }
        }
      }
    } else {
      next = CreditPolicy.nextPoolSize(total, delay, target, config.alpha(),
          config.beta(), n);
    }
    if (delay >= target || !resized) {
      lastAtTarget = nowNanos;
    }
    long shortfall = residenceShortfall.getAndSet(0);
    if (shortfall > 0 && resized) {
      next = CreditPolicy.coverResidenceShortfall(total, next, shortfall, delay, target,
          nowNanos - lastResize, share.typicalResidenceNanos(), nowNanos - lastAtTarget);
    }
    lastResize = nowNanos;
    resized = true;
    if (growOnlyIfUsed) {
      next = CreditPolicy.growOnlyIfUsed(total, next, issued.get(), n);
    }
    // With the elastic cap no session's window stops the pool: it is bounded by its use instead.
    next = CreditPolicy.clampPoolSize(next, minimumPool,
        growOnlyIfUsed ? Integer.MAX_VALUE : config.perSessionCap(), n);
    resizePool(next, n);
  }

  /**
   * Sessions with nothing in flight that have sent neither a request nor a demand for this long
   * are deregistered and their credits return to the pool. Breakwater's clients deregister when
   * they leave (§3); this bounds what a client that leaves without saying so, or that invents
   * session ids, leaves behind: each would otherwise hold its window and count in n_c, which sets
   * the pool's ceiling (64 · n_c) and every session's share, for ever. Ten seconds is far longer
   * than any control loop here reacts in, so a live session is never taken by it; one that comes
   * back is registered again by its next request, which carries its own credit.
   */
  public static final long SESSION_IDLE_TIMEOUT_NANOS = 10_000_000_000L;

  private long lastSweep;
  private boolean swept;

  /**
   * Deregisters idle sessions ({@link #SESSION_IDLE_TIMEOUT_NANOS}); sweeps the table at most
   * every quarter of the timeout, so the cost is O(n_c) a few times a minute, not per period.
   * On the control loop's thread.
   */
  void evictIdleSessions(long nowNanos) {
    if (!swept) {
      swept = true;
      lastSweep = nowNanos;
      return;
    }
    if (nowNanos - lastSweep < SESSION_IDLE_TIMEOUT_NANOS / 4) {
      return;
    }
    lastSweep = nowNanos;
    sessions.forEach(session -> {
      boolean idle;
      synchronized (session) {
        idle = !session.closed && session.pending == 0
            && nowNanos - session.lastActive >= SESSION_IDLE_TIMEOUT_NANOS;
      }
      if (idle) {
        deregisterIfIdle(session.id, nowNanos);
      }
    });
  }

  /**
   * {@link #deregister}, unless the session became active since it was found idle. The check and
   * the removal are made under the session's monitor, which an admission takes too, so a request
   * admitted meanwhile keeps its session.
   */
  private void deregisterIfIdle(long sessionId, long nowNanos) {
    Session session = sessions.get(sessionId);
    if (session == null) {
      return;
    }
    int revoked;
    long seq;
    synchronized (session) {
      if (session.closed || session.pending > 0
          || nowNanos - session.lastActive < SESSION_IDLE_TIMEOUT_NANOS
          || !sessions.remove(sessionId, session)) {
        return;
      }
      revoked = session.window - 1;
      seq = session.nextSeq();
      close(session);
    }
    sessionCount.decrementAndGet();
    if (revoked != 0) {
      // The client still counts its window; a returning session is registered with one credit
      // (its next request's), so the client is told to keep only that one and the two ledgers
      // agree again. A drained session (no window) is given that one: waiting for an explicit
      // credit from a server that no longer holds it, it would wait for ever.
      metrics.onControlMessage();
      control.sendCredit(sessionId, -revoked, 1, seq);
    }
    // A client that reads only deltas mends its count by the one above only if the count was
    // right. A transport with a channel per session ends it, and the client starts again afresh.
    control.sessionEnded(sessionId);
  }

  /**
   * Sets C_total to {@code next} (already clamped) and, while credits are open, sends one explicit
   * credit to each drained session in FIFO order. The second half of {@link #updatePool}; shared
   * with {@link ProtegoServerGate}, whose pool size comes from Algorithm 1 instead of eq. 1–3.
   *
   * @param n n_c as read for this update, reported to the metrics
   */
  void resizePool(long next, int n) {
    total = next;
    long open = next - issued.get();
    while (open > 0) {
      Session session = drained.poll();
      if (session == null) {
        break;
      }
      drainedEntries.decrementAndGet();
      long seq = 0;
      synchronized (session) {
        session.queued = false;
        if (session.drained && !session.closed && session.window == 0 && session.pending == 0) {
          session.drained = false;
          session.window = 1;
          seq = session.nextSeq();
        }
      }
      if (seq != 0) {
        issued.incrementAndGet();
        open--;
        metrics.onControlMessage();
        control.sendCredit(session.id, 1, 1, seq);
      }
    }
    if (growOnlyIfUsed && open <= 0 && drainedEntries.get() > closedInDrained.get()) {
      markShort(environment.ticker().read()); // drained sessions wait for a credit the pool lacks
    }
    pruneDrained();
    metrics.onCreditPool(next, issued.get(), n);
  }

  /**
   * Notes that a session within the cap was left short ({@link #sessionCap}). Under overload nearly
   * every answer finds one, on every core, so the shared fields are written at most once a quarter
   * of d_t (a read of a line no one writes is cheap; a write on each answer would bounce it between
   * cores); the mark then never lapses while sessions stay short.
   */
  private void markShort(long nowNanos) {
    if (!shortSeen || nowNanos - shortAt >= targetDelayNanos() / 4) {
      shortAt = nowNanos;
      shortSeen = true;
    }
  }

  /**
   * The largest window {@code session} may have after its next answer. The paper's gate: the
   * per-session cap. With the elastic cap: no limit but eq. 5's open credits while no session
   * within the cap has lately been short of credits (within d_t), else the larger of the cap and
   * the session's window less one, so that a window above the cap gives back one credit an answer,
   * the step of eq. 6, until the short sessions have theirs. Caller holds the session's monitor.
   */
  private int sessionCap(Session session, long nowNanos) {
    int cap = config.perSessionCap();
    if (!growOnlyIfUsed) {
      return cap;
    }
    if (shortSeen && nowNanos - shortAt <= targetDelayNanos()) {
      return Math.max(cap, session.window - 1);
    }
    return Integer.MAX_VALUE;
  }

  /**
   * Ends a session's probation: its provisional credit joins C_issued and its place in its
   * origin's line is freed. Caller holds its monitor.
   */
  private void graduate(Session session) {
    session.probation = false;
    probationers.decrementAndGet();
    issued.addAndGet(session.window);
    leaveNewcomerLine(session.origin, true, false);
  }

  /**
   * Recomputes a session's window (eq. 4–6); caller holds the session's monitor.
   *
   * @param dropped whether the response being sent reports a drop (for {@code keepLastCredit})
   * @param mayGrow false for the answer to a request refused for credit: a session that sent
   *     beyond its window earns no credit by it. Only such a session is ever refused for credit
   *     (a well-behaved one never is, see {@code Session.ceiling}); if its refusals could grow its
   *     window, a client that resends every refusal at once would take each credit the moment it
   *     is free, ahead of every session that waits for its answers.
   * @param payDebt true for the answer to an admitted request: it pays one credit of the
   *     session's {@code Session.debt}, if any, by taking back a credit not in flight (see the
   *     class comment)
   */
  private int redistribute(Session session, boolean dropped, boolean mayGrow, boolean payDebt,
      long nowNanos) {
    if (session.probation) {
      return 0; // it keeps the one provisional credit it registered with until it comes back
    }
    long poolTotal = total;
    long poolIssued = issued.get();
    int n = Math.max(1, activeSessions());
    long overcommit = config.demandSpeculation()
        ? CreditPolicy.overcommit(poolTotal, poolIssued, n) : 0;
    long residenceWindow = 0;
    if (share != null) {
      long residence = share.typicalResidenceNanos();
      long target = share.typical().targetDelayNanos();
      if (residence > target && queueDelay.queueingDelayNanos(nowNanos) < target / 2) {
        // Handlers hold calls longer than the queue may: a call that finds the window full would
        // wait about a residence for the next answer's credit (CreditPolicy.windowForResidence).
        // Only while the queue leaves room: spare credits let a session's bursts in at once, and
        // where part of the queue is not seen (a lock, a carrier wait after a block) its delay
        // shows too late.
        residenceWindow = CreditPolicy.windowForResidence(residence, session.interval, target);
        overcommit = Math.max(overcommit, residenceWindow - session.pending - session.demand);
      }
    }
    int cap = sessionCap(session, nowNanos);
    int next = CreditPolicy.nextWindow(session.window, session.pending, session.demand, poolTotal,
        poolIssued, overcommit, cap);
    long wanted = (long) session.pending + session.demand + overcommit;
    if (growOnlyIfUsed && next < wanted) {
      if (poolIssued >= poolTotal && next < config.perSessionCap()) {
        markShort(nowNanos); // within the cap and short of credits: windows above it give back
      } else if (wanted > config.perSessionCap() && mayGrow && share != null) {
        // Beyond the cap, what eq. 5 could not grant grows the pool as a residence window does.
        residenceShortfall.addAndGet(wanted - Math.max(next, config.perSessionCap()));
      }
    }
    if (keepLastCredit && next == 0 && session.window > 0 && !dropped) {
      // "if (old_credit > 0 && s->credit == 0 && !req_dropped) s->credit = max_overprovision"
      next = (int) Math.min(overcommit, config.perSessionCap());
    }
    if (next < residenceWindow && mayGrow) {
      residenceShortfall.addAndGet(residenceWindow - next); // the pool grows by it (below)
    }
    if (!mayGrow) {
      next = Math.min(next, session.window);
    }
    if (payDebt && session.debt > 0 && session.window > session.pending) {
      session.debt--; // paid with a credit taken back, eq. 6's step; in-flight ones cannot be
      next = Math.min(next, session.window - 1);
    }
    int delta = next - session.window;
    if (delta < 0) {
      session.revoking();
    }
    if (delta != 0) {
      session.window = next;
      issued.addAndGet(delta);
    }
    if (next == 0 && session.pending == 0 && !session.drained
        && (config.demandSpeculation() || session.demand > 0)) {
      // With speculation every drained session may get an explicit credit; with demand
      // synchronisation only those that said they have demand (the authors' server does the same).
      session.drained = true;
      if (!session.queued) {
        session.queued = true; // at most one queue entry per session, however often it drains
        drainedEntries.incrementAndGet();
        drained.add(session);
        QuietTimer timer = quietTimer;
        if (timer != null) {
          timer.wake(); // after the entry is counted: see QuietTimer
        }
      }
    }
    return delta;
  }

  private final class Permit extends AbstractServerPermit {
    private final Session session;
    private final boolean counted;
    /** The request that registered its session on probation: its origin's count of them. */
    private final boolean registeringOnProbation;

    /** When its handler got it, for the residence {@link QueueShare} measures. */
    private long startedAt;
    private volatile boolean started;

    Permit(Session session, Status status, boolean counted, boolean registeringOnProbation) {
      super(status);
      this.session = session;
      this.counted = counted;
      this.registeringOnProbation = registeringOnProbation;
    }

    @Override
    public void started(long nowNanos) {
      if (share != null && isAdmitted() && !started) {
        startedAt = nowNanos;
        started = true;
      }
    }

    @Override
    protected void onComplete(Outcome outcome, long nowNanos, ResponseMetadata response) {
      if (started) {
        share.record(nowNanos - startedAt, nowNanos);
      }
      if (registeringOnProbation) {
        leaveNewcomerLine(session.origin, false, true);
      }
      int delta = 0;
      int window = 0;
      long seq = 0;
      synchronized (session) {
        if (!session.closed) {
          if (counted) {
            session.pending--;
          }
          session.lastActive = nowNanos;
          delta = redistribute(session, outcome == Outcome.DROPPED || outcome == Outcome.ABORTED,
              counted, counted, nowNanos);
          window = session.window;
          seq = session.nextSeq();
        }
      }
      response.sessionId(session.id).credit(delta, window, seq);
      metrics.onCompletion(outcome);
    }
  }

  /**
   * A registering request refused, {@code REJECTED_NO_CREDIT}: its origin has its limit of
   * sessions on probation, nothing was registered, and the client keeps the credit it counted for
   * the request for its next one (delta 0; class comment, "Newcomers").
   */
  private final class Unregistered extends AbstractServerPermit {
    private final long sessionId;

    Unregistered(long sessionId) {
      super(Status.REJECTED_NO_CREDIT);
      this.sessionId = sessionId;
    }

    @Override
    protected void onComplete(Outcome outcome, long nowNanos, ResponseMetadata response) {
      response.sessionId(sessionId).creditDelta(0);
      metrics.onCompletion(outcome);
    }
  }

  /** Per-session credit state; fields guarded by the session's monitor. */
  private static final class Session {
    final long id;
    int window;
    int pending;
    int demand;
    /**
     * Registered from a named origin, and no request of it admitted since the one that registered
     * it: it has not come back on the credit it was given (class comment, "Newcomers"). While it
     * is, its window is its one provisional credit, not counted in C_issued, and it holds a place
     * among its origin's sessions on probation.
     */
    boolean probation;
    /** The {@link RequestMetadata#origin} of its registering request. */
    long origin;
    /** Wants an explicit credit: no window, nothing pending. */
    boolean drained;
    /** Has an entry in the drained queue (possibly stale if {@link #drained} was cleared). */
    boolean queued;
    boolean closed;
    /** The last request, demand or completion, by the gate's ticker. */
    long lastActive;
    /**
     * The largest window the client may still believe it holds while a revocation is on its way
     * to it, and how many more of its requests may arrive before it has certainly read the
     * revocation. See {@link #ceiling()}.
     */
    int graceWindow;
    int graceArrivals;
    /**
     * Requests refused for credit and not yet paid for, at most the per-session cap: each answer
     * to an admitted request takes back one credit while this is positive (see the class comment).
     */
    int debt;
    /**
     * The mean time between this session's requests (an exponentially weighted mean, weight 1/8),
     * 0 until two have arrived; for {@link CreditPolicy#windowForResidence}.
     */
    long interval;
    long lastArrival;
    /** Requests seen so far, counted up to 2: whether {@link #lastArrival} and {@link #interval} hold. */
    int arrivals;

    /**
     * The last {@link ResponseMetadata#creditSeq()} stamped: this record's number in the high 32
     * bits, its messages counted in the low 32.
     */
    long seq;

    Session(long id, int window, int record) {
      this.id = id;
      this.window = window;
      this.seq = (long) record << 32;
    }

    /** Stamps the next credit message; the count skips 0, so no stamp reads as "none". */
    long nextSeq() {
      long next = (seq & 0xFFFF_FFFF_0000_0000L) | ((seq + 1) & 0xFFFF_FFFFL);
      if ((int) next == 0) {
        next++;
      }
      seq = next;
      return next;
    }

    /**
     * How many of this session's requests may be in flight at the server: its window, or, while a
     * revocation may not have reached the client yet, the window it held before.
     *
     * <p>The window is what the server has granted, counting credits still on their way to the
     * client (a grant raises it before the response that carries it is sent), so grants never
     * race a request. Revocations do (eq. 6, and eq. 5 when demand falls): a response lowers the
     * window at once, but the client spends its old window until it reads that response. Every
     * request it sends before then and that reaches the server after the revocation left is still
     * in flight, at the client, when the revoking response arrives (responses on a connection
     * arrive in order, and each of these is answered after the revoking one); so is every request
     * pending at the server, and the answered request itself. The client had at most its old
     * window in flight, so at most {@code old window − pending − 1} such requests arrive. The old
     * window stays the limit for that many arrivals, plus one: two responses completed at once on
     * different threads may reach the connection in the other order. After them the client has
     * certainly read the revocation and its window is the limit again. A client that ignores its
     * credits gains at most one request per revocation.
     */
    int ceiling() {
      return graceArrivals > 0 ? Math.max(window, graceWindow) : window;
    }

    /**
     * The window is about to shrink; {@link #pending} no longer counts the request being answered.
     * Keeps the old limit for the requests that may be on their way ({@link #ceiling()}).
     */
    void revoking() {
      int before = ceiling();
      graceWindow = before;
      graceArrivals = Math.max(0, before - pending);
    }

    /** A request of this session was refused for credit: one more credit owed, up to {@code cap}. */
    void refused(int cap) {
      if (debt < cap) {
        debt++;
      }
    }

    /**
     * A request of this session arrived (admitted or not) at {@code nowNanos}; with {@code
     * timed}, its gap from the last one goes into {@link #interval} (only a gate with a {@link
     * QueueShare} reads it).
     */
    void arrived(long nowNanos, boolean timed) {
      if (graceArrivals > 0) {
        graceArrivals--;
      }
      if (!timed) {
        return;
      }
      if (arrivals > 0) {
        long gap = nowNanos - lastArrival;
        interval = arrivals == 1 ? gap : interval + (gap - interval) / 8;
      }
      if (arrivals < 2) {
        arrivals++;
      }
      lastArrival = nowNanos;
    }
  }
}
