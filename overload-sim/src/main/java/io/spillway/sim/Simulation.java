package io.spillway.sim;

import io.spillway.api.Cancellable;
import io.spillway.api.ClientEnvironment;
import io.spillway.api.ClientGate;
import io.spillway.api.ControlChannel;
import io.spillway.api.LockWaitRule;
import io.spillway.api.Outcome;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.OverloadScheme;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.RequestBudget;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.RetryBudget;
import io.spillway.api.Scheduler;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.ServerPermit;
import io.spillway.api.Status;
import io.spillway.api.Ticker;
import io.spillway.api.TimestampedQueue;
import io.spillway.api.internal.LockWaitEstimator;
import io.spillway.sim.EventQueue.Event;
import java.util.ArrayDeque;
import java.util.List;
import java.util.SplittableRandom;

/**
 * One simulated run: N clients, a server with a number of cores, a network with a fixed RTT, and
 * one {@link OverloadScheme} whose real gates make every decision. Virtual time; deterministic for
 * a seed.
 *
 * <p>The model (breakwater-osdi20 §2.2, §3.1, §4):
 * <ul>
 *   <li>Clients issue requests by one aggregate open-loop Poisson process whose rate is demand ×
 *       capacity, each arrival going to a uniformly chosen client (the same as N independent
 *       Poisson clients). Requests wait in the client gate until it releases them.
 *   <li>Messages cross the network in RTT/2.
 *   <li>The server's cores take work in this order: explicit control messages to send, received
 *       messages to parse (each costs {@code cost_rx}), then admitted requests (service time, then
 *       {@code cost_tx} to send the response). Parsing a message that is rejected costs {@code
 *       cost_rx + cost_tx}. Messages are processed before requests, as a kernel's receive path
 *       preempts application threads, so a flood of messages starves request processing (receive
 *       livelock) as the paper describes for AQM at high demand.
 *   <li>The queueing-delay signal is the sum of the receive queue's and the run queue's delays,
 *       each {@code now − oldest item} ({@link TimestampedQueue}).
 * </ul>
 *
 * <p>Mutex paths (Protego Fig. 1, scenario key {@code paths}): a request takes path i with its
 * probability and holds that path's mutex for its service time, or, with {@code path_hold_us},
 * for the end of it (the part before runs on a core with no lock held: memcached's SET parses and
 * hashes before it takes {@code slabs_lock}, protego-nsdi23 §5.3); a path whose hold is 0 takes
 * no mutex. {@code path_service_us} gives each path its own mean service time. With {@code
 * lock_handoff = fifo} (default) the releasing holder hands the mutex to the oldest waiter, which
 * holds it while it waits for a core (Shenango's mutex, a fair lock: under CPU overload the hold
 * grows by the run queue's wait, a lock convoy); with {@code barging} the mutex is freed, the
 * oldest waiter woken, and whoever reaches it first while it is free takes it (a nonfair {@code
 * ReentrantLock}, which {@code BudgetedLock} wraps). A request that finds the mutex
 * held waits in the mutex's FIFO without a core (its thread parks); the holder hands the mutex to
 * the oldest waiter, which goes back to the run queue. Under ASQM (schemes {@code protego} and
 * {@code protego-asqm}) each admitted request gets Protego's queueing budget (§3.2), and before
 * entering the run queue or a mutex's queue it is aborted with a fast {@code REJECTED_BUDGET} if
 * that queue's delay does not fit its remaining budget; time spent queueing is charged to it. The
 * run queue's delay is {@code now − oldest}; a mutex's is its {@link LockWaitEstimator}'s (scenario
 * key {@code asqm.wait_estimate}), fed with the hand-offs as {@code BudgetedLock} feeds it. The
 * calls are the real {@link RequestBudget#fits}, {@link RequestBudget#charge}, {@link
 * LockWaitEstimator#waitNanos} and {@link LockWaitEstimator#onQueuedAcquire}, the ones {@code
 * BudgetedLock} makes. The mutex covers the service time (the critical section); the response is
 * then sent from the same core. Breakwater's signal does not include mutex queues: it cannot see
 * lock contention, which is the point of the experiment.
 *
 * <p>Shared locks (scenario key {@code shared_locks}): every request takes each of them in turn as
 * its service starts, holding it {@code shared_lock_hold_us} on its core and releasing it before
 * the next (a search pinning every shard's reader, examples-lucene's {@code ShardedIndex.acquire}),
 * then runs its path as above; it waits for a held one in its FIFO, and under ASQM is refused there
 * as at a path's mutex, by the same calls. {@code shared_lock_handoff} sets their hand-off apart
 * from the paths' ({@code lock_handoff}'s by default). With {@code maintenance_period_ms}, a
 * maintenance thread holds them in turn, round robin, one every period: a background holder such
 * as the Lucene service's refresh, which re-indexes and reopens a shard under its lock. It takes
 * the lock with the plain acquire ({@code BudgetedLock.lock}): never refused, it queues in the
 * lock's FIFO behind the requests already waiting, its wait counts in the lock's queueing delay as
 * any waiter's does, and its hand-off feeds the lock's {@link LockWaitEstimator}. Its hold is CPU
 * work on a thread of its own, so it runs on a core, taking the next free one ahead of the requests'
 * run queue (the OS schedules it beside the handlers, not behind the application's queue), and
 * holds that core for the drawn hold. Its runs never overlap: one due while the previous still
 * waits or holds starts when that one ends, as a fixed-rate scheduled task does.
 *
 * <p>A request sent with a queueing budget in its header ({@link RequestMetadata#budgetNanos()},
 * e.g. Breakwater's {@code breakwater.budget_us}) is aborted with {@code REJECTED_BUDGET}, unrun,
 * if a core would pick it up when that budget, counted from its parsing, is spent: the
 * transport's rule at dispatch.
 *
 * <p>Replicas (scenario key {@code replicas}, protego-nsdi23 §5.3, Fig. 8): several servers, each
 * with the scenario's cores, locks and its own gate. A client keeps one session, with its own
 * credits, per server (docs/design.md: credits are per backend). With {@code replica_routing =
 * primary} (two servers, Protego's setting) every request goes to server 1 first; one that server
 * 1 turns away with a fast reject, or that expires in the client's queue for server 1 (Protego's
 * locally generated failure message), is sent once more to server 2 if the client's {@link
 * RetryBudget} allows ({@code retry_share}). With {@code round_robin} a request goes to the server
 * whose session has the fewest requests queued, looking from a start that rotates per client,
 * and its retry to another server chosen the same way: overload-grpc's {@code
 * SpillwayBalancedChannel} with {@code Policy.ROUND_ROBIN}; a plain client's requests rotate, as
 * gRPC's {@code round_robin} policy spreads them. A retry's latency counts from its first
 * arrival, its wait in the new server's client queue from the retry. With {@code replica_speeds}
 * a server's every CPU cost (parse, service, lock hold, reply) takes its time over the server's
 * speed: a smaller machine, or one whose core is shared.
 *
 * <p>Clients that do not speak Spillway (scenario key {@code plain_share}, docs/design.md "Clients
 * that do not speak Spillway"): that share of requests, drawn per request, carries no session,
 * demand, credit or token and is sent at once, past the client gate; the server's gate sees
 * session 0, as it does for a gRPC or HTTP client without Spillway's headers. A refusal ends the
 * call (such a client does not retry here); an answer is good within the SLO, as any other. A
 * request the server does not run costs its core {@code cost_rx} to parse and {@code cost_reject}
 * to answer (gRPC answers a refusal without running the call: docs/results/grpc.md measures
 * 15–18 µs a refusal against 268–280 µs a served call). With {@code plain_pushback} such a client
 * honours the pushback its refusals carry, as the Spring starter's HTTP client side does
 * ({@code RetryPushback}): the server's queueing delay at the refusal, in whole milliseconds, at
 * least one; until then the client sends nothing, and requests it issues fail in the client
 * (counted with those that expire in client queues).
 *
 * <p>Handlers that block (scenario key {@code block_us}): after its service time a handler gives up
 * its core for that long (a downstream call, a database) on its own thread, as a virtual thread or
 * one of many platform threads does, and its continuation then waits in the run queue for a core to
 * send the response. So requests in flight are many times the cores while few wait for one. The
 * server tells its gate when a core first takes a request ({@link ServerPermit#started}), as the
 * gRPC, native and HTTP hosts do; with {@code report_starts = false} it does not, as a host that
 * cannot say when its handlers start.
 *
 * <p>With {@code closedLoop > 0} the run instead keeps that many requests outstanding, each
 * client re-issuing as soon as its response arrives: how capacity is measured (one server).
 *
 * <p>Not thread-safe; one run per instance, on one thread.
 */
final class Simulation {

  private static final long MILLI = 1_000_000;

  private static final int ARRIVAL = 0;
  private static final int SERVER_RX = 1;
  private static final int CORE_DONE = 2;
  private static final int CLIENT_RX = 3;
  private static final int CLIENT_WAKEUP = 4;
  private static final int TASK = 5;
  private static final int STEP = 6;
  private static final int MAINTENANCE_DUE = 7;
  private static final int SCRIPTED_ARRIVAL = 8;

  private final Scenario scenario;
  private final OverloadScheme scheme;
  private final List<Scenario.DemandStep> steps;
  private final double capacityRps;
  private final int closedLoop;
  private final long origin;
  private final long halfRtt;
  private final long rxCost;
  private final long txCost;
  private final long rejectCost;
  private final double plainShare;
  /** Whether plain clients honour a refusal's pushback ({@code plain_pushback}). */
  private final boolean plainPushback;
  private final long blockNanos;
  private final boolean reportStarts;
  private final SplittableRandom plainRandom;
  private final long slo;
  private final long endNanos;
  private final Recorder recorder;
  private final boolean asqm;
  private final long budgetNanos;
  private final double[] pathCdf;
  /** Per path: its mean service time over the scenario's, and the share of it under the mutex. */
  private final double[] pathServiceScale;
  private final double[] pathHoldShare;
  private final boolean barging;
  private final SplittableRandom pathRandom;
  /** Shared locks: how many every request takes, each one's hold, and their hand-off. */
  private final int sharedLockCount;
  private final long sharedHold;
  private final boolean sharedBarging;
  /** The thread that holds the shared locks in turn; {@code null} without one. */
  private final Maintenance maintenance;
  private final SplittableRandom maintenanceRandom;
  /** Draws which answers are lost ({@code lost_answers}). */
  private final SplittableRandom lostRandom;
  private final double lostAnswers;
  /** Whether credit messages keep their stamps ({@code credit_stamps}); false: deltas alone. */
  private final boolean creditStamps;
  /** Tests: arrival times replacing the Poisson process, and who hears of each answer. */
  private long[] scriptedArrivals;
  private int scriptedNext;
  private ResponseTrace trace;

  private final SplittableRandom arrivalRandom;
  private final SplittableRandom serviceRandom;
  private final SplittableRandom clientRandom;
  private final EventQueue events = new EventQueue();
  private long now;

  /** The servers; which takes a request is {@link #route}'s choice. */
  private final Server[] servers;
  private final boolean roundRobin;
  /** Each client's one session serves every replica, its calls sent to them in turn. */
  private final boolean sharedSession;
  /** Per logical client, where its next round-robin choice starts looking. */
  private final int[] rotation;
  /** Per logical client, its retry budget; {@code null} with one server. */
  private final RetryBudget[] retryBudgets;
  private double arrivalRatePerNano;
  private int stepIndex;
  private Event pendingArrival;
  private long nextRequestId;

  private final RequestMetadata requestHeader = new RequestMetadata();
  private final RequestMetadata outgoingHeader = new RequestMetadata();

  /**
   * @param steps the demand schedule (a single step for a steady run)
   * @param capacityRps what demand level 1.0 means
   * @param closedLoop requests kept outstanding in closed-loop mode, or 0 for open loop
   * @param recorder where results go
   */
  Simulation(Scenario scenario, OverloadScheme scheme, List<Scenario.DemandStep> steps,
      double capacityRps, int closedLoop, long endNanos, Recorder recorder, long seed) {
    this(scenario, scheme, steps, capacityRps, closedLoop, endNanos, recorder, seed, false);
  }

  /** As above; {@code asqm} turns on Protego's budgeted run queue and mutexes. */
  Simulation(Scenario scenario, OverloadScheme scheme, List<Scenario.DemandStep> steps,
      double capacityRps, int closedLoop, long endNanos, Recorder recorder, long seed, boolean asqm) {
    this.scenario = scenario;
    this.scheme = scheme;
    this.steps = steps;
    this.capacityRps = capacityRps;
    this.closedLoop = closedLoop;
    this.origin = scenario.timeOriginNanos();
    this.halfRtt = scenario.rttNanos() / 2;
    this.rxCost = scenario.rxCostNanos();
    this.txCost = scenario.txCostNanos();
    this.rejectCost = scenario.rejectCostNanos();
    this.plainShare = scenario.plainShare();
    this.plainPushback = scenario.plainPushback();
    this.blockNanos = scenario.blockNanos();
    this.reportStarts = scenario.reportStarts();
    this.slo = scenario.sloNanos();
    this.endNanos = endNanos;
    this.recorder = recorder;
    SplittableRandom root = new SplittableRandom(seed);
    this.arrivalRandom = root.split();
    this.serviceRandom = root.split();
    this.clientRandom = root.split();
    this.pathRandom = root.split(); // split late: runs without paths draw exactly as before
    this.plainRandom = root.split(); // likewise for runs without plain clients
    this.maintenanceRandom = root.split(); // and without maintenance
    this.lostRandom = root.split(); // and without lost answers
    this.lostAnswers = scenario.lostAnswers();
    this.creditStamps = scenario.creditStamps();
    this.asqm = asqm;
    this.budgetNanos = scenario.asqmBudgetNanos();
    double[] paths = scenario.paths();
    this.pathCdf = new double[paths.length];
    double cumulative = 0;
    for (int i = 0; i < paths.length; i++) {
      cumulative += paths[i];
      pathCdf[i] = cumulative;
    }
    this.pathServiceScale = scenario.pathServiceScales();
    this.pathHoldShare = scenario.pathHoldShares();
    this.barging = scenario.lockBarging();
    this.sharedLockCount = scenario.sharedLocks();
    this.sharedHold = scenario.sharedLockHoldNanos();
    this.sharedBarging = scenario.sharedLockBarging();
    this.maintenance = scenario.maintenance();

    int n = closedLoop > 0 ? closedLoop : scenario.clients();
    int replicas = closedLoop > 0 ? 1 : scenario.replicas(); // capacity: one server's, at speed 1
    double[] speeds = scenario.replicaSpeeds();
    this.servers = new Server[replicas];
    for (int k = 0; k < replicas; k++) {
      servers[k] = new Server(k, n, closedLoop > 0 ? 1 : speeds[k]);
    }
    this.sharedSession = replicas > 1 && scenario.sharedSession();
    this.roundRobin = replicas > 1 && scenario.roundRobin() && !sharedSession;
    this.rotation = roundRobin || sharedSession ? new int[n] : null;
    if (sharedSession) { // every server's client i is the same session: one gate, one id
      for (int k = 1; k < replicas; k++) {
        for (int i = 0; i < n; i++) {
          servers[k].clients[i] = new Client(servers[0].clients[i].sessionId, i, servers[k],
              servers[0].clients[i].gate);
        }
      }
    }
    if (replicas > 1) {
      this.retryBudgets = new RetryBudget[n];
      for (int i = 0; i < n; i++) {
        retryBudgets[i] = RetryBudget.of(scenario.retryShare());
      }
    } else {
      this.retryBudgets = null;
    }
  }

  /** Hears of every answer a client receives (tests). */
  interface ResponseTrace {
    /** Request {@code id}, issued at {@code issuedNanos}, was answered with {@code status} at {@code atNanos}. */
    void response(long id, long issuedNanos, long atNanos, Status status);
  }

  /**
   * Tests: requests are issued at exactly these simulated times (ascending), to clients 0, 1, ...
   * in turn, besides the demand schedule's arrivals (give it level 0 for these alone); request ids
   * count from 0 in issue order. Call before {@link #run}.
   */
  Simulation scriptArrivals(long... issueNanos) {
    this.scriptedArrivals = issueNanos.clone();
    return this;
  }

  /** Tests: {@code trace} hears of every answer. Call before {@link #run}. */
  Simulation trace(ResponseTrace trace) {
    this.trace = trace;
    return this;
  }

  /** Runs to the end and returns the recorder. */
  Recorder run() {
    for (Server s : servers) {
      s.gate.start();
    }
    if (closedLoop > 0) {
      for (Client c : servers[0].clients) {
        issue(c);
      }
    } else {
      for (int i = 1; i < steps.size(); i++) {
        schedule(steps.get(i).startNanos(), STEP, null);
      }
      applyStep(0);
      scheduleNextArrival();
      if (scriptedArrivals != null) {
        for (long t : scriptedArrivals) {
          schedule(t, SCRIPTED_ARRIVAL, null);
        }
      }
    }
    if (maintenance != null) {
      for (Server s : servers) {
        schedule(maintenance.startNanos(), MAINTENANCE_DUE, s);
      }
    }
    for (Event e = events.next(endNanos); e != null; e = events.next(endNanos)) {
      now = e.time;
      dispatch(e);
      for (Server s : servers) {
        s.startIdleCores();
      }
    }
    for (Server s : servers) {
      s.gate.close();
    }
    return recorder;
  }

  private void dispatch(Event e) {
    switch (e.type) {
      case ARRIVAL -> {
        Client[] first = servers[0].clients;
        issue(first[clientRandom.nextInt(first.length)]);
        scheduleNextArrival();
      }
      case SERVER_RX -> {
        Message m = (Message) e.payload;
        m.client.server.receiveQueue.offer(m, origin + now);
      }
      case CORE_DONE -> {
        Message m = (Message) e.payload;
        (m.client != null ? m.client.server : m.server).coreDone(m);
      }
      case CLIENT_RX -> clientReceive((Message) e.payload);
      case CLIENT_WAKEUP -> clientWakeup((Client) e.payload, e.time);
      case TASK -> ((Runnable) e.payload).run();
      case MAINTENANCE_DUE -> {
        ((Server) e.payload).maintenanceDue();
        schedule(now + maintenance.periodNanos(), MAINTENANCE_DUE, e.payload); // at a fixed rate
      }
      case SCRIPTED_ARRIVAL -> {
        Client[] first = servers[0].clients;
        issue(first[scriptedNext++ % first.length]);
      }
      case STEP -> {
        applyStep(stepIndex + 1);
        // Exponential gaps are memoryless: redrawing the next arrival at the new rate is exact.
        if (pendingArrival != null) {
          pendingArrival.cancelled = true;
        }
        scheduleNextArrival();
      }
      default -> throw new IllegalStateException("unknown event " + e.type);
    }
  }

  // ---------------------------------------------------------------- clients

  /**
   * The server a logical client's request goes to, not {@code avoid} (the one that just turned
   * it away; -1 for none): server 1 first, then server 2 ({@code primary}); or the server whose
   * session with this client has the fewest requests queued, from a start that rotates per
   * client, the first such in that order ({@code round_robin}, as SpillwayBalancedChannel picks);
   * a plain client's requests, with no session to ask, rotate.
   */
  private int route(int client, int avoid, boolean plain) {
    if (!roundRobin) {
      return avoid < 0 ? 0 : 1;
    }
    int n = servers.length;
    int start = rotation[client];
    rotation[client] = (start + 1) % n;
    int best = -1;
    int bestQueued = Integer.MAX_VALUE;
    for (int k = 0; k < n; k++) {
      int i = (start + k) % n;
      if (i == avoid) {
        continue;
      }
      if (plain) {
        return i;
      }
      int queued = servers[i].clients[client].gate.queued();
      if (queued < bestQueued) {
        best = i;
        bestQueued = queued;
        if (queued == 0) {
          break;
        }
      }
    }
    return best;
  }

  private void issue(Client caller) {
    boolean plain = plainShare > 0 && (plainShare >= 1 || plainRandom.nextDouble() < plainShare);
    Client c = roundRobin ? servers[route(caller.index, -1, plain)].clients[caller.index]
        : sharedSession && plain ? nextInTurn(caller) : caller;
    long service = scenario.service().sample(serviceRandom);
    int path = -1;
    if (pathCdf.length > 0) {
      double u = pathRandom.nextDouble();
      path = 0;
      while (path < pathCdf.length - 1 && u >= pathCdf[path]) {
        path++;
      }
      service = Math.round(service * pathServiceScale[path]);
    }
    Request r = new Request(nextRequestId++, c, now, service);
    if (path >= 0) {
      r.path = path;
      r.locks = pathHoldShare[path] > 0;
      r.hold = pathHoldShare[path] == 1 ? service : Math.round(service * pathHoldShare[path]);
    }
    recorder.at(now).offered++;
    if (plain) {
      sendPlain(r);
      return;
    }
    if (retryBudgets != null) {
      retryBudgets[c.index].onCall();
    }
    if (!c.gate.offer(r, origin + now)) {
      if (!retry(r, Status.REJECTED_LIMIT)) {
        recorder.at(now).expired++;
        reissueIfClosedLoop(c);
      }
      return;
    }
    drain(c);
  }

  /**
   * Sends a request that ended with {@code status} to the next server, if it was the first
   * attempt, ended with a fast reject, and its client's retry budget has a token (protego-nsdi23
   * §5.3; {@link RetryBudget}); whether it did.
   */
  private boolean retry(Request r, Status status) {
    if (sharedSession || retryBudgets == null || !RetryBudget.isRetryable(status, r.attempt)
        || !retryBudgets[r.client.index].tryRetry()) {
      return false;
    }
    recorder.at(now).retried++;
    Client c = servers[route(r.client.index, r.client.server.index, false)].clients[r.client.index];
    Request again = new Request(nextRequestId++, c, r.arrival, r.service);
    again.attempt = r.attempt + 1;
    again.path = r.path;
    again.locks = r.locks;
    again.hold = r.hold;
    // its latency counts from the first attempt's arrival (r.arrival); its wait in this
    // server's client queue, and so its expiry there, from now
    if (!c.gate.offer(again, origin + now)) {
      recorder.at(now).expired++;
      return true;
    }
    drain(c);
    return true;
  }

  /** A request from a client that does not speak Spillway: no session, no client gate, sent now. */
  private void sendPlain(Request r) {
    Client c = r.client;
    if (c.held && now - c.heldUntil < 0) {
      recorder.at(now).expired++; // failed in the client, unsent, as the pushback asked
      reissueIfClosedLoop(c);
      return;
    }
    c.held = false;
    r.plain = true;
    r.sentAt = now;
    recorder.at(now).sent++;
    Message m = new Message(Message.REQUEST, r.client);
    m.request = r;
    schedule(now + halfRtt, SERVER_RX, m);
  }

  private void drain(Client c) {
    while (true) {
      outgoingHeader.reset();
      Request r = c.gate.poll(origin + now, outgoingHeader);
      if (r == null) {
        break;
      }
      r.sentAt = now;
      r.demand = outgoingHeader.demand();
      r.flags = outgoingHeader.flags();
      r.priority = outgoingHeader.priority();
      r.creditId = outgoingHeader.creditId();
      r.tokens = outgoingHeader.tokens();
      r.budgetNanos = outgoingHeader.budgetNanos();
      recorder.at(now).sent++;
      if (sharedSession) {
        r.client = nextInTurn(c); // the balancer below the session picks the next server
      }
      Message m = new Message(Message.REQUEST, r.client);
      m.request = r;
      schedule(now + halfRtt, SERVER_RX, m);
    }
    int demand = c.gate.takeDemandReport();
    if (demand >= 0) {
      Message m = new Message(Message.DEMAND, c);
      m.demand = demand;
      recorder.at(now).demandMessages++;
      schedule(now + halfRtt, SERVER_RX, m);
    }
    armWakeup(c);
  }

  /** Client {@code c}'s self at the next server in its turn ({@code shared_session}). */
  private Client nextInTurn(Client c) {
    int k = rotation[c.index];
    rotation[c.index] = (k + 1) % servers.length;
    return servers[k].clients[c.index];
  }

  private void armWakeup(Client c) {
    if (c.wakeup.arm(c.gate, origin, now)) {
      schedule(c.wakeup.at(), CLIENT_WAKEUP, c);
    }
  }

  private void clientWakeup(Client c, long time) {
    if (!c.wakeup.fire(time)) {
      return; // superseded by an earlier wakeup
    }
    c.gate.expire(origin + now, r -> {
      if (!retry(r, Status.EXPIRED)) {
        recorder.at(now).expired++;
        reissueIfClosedLoop(r.client);
      }
    });
    drain(c);
  }

  private void clientReceive(Message m) {
    Client c = m.client;
    if (!creditStamps) {
      m.response.credit(m.response.creditDelta(), 0, 0);
    }
    if (m.type == Message.CREDIT) {
      c.gate.onControl(m.response, origin + now);
    } else {
      Request r = m.request;
      if (!r.plain && lostAnswers > 0 && lostRandom.nextDouble() < lostAnswers) {
        // Its caller gave up after it was sent: the answer, and what it carried, is never read.
        // Without stamps the driver ends it as a failed answer with no credit, as drivers did
        // before the gates could be told (ClientGate#onUnanswered).
        ResponseMetadata none = new ResponseMetadata().sessionId(c.sessionId).status(Status.FAILED);
        if (creditStamps) {
          c.gate.onUnanswered(none, origin + r.sentAt, origin + now);
        } else {
          c.gate.onResponse(none, origin + r.sentAt, origin + now);
        }
        recorder.at(now).unread++;
        reissueIfClosedLoop(c);
        drain(c);
        return;
      }
      if (!r.plain) { // a plain client has no gate to tell, and does not retry
        c.gate.onResponse(m.response, origin + r.sentAt, origin + now);
      }
      Tally t = recorder.at(now);
      if (trace != null) {
        trace.response(r.id, r.arrival, now, m.response.status());
      }
      if (m.response.status() == Status.OK) {
        long latency = now - r.arrival;
        t.completed++;
        if (latency <= slo) {
          t.good++;
        }
        t.latency.recordValue(Math.max(1, latency));
        reissueIfClosedLoop(c);
      } else {
        t.rejectsReceived++;
        t.rejectDelaySumNanos += now - r.sentAt;
        t.recordRejectDelay(now - r.sentAt);
        if (r.plain || !retry(r, m.response.status())) {
          t.rejectedFinal++;
          reissueIfClosedLoop(c);
        }
      }
      if (r.plain) {
        if (plainPushback && m.response.status() != Status.OK && m.pushbackNanos > 0) {
          long until = now + m.pushbackNanos;
          c.heldUntil = c.held && c.heldUntil - until > 0 ? c.heldUntil : until;
          c.held = true;
        }
        return;
      }
    }
    drain(c);
  }

  private void reissueIfClosedLoop(Client c) {
    if (closedLoop > 0) {
      issue(c);
    }
  }

  private void applyStep(int index) {
    stepIndex = index;
    arrivalRatePerNano = steps.get(index).level() * capacityRps / 1e9;
    recorder.demandChanged(now, steps.get(index).level());
  }

  private void scheduleNextArrival() {
    pendingArrival = null;
    if (arrivalRatePerNano <= 0) {
      return; // an idle step: the next step schedules the next arrival
    }
    double gap = -Math.log(1.0 - arrivalRandom.nextDouble()) / arrivalRatePerNano;
    pendingArrival = schedule(now + Math.max(1, Math.round(gap)), ARRIVAL, null);
  }

  // ---------------------------------------------------------------- server

  /**
   * One server: its cores, receive, run and send queues, mutexes, and its own gate; {@link
   * #clients} are the clients' sessions with it. With one server, the single-server model above.
   */
  private final class Server {
    final int index;
    final ServerGate gate;
    final Client[] clients;
    final Mutex[] mutexes;
    /** The locks every request takes in turn as its service starts ({@code shared_locks}). */
    final Mutex[] sharedLocks;
    /** The maintenance thread's run that is ready for a core (due, or handed its lock). */
    final ArrayDeque<Request> maintenanceReady = new ArrayDeque<>(1);
    /** Whether the maintenance thread is in a run (waiting for its lock or a core, or holding). */
    boolean maintenanceBusy;
    /** Runs that came due while the previous had not ended; each starts when the one before ends. */
    int maintenancePending;
    int nextMaintenanceLock;
    final TimestampedQueue<Message> receiveQueue = new TimestampedQueue<>(1024);
    final TimestampedQueue<Request> runQueue = new TimestampedQueue<>(1024);
    final ArrayDeque<Message> sendQueue = new ArrayDeque<>();
    /** The queueing delay the gate steers by, which a refusal's pushback reports. */
    final QueueDelaySignal queueDelay;
    /** Its CPU costs take their time over this ({@code replica_speeds}). */
    final double speed;
    int idleCores;

    Server(int index, int clientCount, double speed) {
      this.index = index;
      this.speed = speed;
      this.idleCores = scenario.cores();
      this.mutexes = new Mutex[pathCdf.length];
      for (int i = 0; i < mutexes.length; i++) {
        mutexes[i] = new Mutex(scenario.lockWaitRule(), barging, false);
      }
      this.sharedLocks = new Mutex[sharedLockCount];
      for (int i = 0; i < sharedLocks.length; i++) {
        sharedLocks[i] = new Mutex(scenario.lockWaitRule(), sharedBarging, true);
      }
      Ticker ticker = () -> origin + now;
      Scheduler scheduler = events.scheduler(TASK, () -> now);
      QueueDelaySignal delay = QueueDelaySignal.sum(receiveQueue, runQueue);
      this.queueDelay = delay;
      ControlChannel control = CreditMessages.channel(this::sendCredit);
      this.gate = scheme.newServerGate(new ServerEnvironment(ticker, scheduler, delay, control,
          OverloadMetrics.NONE, scenario.cores(), scenario.reportStarts()));
      this.clients = new Client[clientCount];
      for (int i = 0; i < clientCount; i++) {
        long sessionId = i + 1;
        clients[i] = new Client(sessionId, i, this,
            scheme.newClientGate(new ClientEnvironment(sessionId, slo, OverloadMetrics.NONE)));
      }
    }

    void sendCredit(long sessionId, ResponseMetadata message) {
      Message m = new Message(Message.CREDIT, clients[(int) (sessionId - 1)]);
      m.response = message;
      sendQueue.add(m);
    }

    void startIdleCores() {
      while (idleCores > 0) {
        Message out = sendQueue.poll();
        if (out != null) {
          busy(txCost, out);
          recorder.at(now).creditMessages++;
          continue;
        }
        Message in = receiveQueue.poll();
        if (in != null) {
          in.phase = Message.PHASE_PARSE;
          busy(rxCost, in);
          continue;
        }
        Request ready = maintenanceReady.poll();
        if (ready != null) {
          runMaintenance(ready); // a thread of its own, ahead of the requests' run queue
          continue;
        }
        if (!runQueue.isEmpty()) {
          long enqueued = runQueue.oldestEnqueueNanos();
          Request r = runQueue.poll();
          if (r.resumed) {
            // back from blocking off-core: the handler's continuation sends the response
            Message m = new Message(Message.RESPONSE, r.client);
            m.request = r;
            m.phase = Message.PHASE_EXECUTE;
            busy(txCost, m);
            continue;
          }
          if (!r.started && r.budgetNanos != Long.MAX_VALUE && now - r.startBy >= 0) {
            // its budget is spent before it runs: the transport's rule, at dispatch only; one back
            // from a lock wait is in its handler (and may hold the lock it was handed)
            abort(r);
            continue;
          }
          if (r.budget != null) {
            r.budget.charge(origin + now - enqueued); // time waiting for a core
          }
          if (!r.started) {
            r.started = true;
            if (reportStarts) {
              r.permit.started(origin + now); // the handler has the request
            }
          }
          if (r.shared < sharedLocks.length) {
            passSharedLocks(r);
          } else {
            serve(r);
          }
          continue;
        }
        break;
      }
    }

    /**
     * Takes the shared locks from the request's next one on, each released before the next (a
     * search pinning every shard's reader), then serves it. A lock held by another (the
     * maintenance thread, or a request) is waited for in its FIFO as a path's mutex is, and under
     * ASQM refused when that wait would not fit the budget: {@code BudgetedLock.acquireWithinBudget}.
     * Called with a core free.
     */
    private void passSharedLocks(Request r) {
      while (r.shared < sharedLocks.length) {
        Mutex lock = sharedLocks[r.shared];
        if (lock.holder != r) {
          if (lock.holder != null) {
            waitOrRefuse(r, lock);
            return;
          }
          lock.holder = r;
        }
        if (sharedHold > 0) {
          Message m = new Message(Message.RESPONSE, r.client);
          m.request = r;
          m.phase = Message.PHASE_SHARED;
          busy(sharedHold, m);
          return;
        }
        release(lock); // held for no simulated time
        r.shared++;
      }
      serve(r);
    }

    /** Runs the request's service: the part before its path's mutex, or the critical section. */
    private void serve(Request r) {
      if (r.locks && !r.lockHeld && r.service - r.hold > 0 && !r.lockDone) {
        // the part of the service before the critical section, on this core, no lock held
        r.lockDone = true;
        Message m = new Message(Message.RESPONSE, r.client);
        m.request = r;
        m.phase = Message.PHASE_BEFORE_LOCK;
        busy(r.service - r.hold, m);
        return;
      }
      lockAndRun(r);
    }

    /** A maintenance run comes due: it starts now, or when the thread's current run ends. */
    void maintenanceDue() {
      if (maintenanceBusy) {
        maintenancePending++;
      } else {
        startMaintenance();
      }
    }

    private void startMaintenance() {
      maintenanceBusy = true;
      Request run = new Request(-1, null, now, maintenance.sampleHold(maintenanceRandom));
      run.maintenance = true;
      run.shared = nextMaintenanceLock;
      nextMaintenanceLock = (nextMaintenanceLock + 1) % sharedLocks.length;
      maintenanceReady.add(run);
    }

    /**
     * The maintenance thread, on a core: takes its lock with the plain acquire (never refused: it
     * queues in the lock's FIFO, as a request does, and its waiting counts in the lock's queueing
     * delay, as {@code BudgetedLock.lock} joins the waiter line), then holds it on this core for its
     * hold. Called with a core free.
     */
    private void runMaintenance(Request run) {
      Mutex lock = sharedLocks[run.shared];
      if (lock.holder != run) {
        if (lock.holder != null) {
          lock.waiters.offer(run, origin + now); // parks: the core is free for others
          return;
        }
        lock.holder = run;
      }
      Message m = new Message(Message.RESPONSE, null);
      m.server = this; // a maintenance run's: no client
      m.request = run;
      m.phase = Message.PHASE_MAINTENANCE;
      busy(run.service, m);
    }

    /**
     * A request that finds {@code lock} held: under ASQM, refused at once when the wait the lock
     * makes it expect would not fit its budget ({@code BudgetedLock.acquireWithinBudget}); otherwise
     * it joins the lock's FIFO and its core is free for others.
     */
    private void waitOrRefuse(Request r, Mutex lock) {
      if (r.budget != null && !r.budget.fits(lock.waits.waitNanos(
          lock.waiters.queueingDelayNanos(origin + now), lock.waiters.size()))) {
        abort(r); // costs this core the reject
      } else {
        lock.waiters.offer(r, origin + now);
      }
    }

    /**
     * Takes the request's mutex (waiting in its FIFO, or aborting under ASQM when the wait would not
     * fit the budget) and runs the critical section; a request whose path takes no mutex, or that
     * already holds it, runs at once. Called with a core free.
     */
    private void lockAndRun(Request r) {
      if (r.locks && !r.lockHeld) {
        Mutex mutex = mutexes[r.path];
        if (mutex.holder != null) {
          waitOrRefuse(r, mutex);
          return;
        }
        mutex.holder = r;
        r.lockHeld = true;
      }
      Message m = new Message(Message.RESPONSE, r.client);
      m.request = r;
      if (blockNanos > 0) {
        m.phase = Message.PHASE_BLOCK; // the service, then the handler blocks off-core
        busy(r.service, m);
        return;
      }
      m.phase = Message.PHASE_EXECUTE;
      busy(r.lockHeld ? r.hold : r.service + txCost, m);
    }

    private void busy(long nanos, Message m) {
      idleCores--;
      schedule(now + (speed == 1 ? nanos : Math.max(1, Math.round(nanos / speed))), CORE_DONE, m);
    }

    void coreDone(Message m) {
      idleCores++;
      Tally t = recorder.at(now);
      if (m.phase == Message.PHASE_PARSE) {
        t.messagesIn++;
        if (m.type == Message.DEMAND) {
          gate.onDemand(m.client.sessionId, m.demand, origin + now);
          return;
        }
        Request r = m.request;
        t.received++;
        requestHeader.reset().sessionId(r.plain ? 0 : m.client.sessionId).requestId(r.id)
            .demand(r.demand).flags(r.flags).priority(r.priority).creditId(r.creditId)
            .tokens(r.tokens).budgetNanos(r.budgetNanos);
        ServerPermit permit = gate.admit(requestHeader, origin + now);
        if (permit.isAdmitted()) {
          r.permit = permit;
          if (r.budgetNanos != Long.MAX_VALUE) {
            r.startBy = now + r.budgetNanos;
          }
          if (asqm) {
            r.budget = RequestBudget.of(Math.min(budgetNanos, r.budgetNanos));
            if (!r.budget.fits(runQueue.queueingDelayNanos(origin + now))) {
              abort(r); // the parsing core sends the reject
              return;
            }
          }
          runQueue.offer(r, origin + now);
        } else {
          t.dropped++;
          Message reject = new Message(Message.RESPONSE, m.client);
          reject.request = r;
          reject.response = new ResponseMetadata();
          permit.complete(Outcome.DROPPED, origin + now, reject.response);
          reject.phase = Message.PHASE_SEND;
          reject.pushbackNanos = plainPushback ? pushbackNanos() : 0;
          busy(rejectCost, reject);
        }
        return;
      }
      if (m.phase == Message.PHASE_BEFORE_LOCK) {
        lockAndRun(m.request);
        return;
      }
      if (m.phase == Message.PHASE_SHARED) {
        Request r = m.request;
        release(sharedLocks[r.shared]);
        r.shared++;
        passSharedLocks(r);
        return;
      }
      if (m.phase == Message.PHASE_MAINTENANCE) {
        release(sharedLocks[m.request.shared]);
        maintenanceBusy = false;
        if (maintenancePending > 0) {
          maintenancePending--;
          startMaintenance();
        }
        return;
      }
      if (m.phase == Message.PHASE_BLOCK) {
        Request r = m.request;
        r.resumed = true;
        schedule(now + blockNanos, TASK, (Runnable) () -> runQueue.offer(r, origin + now));
        return;
      }
      if (m.phase == Message.PHASE_EXECUTE) {
        m.response = new ResponseMetadata();
        m.request.permit.complete(Outcome.SUCCESS, origin + now, m.response);
        if (m.request.lockHeld) {
          release(mutexes[m.request.path]); // the critical section ends; the core goes on to send
          m.phase = Message.PHASE_SEND;
          busy(txCost, m);
          return;
        }
      }
      // PHASE_EXECUTE, PHASE_SEND and credits: the message leaves now.
      t.messagesOut++;
      schedule(now + halfRtt, CLIENT_RX, m);
    }

    /** An admitted request gives up (ASQM): its permit ends ABORTED and a reject is sent from a core. */
    private void abort(Request r) {
      recorder.at(now).dropped++;
      Message reject = new Message(Message.RESPONSE, r.client);
      reject.request = r;
      reject.response = new ResponseMetadata();
      r.permit.complete(Outcome.ABORTED, origin + now, reject.response);
      reject.phase = Message.PHASE_SEND;
      reject.pushbackNanos = plainPushback ? pushbackNanos() : 0;
      busy(rejectCost, reject);
    }

    /**
     * The pushback a refusal carries, as the Spring starter's HTTP gate writes it: the queueing
     * delay now, in whole milliseconds rounded up, at least one.
     */
    private long pushbackNanos() {
      long delay = queueDelay.queueingDelayNanos(origin + now);
      return Math.max(1, (delay + MILLI - 1) / MILLI) * MILLI;
    }

    /**
     * The holder is done: the oldest waiter becomes runnable, holding the mutex (a FIFO hand-off,
     * scenario key {@code lock_handoff = fifo}) or to take it if it is still free when it runs
     * ({@code barging}).
     */
    private void release(Mutex mutex) {
      if (mutex.waiters.isEmpty()) {
        mutex.holder = null;
        return;
      }
      long enqueued = mutex.waiters.oldestEnqueueNanos();
      Request next = mutex.waiters.poll();
      if (next.budget != null) {
        next.budget.charge(origin + now - enqueued); // time waiting for the mutex
      }
      mutex.waits.onQueuedAcquire(enqueued, origin + now); // both on the controllers' clock
      if (mutex.barging) {
        // a nonfair lock: the mutex is free now; the woken waiter takes it if it is still free when
        // a core runs it, and queues again behind whoever took it first
        mutex.holder = null;
      } else {
        mutex.holder = next;
        if (!mutex.shared) {
          next.lockHeld = true;
        }
      }
      if (next.maintenance) {
        maintenanceReady.add(next); // its own thread, not the requests' run queue
      } else {
        runQueue.offer(next, origin + now);
      }
    }
  }

  private static final class Mutex {
    Request holder;
    final TimestampedQueue<Request> waiters = new TimestampedQueue<>();
    final LockWaitEstimator waits;
    /** Whether a release frees it for anyone ({@code barging}) rather than handing it on. */
    final boolean barging;
    /** One of the shared locks (its holder is known by {@link #holder} alone). */
    final boolean shared;

    Mutex(LockWaitRule rule, boolean barging, boolean shared) {
      this.waits = new LockWaitEstimator(rule);
      this.barging = barging;
      this.shared = shared;
    }
  }

  // ---------------------------------------------------------------- events

  private Event schedule(long time, int type, Object payload) {
    return events.schedule(time, type, payload);
  }

  /** A client's session with one server: its gate (credits) and its wakeup timer. */
  private static final class Client {
    final long sessionId;
    /** The logical client, the same at every server. */
    final int index;
    final Server server;
    final ClientGate<Request> gate;
    final WakeupTimer wakeup = new WakeupTimer();
    /** With {@code plain_pushback}: until when a refusal asked this client not to send. */
    long heldUntil;
    boolean held;

    Client(long sessionId, int index, Server server, ClientGate<Request> gate) {
      this.sessionId = sessionId;
      this.index = index;
      this.server = server;
      this.gate = gate;
    }
  }

  static final class Request {
    final long id;
    /** The client at the server it is sent to (with {@code shared_session}, chosen at sending). */
    Client client;
    final long arrival;
    final long service;
    /** 0 for the first attempt, 1 for the retry on the next server. */
    int attempt;
    long sentAt;
    int demand;
    int flags;
    int priority;
    long creditId;
    long tokens;
    int path = -1;
    /** Whether the path takes a mutex, and for how long: the end of the service. */
    boolean locks;
    long hold;
    boolean lockHeld;
    /** The part before the critical section has run. */
    boolean lockDone;
    RequestBudget budget;
    /** The queueing budget the request was sent with ({@link RequestMetadata#budgetNanos()}). */
    long budgetNanos = Long.MAX_VALUE;
    /** With a budget: when the server aborts it if it has not started running. */
    long startBy;
    /** From a client that does not speak Spillway ({@code plain_share}). */
    boolean plain;
    /** A core has taken it (its handler has it). */
    boolean started;
    /** Back from blocking off-core ({@code block_us}), to send its response. */
    boolean resumed;
    /** The next shared lock to take; a maintenance run's: the lock it holds. */
    int shared;
    /** A maintenance thread's run, not a client's request ({@code service}: its hold). */
    boolean maintenance;
    ServerPermit permit;

    Request(long id, Client client, long arrival, long service) {
      this.id = id;
      this.client = client;
      this.arrival = arrival;
      this.service = service;
    }
  }

  private static final class Message {
    static final int REQUEST = 0;
    static final int DEMAND = 1;
    static final int RESPONSE = 2;
    static final int CREDIT = 3;
    static final int PHASE_PARSE = 0;
    static final int PHASE_EXECUTE = 1;
    static final int PHASE_SEND = 2;
    static final int PHASE_BEFORE_LOCK = 3;
    static final int PHASE_BLOCK = 4;
    static final int PHASE_SHARED = 5;
    static final int PHASE_MAINTENANCE = 6;

    final int type;
    final Client client;
    int phase = PHASE_SEND;
    Request request;
    ResponseMetadata response;
    int demand;
    /** On a refusal: how long the server asks its client to hold off. */
    long pushbackNanos;
    /** The server whose core runs it, for a message without a client (a maintenance run). */
    Server server;

    Message(int type, Client client) {
      this.type = type;
      this.client = client;
    }
  }
}
