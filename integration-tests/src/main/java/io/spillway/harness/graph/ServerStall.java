package io.spillway.harness.graph;

import io.spillway.api.Cancellable;
import io.spillway.api.Scheduler;
import io.spillway.sim.CallGraph;
import java.io.IOException;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * A stall of every services process in a schedule run ({@code graph.stall_ms = start, length}):
 * {@code SIGSTOP} to each at {@code start} ms into the run, {@code SIGCONT} {@code length} ms
 * later, on a {@link Scheduler}. The load generator runs on meanwhile, as it did when every service
 * once stalled mid-run for a cause the GC logs do not show (docs/results/rajomon.md, "A stall of
 * every service"); this
 * makes such a stall happen on purpose, at a known time, under every scheme alike.
 *
 * <p>{@link #close} cancels a stall still to come and continues the processes of one under way,
 * so a run never leaves a service stopped. Thread-safe: the scheduler's thread and the harness's
 * main thread meet under the object's lock.
 */
final class ServerStall implements AutoCloseable {

  private static final String KILL = "/bin/kill";

  /** The harness's: one daemon thread, idle but for the two signals of each stall. */
  private static final Scheduler SIGNALS = Scheduler.of(Executors.newSingleThreadScheduledExecutor(
      task -> Thread.ofPlatform().daemon().name("server-stall").unstarted(task)));

  private final List<Long> pids;
  private final long lengthNanos;
  private final Scheduler scheduler;
  private Cancellable pending;
  private boolean stopped;
  private boolean closed;

  private ServerStall(List<Long> pids, CallGraph.Stall stall, Scheduler scheduler) {
    this.pids = List.copyOf(pids);
    this.lengthNanos = stall.lengthNanos();
    this.scheduler = scheduler;
  }

  /** Starts the countdown to {@code stall} for {@code pids} now; {@code null} stall: nothing. */
  static ServerStall start(List<Long> pids, CallGraph.Stall stall) {
    return start(pids, stall, SIGNALS);
  }

  /** As {@link #start(List, CallGraph.Stall)}, timed by {@code scheduler}. */
  static ServerStall start(List<Long> pids, CallGraph.Stall stall, Scheduler scheduler) {
    if (stall == null) {
      return null;
    }
    ServerStall s = new ServerStall(pids, stall, scheduler);
    synchronized (s) {
      s.pending = scheduler.schedule(s::stop, stall.startNanos());
    }
    return s;
  }

  private synchronized void stop() {
    if (closed) {
      return;
    }
    stopped = true; // before signalling: a partly stopped set is still continued
    signal("-STOP");
    pending = scheduler.schedule(this::resume, lengthNanos);
  }

  private synchronized void resume() {
    if (stopped) {
      stopped = false;
      signal("-CONT");
    }
  }

  /** Sends {@code signal} to every process; a failure is reported, and never stops the run. */
  private void signal(String signal) {
    for (long pid : pids) {
      try {
        Process kill = new ProcessBuilder(KILL, signal, Long.toString(pid)).inheritIO().start();
        if (!kill.waitFor(5, TimeUnit.SECONDS) || kill.exitValue() != 0) {
          System.err.println("graph harness: " + KILL + " " + signal + " " + pid + " failed");
        }
      } catch (IOException e) {
        System.err.println("graph harness: " + KILL + " " + signal + " " + pid + " failed: " + e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        System.err.println("graph harness: interrupted sending " + signal + " to " + pid);
      }
    }
  }

  /** Cancels a stall still to come, and ends one under way. */
  @Override
  public synchronized void close() {
    closed = true;
    pending.cancel();
    resume();
  }
}
