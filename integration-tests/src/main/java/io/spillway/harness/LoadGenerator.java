package io.spillway.harness;

import io.netty.channel.EventLoop;
import io.spillway.api.Ticker;
import io.spillway.sim.Recorder;
import io.spillway.sim.Scenario;
import io.spillway.sim.ServiceTime;
import io.spillway.sim.Tally;
import io.spillway.transport.OverloadRejectedException;
import io.spillway.transport.SpillwayClient;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Drives a {@link SpillwayClient} from its own event loop, so issuing a call costs no thread
 * hand-off, and records what happens in a {@link Recorder} (the simulator's windows and tallies).
 * An arrival enters its session's client queue under its scheduled time, so if the generator gets
 * to it late (its core was taken), the time counts as client-queue waiting: a scheme whose client
 * queue expires (Breakwater §3.3, and every gate here, `none`'s after the SLO) expires it as it
 * would have had the generator run on time, instead of sending it and counting its lateness as
 * the server's latency.
 *
 * <ul>
 *   <li>Open loop: one aggregate Poisson process at demand × capacity (steps as scheduled), each
 *       arrival to a uniformly chosen session, each carrying a sampled service time (and, if the
 *       scenario has {@code paths}, a draw that picks its mutex path). An arrival is
 *       stamped with its scheduled time, not the time the generator got to it, so a generator that
 *       falls behind adds to measured latency instead of hiding it (no coordinated omission). The
 *       schedule does not depend on when the generator's turns come ({@link OpenLoopSchedule}): a
 *       step takes effect at its scheduled time, and a late turn issues every arrival it missed,
 *       the last ones before the run's end too.
 *   <li>Closed loop: a fixed number of calls outstanding, each completion issuing the next; how
 *       capacity is measured.
 * </ul>
 *
 * <p>Latency is end to end, from arrival (client queueing included) to the response; a reject's
 * delay runs from the request leaving the client to the reject arriving.
 *
 * <p>Confined to the client's event loop once started.
 */
final class LoadGenerator implements Runnable {

  /** Where the generator's calls go: a {@link SpillwayClient}'s sessions, or a test's. */
  interface Caller {
    int sessionCount();

    /** Sends {@code payload} on {@code session} for a request that arrived at {@code arrival}. */
    CompletableFuture<byte[]> call(int session, byte[] payload, long arrival);
  }

  private final Caller client;
  private final EventLoop loop;
  private final Ticker ticker;
  private final Recorder recorder;
  private final long runNanos;
  private final long sloNanos;
  private final ServiceTime service;
  private final int closedLoop;
  /** The open loop's arrivals ({@code null} in a closed loop). */
  private final OpenLoopSchedule schedule;
  private final OpenLoopSchedule.Arrivals issuing;
  private final SplittableRandom services;
  private final SplittableRandom picks;
  private final SplittableRandom pathDraws;
  private final boolean paths;
  private final CompletableFuture<Recorder> done = new CompletableFuture<>();
  /** The most arrivals one turn issues, so that a late turn does not hold the loop's I/O off. */
  private static final int BURST = 1024;

  private long start;
  private int outstanding;
  private boolean stopped;
  /**
   * Runs {@link #run} once per loop iteration, after the loop's I/O: one periodic task, re-queued
   * without allocating. Not {@code execute}: Netty 4.2 runs queued tasks for up to a second
   * (io.netty.eventLoop.maxTaskProcessingQuantumMs, at least 100 ms) before returning to I/O, so a
   * task that re-executes itself starves every socket on the loop; scheduled tasks are taken once
   * per iteration, and a due one keeps the loop polling without blocking, which is what a load
   * generator on its own core should do. Not {@code schedule(0)} each time either: that allocated a
   * task per iteration (~200 MB/s), and the generator's young collections (7–36 ms) landed in
   * the measured windows.
   */
  private ScheduledFuture<?> tick;
  private final long[] loopGaps;
  private long lastRun;
  private long stoppedAt;
  long errors;

  private LoadGenerator(SpillwayClient client, Scenario scenario, List<Scenario.DemandStep> steps,
      double capacityRps, long runNanos, int closedLoop, Recorder recorder, long seed, long[] loopGaps) {
    this(caller(client), client.eventLoop(0), Ticker.system(), scenario, steps, capacityRps,
        runNanos, closedLoop, recorder, seed, loopGaps);
  }

  /**
   * A generator on {@code ticker}'s time. With {@code loop} null nothing schedules it: a test calls
   * {@link #start} and {@link #turn} at the times it chooses and ends the calls itself.
   */
  LoadGenerator(Caller client, EventLoop loop, Ticker ticker, Scenario scenario,
      List<Scenario.DemandStep> steps, double capacityRps, long runNanos, int closedLoop,
      Recorder recorder, long seed, long[] loopGaps) {
    this.client = client;
    this.loopGaps = loopGaps;
    this.loop = loop;
    this.ticker = ticker;
    this.recorder = recorder;
    this.runNanos = runNanos;
    this.sloNanos = scenario.sloNanos();
    this.service = scenario.service();
    this.closedLoop = closedLoop;
    SplittableRandom root = new SplittableRandom(seed);
    SplittableRandom arrivals = root.split();
    this.schedule = closedLoop > 0 ? null : new OpenLoopSchedule(steps, capacityRps, arrivals);
    this.issuing = new OpenLoopSchedule.Arrivals() {
      @Override
      public void arrival(long at) {
        issue(at);
      }

      @Override
      public void demandChanged(long sinceStart, double level) {
        recorder.demandChanged(sinceStart, level);
      }
    };
    this.services = root.split();
    this.picks = root.split();
    this.pathDraws = root.split(); // split last: scenarios without paths draw exactly as before
    this.paths = scenario.paths().length > 0;
  }

  /** Runs an open-loop schedule for {@code runNanos}; completes when every call has ended. */
  static CompletableFuture<Recorder> openLoop(SpillwayClient client, Scenario scenario,
      List<Scenario.DemandStep> steps, double capacityRps, long runNanos, Recorder recorder, long seed) {
    return openLoop(client, scenario, steps, capacityRps, runNanos, recorder, seed, null);
  }

  /**
   * As above, and keeps in {@code loopGaps[w]} the longest time between two turns of the generator's
   * loop in the recorder's window {@code w}: a turn normally follows the last within microseconds,
   * so a gap of milliseconds says the generator itself was stalled then (descheduled or paused),
   * and the latency it measured in that window carries the stall.
   */
  static CompletableFuture<Recorder> openLoop(SpillwayClient client, Scenario scenario,
      List<Scenario.DemandStep> steps, double capacityRps, long runNanos, Recorder recorder, long seed,
      long[] loopGaps) {
    LoadGenerator g = new LoadGenerator(client, scenario, steps, capacityRps, runNanos, 0, recorder, seed, loopGaps);
    g.loop.execute(g::begin);
    return g.done;
  }

  /** Keeps {@code outstanding} calls in flight for {@code runNanos}. */
  static CompletableFuture<Recorder> closedLoop(SpillwayClient client, Scenario scenario, int outstanding,
      long runNanos, Recorder recorder, long seed) {
    LoadGenerator g = new LoadGenerator(client, scenario, List.of(new Scenario.DemandStep(0, 0)), 0,
        runNanos, outstanding, recorder, seed, null);
    g.loop.execute(g::begin);
    return g.done;
  }

  private static Caller caller(SpillwayClient client) {
    return new Caller() {
      @Override
      public int sessionCount() {
        return client.sessionCount();
      }

      @Override
      public CompletableFuture<byte[]> call(int session, byte[] payload, long arrival) {
        return client.session(session).call(payload, arrival);
      }
    };
  }

  private void begin() {
    start(ticker.read());
    tick = loop.scheduleWithFixedDelay(this, 0, 1, TimeUnit.NANOSECONDS);
  }

  /** Begins the run at {@code now}: the closed loop's calls, or the open loop's first step. */
  void start(long now) {
    start = now;
    if (closedLoop > 0) {
      for (int i = 0; i < closedLoop; i++) {
        issue(start);
      }
    } else {
      schedule.start(start, runNanos, issuing);
    }
  }

  @Override
  public void run() {
    if (turn(ticker.read())) {
      tick.cancel(false);
      done.complete(recorder);
    }
  }

  /** One turn of the generator's loop at {@code now}; true once the run is over and reported. */
  boolean turn(long now) {
    if (loopGaps != null && lastRun != 0) {
      int w = (int) ((now - start) / recorder.windowNanos());
      if (w < loopGaps.length) {
        loopGaps[w] = Math.max(loopGaps[w], now - lastRun);
      }
    }
    lastRun = now;
    if (!stopped) {
      if (closedLoop == 0) {
        schedule.issueDue(now, BURST, issuing);
      }
      boolean allIssued = closedLoop > 0 || schedule.exhausted();
      if (now - start >= runNanos && allIssued) {
        stopped = true;
        stoppedAt = now;
      }
    }
    // Once stopped, let calls in flight end (expiry bounds how long), then report.
    return stopped && (outstanding == 0 || now - stoppedAt > 5_000_000_000L);
  }

  private void issue(long arrival) {
    int session = picks.nextInt(client.sessionCount());
    long serviceNanos = service.sample(services);
    byte[] payload = paths
        ? MutexPathService.request(serviceNanos, pathDraws.nextLong())
        : ByteBuffer.allocate(8).putLong(serviceNanos).array();
    recorder.at(Math.max(0, arrival - start)).offered++;
    outstanding++;
    // The arrival, not now: a request the generator issues late has waited in the client queue
    // since it arrived, as an application's request would have (SpillwayClient.Session#call).
    client.call(session, payload, arrival).whenComplete((body, error) -> ended(arrival, error));
  }

  private void ended(long arrival, Throwable error) {
    outstanding--;
    long now = ticker.read();
    Tally t = recorder.at(now - start);
    Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
    if (cause == null) {
      long latency = now - arrival;
      t.received++;
      t.completed++;
      if (latency <= sloNanos) {
        t.good++;
      }
      t.latency.recordValue(Math.max(1, latency));
    } else if (cause instanceof OverloadRejectedException r) {
      if (r.wasSent()) {
        t.received++;
        t.dropped++;
        t.rejectsReceived++;
        t.rejectDelaySumNanos += now - r.sentAtNanos();
        t.recordRejectDelay(now - r.sentAtNanos());
      } else {
        t.expired++;
      }
    } else {
      errors++;
    }
    if (closedLoop > 0 && !stopped) {
      issue(now);
    }
  }
}
