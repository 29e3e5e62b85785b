package io.spillway.harness.graph;

import io.spillway.sim.CallGraph;
import java.io.IOException;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * A stall of every services process in a schedule run ({@code graph.stall_ms = start, length}):
 * {@code SIGSTOP} to each at {@code start} ms into the run, {@code SIGCONT} {@code length} ms
 * later, from a daemon thread. The load generator runs on meanwhile, as it did when every service
 * stalled at 3.75 s in run hN2 (docs/results/rajomon.md), whose cause the GC logs do not show; this
 * makes such a stall happen on purpose, at a known time, under every scheme alike.
 *
 * <p>{@link #close} joins the thread and continues every process whatever happened, so a run never
 * leaves a service stopped. Used by the harness's main thread.
 */
final class ServerStall implements AutoCloseable {

  private static final String KILL = "/bin/kill";

  private final List<Long> pids;
  private final Thread thread;
  private volatile String failure;

  private ServerStall(List<Long> pids, CallGraph.Stall stall) {
    this.pids = List.copyOf(pids);
    long start = System.nanoTime();
    this.thread = Thread.ofPlatform().daemon().name("server-stall").start(() -> {
      if (!sleepUntil(start + stall.startNanos())) {
        return; // the run ended first: stop nothing
      }
      try {
        signal("-STOP");
        sleepUntil(start + stall.endNanos());
      } catch (IOException | InterruptedException e) {
        failure = e.toString();
      } finally {
        resume();
      }
    });
  }

  /** Starts the countdown to {@code stall} for {@code pids}; {@code null} stall: nothing. */
  static ServerStall start(List<Long> pids, CallGraph.Stall stall) {
    return stall == null ? null : new ServerStall(pids, stall);
  }

  /** Parks until {@code deadline} ({@link System#nanoTime()}); false if interrupted first. */
  private static boolean sleepUntil(long deadline) {
    long left;
    while ((left = deadline - System.nanoTime()) > 0) {
      if (Thread.currentThread().isInterrupted()) {
        return false;
      }
      LockSupport.parkNanos(left);
    }
    return !Thread.currentThread().isInterrupted();
  }

  private void signal(String signal) throws IOException, InterruptedException {
    for (long pid : pids) {
      Process kill = new ProcessBuilder(KILL, signal, Long.toString(pid)).inheritIO().start();
      if (!kill.waitFor(5, TimeUnit.SECONDS) || kill.exitValue() != 0) {
        throw new IOException(KILL + " " + signal + " " + pid + " failed");
      }
    }
  }

  private void resume() {
    boolean interrupted = Thread.interrupted(); // so that waiting for kill works: close waits for this
    try {
      signal("-CONT");
    } catch (IOException | InterruptedException e) {
      failure = failure == null ? e.toString() : failure + "; " + e;
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  /** Ends the stall if it is under way (cancels it if it is still to come), and reports a failure. */
  @Override
  public void close() throws InterruptedException {
    thread.interrupt();
    thread.join();
    if (failure != null) {
      System.err.println("graph harness: the stall of the services failed: " + failure);
    }
  }
}
