package io.spillway.harness.graph;

import io.grpc.Status;
import io.grpc.netty.shaded.io.netty.channel.EventLoop;
import io.spillway.api.Ticker;
import io.spillway.harness.OpenLoopSchedule;
import io.spillway.harness.graph.proto.GraphReply;
import io.spillway.sim.CallGraph;
import io.spillway.sim.Recorder;
import io.spillway.sim.Scenario;
import io.spillway.sim.Tally;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Drives a {@link GraphClient} from its event loop and records what happens per interface in the
 * simulator's {@link Recorder}s, so tables, results.json and plots are the other harnesses'.
 *
 * <ul>
 *   <li>Open loop (rajomon-nsdi25 §5.1): one Poisson process per interface at its demand level ×
 *       its capacity, steps as its schedule says; each arrival goes to a uniformly chosen client
 *       session. An arrival is stamped with its scheduled time, not the time the generator got to
 *       it, so a generator that falls behind adds to measured latency instead of hiding it.
 *   <li>Closed loop: a fixed number of one interface's calls outstanding, each completion issuing
 *       the next; how capacity is measured.
 * </ul>
 *
 * <p>Outcomes: a response is completed (good if within its interface's SLO, latency end to end,
 * client queueing included); a failure after the call left the client that the wiring calls an
 * overload reject is dropped (its delay from leaving the client to the reject); a call that never
 * left the client (rate-limited or expired by a client interceptor) is expired; anything else is
 * an error, counted in {@link #errors()} and kept out of the tallies.
 *
 * <p>Confined to the client's event loop once started.
 */
final class GraphLoadGenerator implements Runnable, GraphClient.Outcome {

  /** Closer than this, the next arrival is waited for by polling the loop, not by a timer. */
  static final long SPIN_NANOS = 200_000;
  /** A timer is set this much before the arrival it is for, to absorb the wake-up's latency. */
  static final long WAKEUP_MARGIN_NANOS = 50_000;
  /** While calls drain after the run: how often to look. */
  static final long DRAIN_POLL_NANOS = 1_000_000;
  /** The most arrivals of one interface one turn issues, so a late turn does not hold off I/O. */
  private static final int BURST = 1024;

  /** One interface's arrival process. */
  private static final class Lane {
    final int iface;
    final long sloNanos;
    final Recorder recorder;
    /** Its open loop's arrivals (unused in a closed loop). */
    final OpenLoopSchedule schedule;
    /** Where they go: this generator's calls and the lane's recorder. */
    OpenLoopSchedule.Arrivals out;

    Lane(int iface, List<Scenario.DemandStep> steps, double capacityRps, long sloNanos,
        Recorder recorder, SplittableRandom arrivals) {
      this.iface = iface;
      this.sloNanos = sloNanos;
      this.recorder = recorder;
      this.schedule = new OpenLoopSchedule(steps, capacityRps, arrivals);
    }
  }

  private final GraphClient client;
  private final EventLoop loop;
  private final Ticker ticker;
  private final Lane[] lanes;
  private final long runNanos;
  private final int closedLoop;
  private final SplittableRandom picks;
  private final CompletableFuture<List<Recorder>> done = new CompletableFuture<>();
  private final boolean precise;

  private long start;
  /** The wall clock at {@link #start}, to line the windows up with the services' GC logs. */
  private volatile long startEpochMillis;
  private boolean stopped;
  private long stoppedAt;
  private int outstanding;
  private long nextId;
  private long errors;
  private String firstError;
  private int abandoned;
  /** How late arrivals were issued (the generator's own lag), nanoseconds; open loop only. */
  private final org.HdrHistogram.Histogram lag = new org.HdrHistogram.Histogram(3);

  private GraphLoadGenerator(GraphClient client, Lane[] lanes, long runNanos, int closedLoop,
      SplittableRandom picks) {
    this.client = client;
    this.loop = client.eventLoop();
    this.ticker = client.ticker();
    this.lanes = lanes;
    this.runNanos = runNanos;
    this.closedLoop = closedLoop;
    this.picks = picks;
    this.precise = client.preciseTimers();
    for (Lane lane : lanes) {
      lane.out = new OpenLoopSchedule.Arrivals() {
        @Override
        public void arrival(long at) {
          issue(lane, at);
        }

        @Override
        public void demandChanged(long sinceStart, double level) {
          lane.recorder.demandChanged(sinceStart, level);
        }
      };
    }
  }

  /**
   * Runs every interface open loop for {@code runNanos}: interface {@code i} at {@code steps.get(i)}
   * × {@code capacities[i]}. Completes, with one recorder per interface (by interface id), when
   * every call has ended.
   */
  static GraphLoadGenerator openLoop(GraphClient client, List<List<Scenario.DemandStep>> steps,
      double[] capacities, long runNanos, long windowNanos, long seed) {
    List<CallGraph.Interface> ifaces = client.graph().interfaces();
    SplittableRandom root = new SplittableRandom(seed);
    Lane[] lanes = new Lane[ifaces.size()];
    for (CallGraph.Interface i : ifaces) {
      lanes[i.index()] = new Lane(i.index(), steps.get(i.index()), capacities[i.index()], i.sloNanos(),
          new Recorder(windowNanos), root.split());
    }
    GraphLoadGenerator g = new GraphLoadGenerator(client, lanes, runNanos, 0, root.split());
    g.loop.execute(g::begin);
    return g;
  }

  /** Keeps {@code outstanding} calls of interface {@code iface} in flight for {@code runNanos}. */
  static GraphLoadGenerator closedLoop(GraphClient client, CallGraph.Interface iface, int outstanding,
      long runNanos, long windowNanos, long seed) {
    SplittableRandom root = new SplittableRandom(seed);
    Lane lane = new Lane(iface.index(), List.of(new Scenario.DemandStep(0, 0)), 0, iface.sloNanos(),
        new Recorder(windowNanos), root.split());
    GraphLoadGenerator g = new GraphLoadGenerator(client, new Lane[] {lane}, runNanos, outstanding, root.split());
    g.loop.execute(g::begin);
    return g;
  }

  /** Completes with the recorders (open loop: by interface id; closed loop: the one) once all calls ended. */
  CompletableFuture<List<Recorder>> done() {
    return done;
  }

  /**
   * The wall clock ({@link System#currentTimeMillis}) when the run started, the recorders' time 0;
   * read once, on the event loop, to match the windows with logs that stamp wall-clock time.
   */
  long startEpochMillis() {
    return startEpochMillis;
  }

  /** Calls that ended neither in a response nor in an overload reject nor unsent. */
  long errors() {
    return errors;
  }

  /**
   * The 99th percentile of how late the generator issued arrivals, microseconds. Latency counts
   * from the scheduled arrival, so lag shows up as latency: when this is large, the load generator's
   * core was busy (on a shared machine, with other processes) and the run measured it too.
   */
  double lagP99Micros() {
    return lag.getTotalCount() == 0 ? 0 : lag.getValueAtPercentile(99) / 1e3;
  }

  /** Calls still in flight 10 s after the run ended, left out of the tallies. */
  int abandoned() {
    return abandoned;
  }

  /** The first such error's status, or null. */
  String firstError() {
    return firstError;
  }

  private void begin() {
    start = ticker.read();
    startEpochMillis = System.currentTimeMillis();
    if (closedLoop > 0) {
      for (int i = 0; i < closedLoop; i++) {
        issue(lanes[0], start);
      }
    } else {
      for (Lane lane : lanes) {
        lane.schedule.start(start, runNanos, lane.out);
      }
    }
    again();
  }

  @Override
  public void run() {
    long now = ticker.read();
    if (!stopped) {
      boolean allIssued = true;
      if (closedLoop == 0) {
        for (Lane lane : lanes) {
          lane.schedule.issueDue(now, BURST, lane.out);
          allIssued &= lane.schedule.exhausted();
        }
      }
      if (now - start >= runNanos && allIssued) {
        stopped = true;
        stoppedAt = now;
      }
    }
    if (stopped) {
      // Let calls in flight end, then report; a call stuck past 10 s is left behind.
      if (outstanding == 0 || now - stoppedAt > 10_000_000_000L) {
        abandoned = outstanding;
        List<Recorder> recorders = new java.util.ArrayList<>();
        for (Lane lane : lanes) {
          recorders.add(lane.recorder);
        }
        done.complete(List.copyOf(recorders));
        return;
      }
      again();
      return;
    }
    again();
  }

  /**
   * Runs again when there is something to do: shortly before the next arrival, step or the end of
   * the run, on the next loop iteration (after the loop's I/O) if that is close. Not {@code
   * execute}: Netty 4.2 (which gRPC shades) runs queued tasks for up to its task quantum before
   * returning to I/O, so a task that re-executes itself would starve the sockets; scheduled tasks
   * are taken once per iteration.
   *
   * <p>Why sleep rather than poll: on a machine whose cores are shared, a thread that never blocks
   * is a CPU hog to the kernel's scheduler and waits out whole time slices behind other processes
   * (seen: arrivals issued 100+ ms late), while one that sleeps is woken promptly. The loop sleeps
   * only with precise timers ({@link GraphClient#preciseTimers()}); NIO's wait rounds to
   * milliseconds, so there it polls.
   */
  private void again() {
    long now = ticker.read();
    long delay = 0;
    if (precise && !stopped) {
      long due = start + runNanos;
      if (closedLoop == 0) {
        for (Lane lane : lanes) {
          due = earlier(due, lane.schedule.nextDue());
        }
      }
      delay = due - now > SPIN_NANOS ? due - now - WAKEUP_MARGIN_NANOS : 0;
    } else if (precise) {
      delay = DRAIN_POLL_NANOS;
    }
    loop.schedule(this, delay, TimeUnit.NANOSECONDS);
  }

  private static long earlier(long a, long b) {
    return a - b < 0 ? a : b;
  }

  private void issue(Lane lane, long arrival) {
    if (closedLoop == 0) {
      lag.recordValue(Math.max(0, ticker.read() - arrival));
    }
    lane.recorder.at(Math.max(0, arrival - start)).offered++;
    outstanding++;
    client.call(picks.nextInt(client.sessionCount()), new GraphClient.Call(lane.iface, arrival), nextId++, this);
  }

  @Override
  public void ended(GraphClient.Call call, Status status, GraphReply reply) {
    outstanding--;
    long now = ticker.read();
    Lane lane = lanes.length == 1 ? lanes[0] : lanes[call.iface];
    Tally t = lane.recorder.at(now - start);
    long sentAt = call.sentAtNanos;
    if (sentAt != GraphClient.Call.NOT_SENT) {
      lane.recorder.at(Math.max(0, sentAt - start)).sent++;
    }
    if (status.isOk()) {
      long latency = now - call.arrivalNanos;
      t.received++;
      t.completed++;
      if (latency <= lane.sloNanos) {
        t.good++;
      }
      t.latency.recordValue(Math.max(1, latency));
    } else if (sentAt == GraphClient.Call.NOT_SENT) {
      t.expired++;
    } else if (client.wiring().isOverloadReject(status)) {
      t.received++;
      t.dropped++;
      t.rejectsReceived++;
      t.rejectDelaySumNanos += now - sentAt;
      t.recordRejectDelay(now - sentAt);
    } else {
      errors++;
      if (firstError == null) {
        firstError = status.toString();
      }
    }
    if (closedLoop > 0 && !stopped) {
      issue(lane, now);
    }
  }
}
