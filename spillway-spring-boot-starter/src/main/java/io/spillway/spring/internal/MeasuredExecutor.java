package io.spillway.spring.internal;

import io.spillway.api.QueueDelaySignal;
import io.spillway.api.Ticker;
import io.spillway.grpc.UnstartedCalls;
import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;

/**
 * An executor in front of a web server's worker pool that measures how long its oldest task has
 * waited to start: Breakwater's thread queueing delay (breakwater-osdi20 §3.1, §4), kept per task
 * in an {@link UnstartedCalls} ring. Each task is stamped as it is handed over and cleared as it
 * starts; an idle pool reads zero. Tomcat hands a connection to its executor once per request it
 * reads, so this is the wait of requests for a worker thread.
 *
 * <p>Thread-safe. Closing shuts the delegate down if it is an {@link ExecutorService} this object
 * owns.
 */
public final class MeasuredExecutor implements Executor, AutoCloseable {

  private final Executor delegate;
  private final Ticker ticker;
  private final UnstartedCalls waiting = new UnstartedCalls();
  private final boolean owned;
  private final java.util.concurrent.atomic.LongAdder submitted =
      new java.util.concurrent.atomic.LongAdder();

  /**
   * @param delegate the pool that runs the tasks
   * @param ticker stamps the tasks; read the delay with the same clock
   * @param owned whether {@link #close} shuts {@code delegate} down
   */
  public MeasuredExecutor(Executor delegate, Ticker ticker, boolean owned) {
    this.delegate = Objects.requireNonNull(delegate, "delegate");
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    this.owned = owned;
  }

  @Override
  public void execute(Runnable task) {
    submitted.increment();
    long ticket = waiting.arrived(ticker.read());
    try {
      delegate.execute(new Stamped(task, ticket));
    } catch (RejectedExecutionException e) {
      waiting.started(ticket);
      throw e;
    }
  }

  /** How long the oldest task not yet started has waited. */
  public QueueDelaySignal queueDelay() {
    return waiting;
  }

  /** Tasks handed over so far. */
  public long submitted() {
    return submitted.sum();
  }

  /** The pool behind this executor. */
  public Executor delegate() {
    return delegate;
  }

  @Override
  public void close() {
    if (owned && delegate instanceof ExecutorService service) {
      service.shutdown();
    }
  }

  @Override
  public String toString() {
    return "MeasuredExecutor[" + delegate + "]";
  }

  private final class Stamped implements Runnable {
    private final Runnable task;
    private final long ticket;

    Stamped(Runnable task, long ticket) {
      this.task = task;
      this.ticket = ticket;
    }

    @Override
    public void run() {
      waiting.started(ticket);
      task.run();
    }
  }
}
