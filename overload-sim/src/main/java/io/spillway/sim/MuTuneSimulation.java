package io.spillway.sim;

import io.spillway.api.ClientEnvironment;
import io.spillway.api.ClientGate;
import io.spillway.api.Outcome;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.OverloadScheme;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.ServerPermit;
import io.spillway.api.Status;
import io.spillway.api.Ticker;
import io.spillway.api.TimestampedQueue;
import io.spillway.threading.ArrivalRateEstimator;
import io.spillway.threading.ThreadingAdaptation;
import io.spillway.threading.ThreadingAdapter;
import io.spillway.threading.ThreadingModel;
import java.util.ArrayDeque;
import java.util.List;
import java.util.SplittableRandom;
import org.HdrHistogram.Histogram;

/**
 * µTune's synchronous mid-tier in virtual time (mutune-osdi18 §3.2, §6–§7): one network thread, a
 * worker pool, a fan-out to leaves, on a machine of a few cores, under one threading model or under
 * µTune's adaptation (the real {@link ThreadingAdapter}, driven by this clock).
 *
 * <p>What the models cost, and where each cost comes from:
 * <ul>
 *   <li><b>Wake-ups.</b> A thread that blocks (in {@code epoll_wait}, on a leaf reply, on the
 *       workers' queue) and is then given work waits {@code wakeup} before it runs: µTune measured
 *       5–64 µs (Fig. 9). It is the slow figure when the machine has an idle core to wake (an idle
 *       core sleeps, and leaving that costs most of it) and the fast one when a core is busy, or
 *       spinning, as a poller keeps its core.
 *   <li><b>Polling.</b> A network thread that polls and has no work spins on a core, keeping it;
 *       an arrival finds it already running. A thread that needs a core while every core is taken,
 *       one by a spinner, gets the spinner's core after {@code preempt} (the scheduler's slice
 *       boundary), and the spinner waits for a core like any runnable thread (§7.1.2: "poll loops
 *       ... may delay critical work scheduling").
 *   <li><b>In-line vs dispatch.</b> In-line, the network thread runs the whole request and blocks on
 *       the leaves itself, so one request is in the mid-tier at a time and the rest queue behind it
 *       on the socket. Dispatched, the network thread spends {@code handoff} of CPU per request and a
 *       worker, woken if it was blocked, runs it.
 *   <li><b>Work.</b> Every request costs the scenario's service time of CPU (half before the
 *       fan-out, half merging after) plus {@code cost_rx_us}/{@code cost_tx_us} per message in and out
 *       (the request, one request and one reply per leaf, the response).
 *   <li><b>Leaves.</b> Each leaf is a FIFO queue served by {@code leaf_cores} cores, service time
 *       {@code leaf_service} ({@code exp} or {@code const}) of mean {@code leaf_us}; a leaf request
 *       and reply each cross the network, half the scenario's {@code rtt_us} each way.
 * </ul>
 *
 * <p>Cores are handed out first come first served; a thread keeps its core through a CPU burst. The
 * simulation is deterministic for a seed. Not thread-safe.
 *
 * <p><b>Admission control in front</b> ({@link Admission}; the composition docs/results/mutune.md
 * measures): each arrival goes to one of {@code clients} sessions chosen uniformly, whose real
 * {@link ClientGate} queues it until the scheme lets it go (Breakwater's credits, breakwater-osdi20
 * §3.2, with its client-side expiry). The network thread reads each message ({@code cost_rx_us}),
 * and the real {@link ServerGate} decides on the request as its header is read, before the model
 * runs it; a refusal costs the network thread {@code cost_tx_us} more to send. Demand reports go
 * through the socket like requests. The queueing-delay signal is Breakwater's sum of the stages'
 * {@code now − oldest} (docs/design.md): the socket (where requests wait while in-line threads are
 * busy) and the workers' queue (where dispatched ones wait), so a request counts wherever the model
 * puts it, and a switch changes where requests wait, not how many. Explicit credit
 * messages cost no mid-tier CPU (Breakwater sends them rarely: only to sessions with demand and no
 * credit). Under admission, µTune's arrival estimator counts requests as they reach the mid-tier (the
 * rate the server sees, as on sockets), not as clients issue them.
 */
public final class MuTuneSimulation {

  /** The costs and shape of the service; see the class comment. */
  public record Costs(ServiceTime local, long rxNanos, long txNanos, long handoffNanos, long wakeFastNanos,
      long wakeSlowNanos, long preemptNanos, int fanout, ServiceTime leaf, int leafCores, long rttNanos,
      int cores) {
  }

  /**
   * A scheme in front of the mid-tier, with {@code clients} sessions whose SLO is {@code sloNanos}:
   * a response is good if it reaches its client within the SLO of its arrival there.
   */
  public record Admission(OverloadScheme scheme, int clients, long sloNanos) {
    public Admission {
      if (clients < 1 || sloNanos <= 0) {
        throw new IllegalArgumentException("clients and SLO must be positive: " + clients + ", " + sloNanos);
      }
    }
  }

  /**
   * One run's outcome. {@code latency} and {@code completed} cover requests that arrived after the
   * warm-up; {@code served} and {@code good} count responses reaching clients after the warm-up,
   * whenever they arrived (throughput under overload, and goodput within the SLO); {@code offered},
   * {@code rejected} (refused or aborted by the server) and {@code expired} (in a client queue) count
   * requests arriving after the warm-up. {@code admitted} and {@code ended} count server permits over
   * the whole run: the difference is what was still in the mid-tier at the end. {@code goodByStep}
   * splits {@code good} by the step of the schedule in which each response arrived. {@code
   * leafWaitNanos} is the mean time a leaf request waited for a leaf core, after the warm-up: queueing
   * the mid-tier's own signal cannot see.
   */
  public record Run(Histogram latency, long completed, double seconds, double busyCores, long switches,
      String finalModel, long served, long good, long offered, long rejected, long expired, long admitted,
      long ended, long[] goodByStep, double leafWaitNanos) {
    public double p(double percentile) {
      return latency.getTotalCount() == 0 ? Double.NaN : latency.getValueAtPercentile(percentile) / 1e3;
    }
  }

  private final Costs costs;
  private final SplittableRandom random;
  private final EventQueue events = new EventQueue();
  private long now;

  // cores
  private int freeCores;
  private final ArrayDeque<SimThread> runQueue = new ArrayDeque<>();
  private final ArrayDeque<SimThread> spinners = new ArrayDeque<>(); // on a core, spinning, no work
  private long busyCoreNanos;
  private long busySince;
  private int busyCores;

  // threads
  private final SimThread network = new SimThread(true);
  private final ArrayDeque<SimThread> idleWorkers = new ArrayDeque<>();
  private SimThread[] workers = new SimThread[0];
  private int activeWorkers;

  // requests
  private final TimestampedQueue<Request> socket = new TimestampedQueue<>(1024);    // arrived, not yet read
  private final TimestampedQueue<Request> workQueue = new TimestampedQueue<>(1024); // dispatched, not yet taken
  private final Leaf[] leaves;
  private ThreadingModel model;
  private boolean inlineNow;
  private int unfinishedDispatched;
  private long nextId;
  private long switches;

  // admission control, if any
  private final Admission admission;
  private final SplittableRandom clientRandom;
  private ServerGate gate;
  private Session[] sessions;
  private ArrivalRateEstimator serverArrivals;
  private ThreadingAdapter adapter; // null under a fixed model
  private final RequestMetadata outgoing = new RequestMetadata();

  // measurement
  private Histogram latency;
  private long measureFrom;
  private long completed;
  private long served;
  private long good;
  private long offered;
  private long rejected;
  private long expired;
  private long admitted;
  private long ended;
  private long leafWaitSum;
  private long leafWaits;
  private List<Scenario.DemandStep> schedule;
  private long[] goodByStep;

  public MuTuneSimulation(Costs costs, long seed) {
    this(costs, seed, null);
  }

  /** With {@code admission} in front of the mid-tier, or none if it is null. */
  public MuTuneSimulation(Costs costs, long seed, Admission admission) {
    this.costs = costs;
    this.random = new SplittableRandom(seed);
    this.admission = admission;
    // split only under admission: runs without it draw exactly as before
    this.clientRandom = admission == null ? null : random.split();
    this.freeCores = costs.cores();
    this.leaves = new Leaf[costs.fanout()];
    for (int i = 0; i < leaves.length; i++) {
      leaves[i] = new Leaf(costs.leafCores());
    }
  }

  /**
   * Runs {@code schedule} (rps from each step's start) for {@code durationNanos}, measuring after
   * {@code warmupNanos}, under {@code fixed}, or under {@code adaptation} if that is non-null.
   */
  public Run run(List<Scenario.DemandStep> schedule, long warmupNanos, long durationNanos, ThreadingModel fixed,
      ThreadingAdaptation adaptation) {
    int maxWorkers = adaptation == null ? fixed.workers()
        : adaptation.models().stream().mapToInt(ThreadingModel::workers).max().orElse(0);
    workers = new SimThread[maxWorkers];
    for (int i = 0; i < maxWorkers; i++) {
      workers[i] = new SimThread(false);
      workers[i].index = i;
      idleWorkers.add(workers[i]);
    }
    ArrivalRateEstimator arrivals = null;
    if (adaptation != null) {
      arrivals = new ArrivalRateEstimator(adaptation.bufferSize(), adaptation.smoothing());
      Ticker clock = () -> now;
      adapter = new ThreadingAdapter(clock, List.of(arrivals), adaptation, () -> model, this::switchTo);
      model = adaptation.profile().best(0);
      if (admission != null) {
        serverArrivals = arrivals;
        arrivals = null; // counted as they reach the mid-tier, not as clients issue them
      }
      // As on the real server: decisions ride on arrivals (ThreadingAdapter#runIfDue); a slow
      // timer lets a quiet server's estimate fall.
      long quietPeriod = adaptation.periodNanos() * ThreadingAdapter.SILENCE_PERIODS;
      Runnable[] tick = new Runnable[1];
      tick[0] = () -> {
        adapter.runIfDue(now);
        at(now + quietPeriod, tick[0]);
      };
      at(quietPeriod, tick[0]);
    } else {
      adapter = null;
      model = fixed;
    }
    if (admission != null) {
      startAdmission();
    }
    activeWorkers = model.workers();
    inlineNow = model.inline();
    switches = 0;
    latency = new Histogram(3);
    measureFrom = warmupNanos;
    this.schedule = schedule;
    goodByStep = new long[schedule.size()];
    // the network thread starts idle: spinning if it polls, else blocked
    if (model.polls()) {
      network.onCore = network::findWork;
      takeCore(network);
    }
    ArrivalRateEstimator recorder = arrivals;
    long end = warmupNanos + durationNanos;
    scheduleArrivals(schedule, end, recorder);
    for (EventQueue.Event e = events.next(end); e != null; e = events.next(end)) {
      accountBusy(e.time);
      now = e.time;
      ((Runnable) e.payload).run();
    }
    accountBusy(end);
    if (gate != null) {
      gate.close();
    }
    double seconds = durationNanos / 1e9;
    return new Run(latency, completed, seconds, busyCoreNanos / (double) (warmupNanos + durationNanos),
        switches, model.name(), served, good, offered, rejected, expired, admitted, ended, goodByStep,
        leafWaits == 0 ? 0 : leafWaitSum / (double) leafWaits);
  }

  // ------------------------------------------------------------------------------ admission

  /** A client's session: its gate and its expiry timer. */
  private final class Session {
    final long id;
    final ClientGate<Request> gate;
    final WakeupTimer wakeup = new WakeupTimer();

    Session(long id) {
      this.id = id;
      this.gate = admission.scheme().newClientGate(new ClientEnvironment(id, admission.sloNanos(),
          OverloadMetrics.NONE));
    }
  }

  private void startAdmission() {
    Ticker ticker = () -> now;
    QueueDelaySignal delay = QueueDelaySignal.sum(socket, workQueue);
    gate = admission.scheme().newServerGate(new ServerEnvironment(ticker, events.scheduler(0, () -> now), delay,
        CreditMessages.channel(this::sendCredit), OverloadMetrics.NONE, costs.cores()));
    sessions = new Session[admission.clients()];
    for (int i = 0; i < sessions.length; i++) {
      sessions[i] = new Session(i + 1);
    }
    gate.start();
  }

  /** The server's explicit credit message; it reaches the client after half an RTT. */
  private void sendCredit(long sessionId, ResponseMetadata m) {
    Session s = sessions[(int) (sessionId - 1)];
    at(now + costs.rttNanos() / 2, () -> {
      s.gate.onControl(m, now);
      drain(s);
    });
  }

  /** A request arrives at a client: into its session's queue, then out as far as the gate allows. */
  private void issue(Request r) {
    Session s = sessions[clientRandom.nextInt(sessions.length)];
    r.session = s;
    if (r.arrival >= measureFrom) {
      offered++;
    }
    if (!s.gate.offer(r, now)) {
      expire(r);
      return;
    }
    drain(s);
  }

  private void expire(Request r) {
    if (r.arrival >= measureFrom) {
      expired++;
    }
  }

  /** Sends what the session's gate releases, and its demand report if it has one. */
  private void drain(Session s) {
    while (true) {
      outgoing.reset();
      Request r = s.gate.poll(now, outgoing);
      if (r == null) {
        break;
      }
      r.sentAt = now;
      r.header = new RequestMetadata().sessionId(s.id).requestId(r.id).demand(outgoing.demand())
          .flags(outgoing.flags()).priority(outgoing.priority()).creditId(outgoing.creditId())
          .tokens(outgoing.tokens()).budgetNanos(outgoing.budgetNanos());
      at(now + costs.rttNanos() / 2, () -> arrive(r));
    }
    int demand = s.gate.takeDemandReport();
    if (demand >= 0) {
      Request report = new Request(-1, now);
      report.session = s;
      report.demandReport = demand;
      at(now + costs.rttNanos() / 2, () -> arrive(report));
    }
    if (s.wakeup.arm(s.gate, 0, now)) {
      long t = s.wakeup.at();
      at(t, () -> {
        if (s.wakeup.fire(t)) {
          s.gate.expire(now, this::expire);
          drain(s);
        }
      });
    }
  }

  /**
   * The network thread has read {@code r} (its receive cost spent): a demand report goes to the gate;
   * a request is admitted, and then {@code admittedThen} runs it, or refused, costing the send of the
   * refusal, and then {@code next}.
   */
  private void admit(SimThread t, Request r, Runnable next, Runnable admittedThen) {
    if (r.demandReport >= 0) {
      gate.onDemand(r.session.id, r.demandReport, now);
      next.run();
      return;
    }
    ServerPermit permit = gate.admit(r.header, now);
    if (permit.isAdmitted()) {
      admitted++;
      r.permit = permit;
      admittedThen.run();
      return;
    }
    ResponseMetadata response = new ResponseMetadata();
    permit.complete(Outcome.DROPPED, now, response);
    burst(t, costs.txNanos(), () -> {
      r.response = response;
      at(now + costs.rttNanos() / 2, () -> done(r));
      next.run();
    });
  }

  /** A response or a refusal reaches its client. */
  private void clientReceive(Request r) {
    Session s = r.session;
    s.gate.onResponse(r.response, r.sentAt, now);
    if (r.response.status() == Status.OK) {
      long latencyNanos = now - r.arrival;
      if (now >= measureFrom) {
        served++;
        if (latencyNanos <= admission.sloNanos()) {
          good++;
          goodByStep[stepAt(now)]++;
        }
      }
      if (r.arrival >= measureFrom) {
        latency.recordValue(Math.max(1, latencyNanos));
        completed++;
      }
    } else if (r.arrival >= measureFrom) {
      rejected++;
    }
    drain(s);
  }

  // ------------------------------------------------------------------------------ arrivals

  /**
   * An open-loop Poisson stream at each step's rate from its start. Exponential gaps are memoryless,
   * so at a step the pending arrival, drawn at the old rate, is dropped and the next one drawn at the
   * new rate: the stream changes rate at the step itself, not one old-rate gap later (at 100 rps
   * that gap averages 10 ms), and resumes after a step at rate 0.
   */
  private void scheduleArrivals(List<Scenario.DemandStep> schedule, long end, ArrivalRateEstimator rec) {
    double[] rps = {schedule.get(0).level()};
    EventQueue.Event[] pending = new EventQueue.Event[1];
    Runnable[] arrival = new Runnable[1];
    Runnable drawNext = () -> {
      pending[0] = null;
      if (rps[0] <= 0) {
        return; // an idle step: the next step draws the next arrival
      }
      long gap = (long) Math.max(1, -Math.log(1 - random.nextDouble()) / rps[0] * 1e9);
      if (now + gap < end) {
        pending[0] = events.schedule(now + gap, 0, arrival[0]);
      }
    };
    arrival[0] = () -> {
      Request r = new Request(nextId++, now);
      if (rec != null) {
        rec.record(now);
        adapter.runIfDue(now);
      }
      if (admission != null) {
        issue(r);
      } else {
        at(now + costs.rttNanos() / 2, () -> arrive(r)); // client to mid-tier
      }
      drawNext.run();
    };
    for (int i = 1; i < schedule.size() && schedule.get(i).startNanos() < end; i++) {
      double level = schedule.get(i).level();
      at(schedule.get(i).startNanos(), () -> {
        rps[0] = level;
        if (pending[0] != null) {
          pending[0].cancelled = true;
        }
        drawNext.run();
      });
    }
    drawNext.run(); // at time 0
  }

  private int stepAt(long t) {
    int step = 0;
    for (int i = 1; i < schedule.size(); i++) {
      if (schedule.get(i).startNanos() <= t) {
        step = i;
      }
    }
    return step;
  }

  /** A request reaches the mid-tier's socket. */
  private void arrive(Request r) {
    if (serverArrivals != null && r.demandReport < 0) {
      serverArrivals.record(now);
      adapter.runIfDue(now);
    }
    socket.offer(r, now);
    network.poke();
  }

  // ------------------------------------------------------------------------------ model switch

  private void switchTo(ThreadingModel next) {
    if (next.equals(model)) {
      return;
    }
    switches++;
    if (!next.inline()) {
      activeWorkers = next.workers();
      wakeWorkers();
    }
    boolean wasPolling = model.polls();
    model = next;
    if (next.polls() && !wasPolling && network.state == State.BLOCKED) {
      network.poke(); // it starts spinning at its next turn
    }
  }

  // ------------------------------------------------------------------------------ threads

  private enum State { BLOCKED, LEAF_WAIT, WAKING, RUNNABLE, RUNNING, SPINNING }

  /** A mid-tier thread: the network thread or a worker. */
  private final class SimThread {
    final boolean isNetwork;
    int index;
    State state = State.BLOCKED;
    Runnable onCore; // what it does when it next gets a core

    SimThread(boolean isNetwork) {
      this.isNetwork = isNetwork;
    }

    /** There may be work for it: wake it if it is blocked. */
    void poke() {
      if (state == State.BLOCKED) {
        wake(this, this::findWork);
      } else if (state == State.SPINNING) {
        spinners.remove(this);
        state = State.RUNNING;
        findWork();
      }
      // WAKING, RUNNABLE or RUNNING: it looks for work when it gets to it
    }

    /** On a core with nothing in hand: take the next piece of work, or idle. */
    void findWork() {
      if (isNetwork) {
        networkTurn();
      } else {
        workerTurn(this);
      }
    }
  }

  /** Wakes a blocked thread; after the wake-up it needs a core, then runs {@code then}. */
  private void wake(SimThread t, Runnable then) {
    t.state = State.WAKING;
    // An idle core sleeps, and waking one is most of a slow wake-up; with every core busy (or
    // spinning) the thread only waits to be switched in.
    long delay = freeCores > 0 ? slowWake() : costs.wakeFastNanos();
    at(now + delay, () -> {
      t.onCore = then;
      t.state = State.RUNNABLE;
      takeCore(t);
    });
  }

  private long slowWake() {
    long extra = costs.wakeSlowNanos() - costs.wakeFastNanos();
    return costs.wakeFastNanos() + (long) (-Math.log(1 - random.nextDouble()) * Math.max(0, extra));
  }

  /** Gives {@code t} a core now, or after a spinner's preemption, or queues it. */
  private void takeCore(SimThread t) {
    if (freeCores > 0) {
      freeCores--;
      busyCores++;
      run(t);
    } else {
      t.state = State.RUNNABLE;
      runQueue.add(t);
      preemptASpinner();
    }
  }

  /**
   * A thread waits for a core while a spinner holds one: the spinner keeps it until the scheduler's
   * slice ends, then yields it to the first waiting thread and waits for a core itself.
   */
  private void preemptASpinner() {
    if (spinners.isEmpty() || runQueue.isEmpty()) {
      return;
    }
    SimThread spinner = spinners.poll();
    spinner.state = State.RUNNABLE;
    spinner.onCore = spinner::findWork;
    at(now + costs.preemptNanos(), () -> {
      SimThread next = runQueue.poll();
      runQueue.add(spinner);
      if (next != null) {
        run(next);
      } else {
        run(runQueue.poll()); // the waiter found a core meanwhile: the spinner takes its own back
      }
    });
  }

  /** {@code t} has no work and polls: it keeps its core, spinning. */
  private void spin(SimThread t) {
    t.state = State.SPINNING;
    spinners.add(t);
    preemptASpinner();
  }

  private void run(SimThread t) {
    t.state = State.RUNNING;
    Runnable r = t.onCore;
    t.onCore = null;
    if (r != null) {
      r.run();
    } else {
      t.findWork();
    }
  }

  /** {@code t} gives up its core (it blocks, or starts spinning elsewhere); the next runnable takes it. */
  private void releaseCore(SimThread t, State next) {
    t.state = next;
    SimThread waiting = runQueue.poll();
    if (waiting != null) {
      run(waiting);
    } else {
      freeCores++;
      busyCores--;
    }
  }

  /** Runs {@code nanos} of CPU on {@code t}'s core, then {@code then} (still on the core). */
  private void burst(SimThread t, long nanos, Runnable then) {
    at(now + nanos, then);
  }

  /** The network thread on its core: read the next request, or idle as the model says. */
  private void networkTurn() {
    Request r = socket.poll();
    if (r == null) {
      if (model.polls()) {
        spin(network);
      } else {
        releaseCore(network, State.BLOCKED);
      }
      return;
    }
    boolean wantInline = model.inline();
    if (wantInline != inlineNow) {
      if (!wantInline) {
        inlineNow = false; // nothing is queued in-line: the socket holds the rest, in order
      } else if (unfinishedDispatched == 0) {
        inlineNow = true;
      }
    }
    if (gate != null) {
      boolean inline = inlineNow;
      burst(network, costs.rxNanos(), () -> admit(network, r, this::networkTurn, inline
          ? () -> process(network, r, 0, this::networkTurn)
          : () -> burst(network, costs.handoffNanos(), () -> {
            unfinishedDispatched++;
            workQueue.offer(r, now);
            wakeWorkers();
            networkTurn();
          })));
    } else if (inlineNow) {
      process(network, r, costs.rxNanos(), () -> networkTurn());
    } else {
      burst(network, costs.rxNanos() + costs.handoffNanos(), () -> {
        unfinishedDispatched++;
        workQueue.offer(r, now);
        wakeWorkers();
        networkTurn();
      });
    }
  }

  private void wakeWorkers() {
    for (SimThread w : workers) {
      if (workQueue.isEmpty()) {
        return;
      }
      if (w.index < activeWorkers && w.state == State.BLOCKED && idleWorkers.remove(w)) {
        w.poke();
      }
    }
  }

  private void workerTurn(SimThread w) {
    Request r = w.index < activeWorkers ? workQueue.poll() : null;
    if (r == null) {
      idleWorkers.add(w);
      releaseCore(w, State.BLOCKED);
      return;
    }
    process(w, r, 0, () -> {
      unfinishedDispatched--;
      workerTurn(w);
    });
  }

  /**
   * The synchronous request on {@code t}: its first half of work and the leaf requests, then it
   * blocks until every leaf has replied, wakes, merges, responds; then {@code next} on its core.
   */
  private void process(SimThread t, Request r, long extraCpu, Runnable next) {
    long half = costs.local().sample(random) / 2;
    long before = extraCpu + half + costs.fanout() * costs.txNanos();
    burst(t, before, () -> {
      int[] pending = {costs.fanout()};
      for (Leaf leaf : leaves) {
        at(now + costs.rttNanos() / 2, () -> leaf.submit(() -> at(now + costs.rttNanos() / 2, () -> {
          if (--pending[0] == 0) {
            wake(t, () -> burst(t, costs.fanout() * costs.rxNanos() + half + costs.txNanos(), () -> {
              if (r.permit != null) {
                r.response = new ResponseMetadata();
                r.permit.complete(Outcome.SUCCESS, now, r.response);
                ended++;
              }
              at(now + costs.rttNanos() / 2, () -> done(r)); // mid-tier to client
              next.run();
            }));
          }
        })));
      }
      releaseCore(t, State.LEAF_WAIT); // blocks on the leaf replies
    });
  }

  private void done(Request r) {
    if (admission != null) {
      clientReceive(r);
      return;
    }
    if (now >= measureFrom) {
      served++;
      good++;
      goodByStep[stepAt(now)]++;
    }
    if (r.arrival >= measureFrom) {
      latency.recordValue(Math.max(1, now - r.arrival));
      completed++;
    }
  }

  // ------------------------------------------------------------------------------ leaves

  /** A leaf: {@code cores} servers, FIFO, exponential service. */
  private final class Leaf {
    private int free;
    private final TimestampedQueue<Runnable> queue = new TimestampedQueue<>();

    Leaf(int cores) {
      free = cores;
    }

    void submit(Runnable reply) {
      if (free > 0) {
        free--;
        serve(reply);
        countLeafWait(0);
      } else {
        queue.offer(reply, now);
      }
    }

    private void serve(Runnable reply) {
      long service = costs.leaf().sample(random);
      at(now + service, () -> {
        reply.run();
        long enqueued = queue.isEmpty() ? now : queue.oldestEnqueueNanos();
        Runnable next = queue.poll();
        if (next != null) {
          countLeafWait(now - enqueued);
          serve(next);
        } else {
          free++;
        }
      });
    }
  }

  private void countLeafWait(long nanos) {
    if (now >= measureFrom) {
      leafWaitSum += nanos;
      leafWaits++;
    }
  }

  // ------------------------------------------------------------------------------ events

  /** A request (or, with {@code demandReport >= 0}, a client's demand report). */
  private static final class Request {
    final long id;
    final long arrival;
    Session session;
    long sentAt;
    RequestMetadata header;
    ServerPermit permit;
    ResponseMetadata response;
    int demandReport = -1;

    Request(long id, long arrival) {
      this.id = id;
      this.arrival = arrival;
    }
  }

  private void at(long time, Runnable action) {
    events.schedule(time, 0, action);
  }

  /** Core-time in use: running or spinning. */
  private void accountBusy(long t) {
    busyCoreNanos += (long) busyCores * (t - busySince);
    busySince = t;
  }
}
