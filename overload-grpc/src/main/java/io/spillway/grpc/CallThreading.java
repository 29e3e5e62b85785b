package io.spillway.grpc;

import io.spillway.api.Cancellable;
import io.spillway.api.Scheduler;
import io.spillway.api.Ticker;
import io.spillway.threading.ArrivalRateEstimator;
import io.spillway.threading.ThreadingAdaptation;
import io.spillway.threading.ThreadingAdapter;
import io.spillway.threading.ThreadingModel;
import java.util.List;

/**
 * µTune's in-line/dispatch choice for gRPC calls (mutune-osdi18 §3.1, §4): gRPC-Java lets a server
 * run a call on the transport thread that read it ({@code directExecutor()}, in-line) or hand it to
 * an executor (dispatch), and the choice is made per call as it arrives, so it can follow the load:
 * each arrival is recorded in µTune's load detector, and a {@link ThreadingAdapter} moves the server
 * between the trained models. A call is decided once and keeps its executor for its lifetime (gRPC
 * serializes each call's tasks on it), so a switch reorders no call's messages.
 *
 * <p>Only execution is chosen here: gRPC's transport threads are Netty's, whose waiting is theirs;
 * models differing only in reception are the same choice, and the worker pool's size is the
 * executor's.
 *
 * <p>Thread-safe: transport threads record arrivals and adapt as they do; the scheduler's thread
 * adapts a server that has gone quiet.
 */
final class CallThreading implements AutoCloseable {

  private final ArrivalRateEstimator arrivals;
  private final ThreadingAdapter adapter;
  private final Cancellable adapting;
  private volatile ThreadingModel current;
  private volatile long switches;

  CallThreading(ThreadingAdaptation adaptation, Ticker ticker, Scheduler scheduler) {
    this.arrivals = new ArrivalRateEstimator(adaptation.bufferSize(), adaptation.smoothing());
    this.current = adaptation.profile().best(0);
    this.adapter = new ThreadingAdapter(ticker, List.of(arrivals), adaptation, () -> current, this::switchTo);
    // Decisions ride on arrivals (ThreadingAdapter); the timer only lets a quiet server's estimate fall.
    this.adapting = scheduler.every(adaptation.periodNanos() * ThreadingAdapter.SILENCE_PERIODS,
        () -> adapt(ticker.read()));
  }

  /**
   * Records an arrival at {@code nowNanos}, runs the adaptation if it is due, and says whether this
   * call runs in-line.
   */
  boolean arrivedInline(long nowNanos) {
    synchronized (arrivals) { // gRPC may read calls on several transport threads
      arrivals.record(nowNanos);
      adapter.runIfDue(nowNanos);
    }
    return current.inline();
  }

  private void adapt(long nowNanos) {
    synchronized (arrivals) {
      adapter.runIfDue(nowNanos);
    }
  }

  private void switchTo(ThreadingModel next) {
    if (!next.equals(current)) {
      current = next;
      switches++;
    }
  }

  ThreadingModel current() {
    return current;
  }

  long switches() {
    return switches;
  }

  @Override
  public void close() {
    adapting.cancel();
  }
}
