package io.spillway.spring.internal;

import io.spillway.api.QueueDelaySignal;
import io.spillway.api.Ticker;
import io.spillway.grpc.UnstartedCalls;
import java.io.Closeable;
import java.io.IOException;
import java.util.Objects;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import org.eclipse.jetty.util.thread.Invocable;
import org.eclipse.jetty.util.thread.QueuedThreadPool;
import org.eclipse.jetty.util.thread.ReservedThreadExecutor;

/**
 * Jetty's request worker pool as a measured queueing stage: a {@link QueuedThreadPool} that stamps
 * each job as it is handed over ({@link #execute}) and clears the stamp as a worker starts it, so
 * {@link #queueDelay()} reads how long the oldest job not yet started has waited for a thread.
 * That is Breakwater's thread queueing delay (breakwater-osdi20 §3.1, §4), the same stage {@link
 * MeasuredExecutor} measures in front of Tomcat's pool; an idle pool reads zero.
 *
 * <p>What it sees. Jetty's selector hands a connection's read work to this pool when that work may
 * block (a servlet request does): by {@link #execute} when no thread is reserved, and then the job
 * queues if every thread is busy; those jobs are measured. Two hand-overs are not:
 *
 * <ul>
 *   <li>{@link #tryExecute}: a job given to a reserved thread, which Jetty does only when one is
 *       parked and waiting for it, so the job starts at once and has no queueing delay;
 *   <li>the job that starts a new reserved thread ({@link ReservedThreadExecutor}'s own). It is a
 *       spare thread Jetty asks for after a reserved hand-over failed, not a request; left in the
 *       queue while every thread is busy, it would read as a request waiting when none does.
 * </ul>
 *
 * <p>Jobs wrapped for the stamp keep their {@link Invocable} type, and a wrapped {@link Closeable}
 * job is still closed if the pool stops before running it.
 *
 * <p>Thread-safe.
 */
public final class MeasuredQueuedThreadPool extends QueuedThreadPool {

  private final Ticker ticker;
  private final UnstartedCalls waiting = new UnstartedCalls();
  private final AtomicInteger unstarted = new AtomicInteger();
  private final LongAdder submitted = new LongAdder();

  /**
   * As Jetty's {@link QueuedThreadPool#QueuedThreadPool(int, int, int, BlockingQueue)}.
   *
   * @param queue the job queue, or {@code null} for Jetty's default (unbounded)
   * @param ticker stamps the jobs; read the delay with the same clock
   */
  public MeasuredQueuedThreadPool(int maxThreads, int minThreads, int idleTimeoutMillis,
      BlockingQueue<Runnable> queue, Ticker ticker) {
    super(maxThreads, minThreads, idleTimeoutMillis, queue);
    this.ticker = Objects.requireNonNull(ticker, "ticker");
  }

  @Override
  public void execute(Runnable job) {
    if (job.getClass().getEnclosingClass() == ReservedThreadExecutor.class) {
      super.execute(job);
      return;
    }
    submitted.increment();
    long ticket = waiting.arrived(ticker.read());
    unstarted.incrementAndGet();
    Stamped stamped = job instanceof Closeable ? new StampedCloseable(job, ticket)
        : new Stamped(job, ticket);
    try {
      super.execute(stamped);
    } catch (RejectedExecutionException e) {
      stamped.clear();
      throw e;
    }
  }

  /** How long the oldest job not yet started has waited. */
  public QueueDelaySignal queueDelay() {
    return waiting;
  }

  /** Jobs handed over by {@link #execute} and not yet started (or rejected). */
  public int unstarted() {
    return unstarted.get();
  }

  /** Jobs handed over by {@link #execute} so far. */
  public long submitted() {
    return submitted.sum();
  }

  private class Stamped implements Runnable, Invocable {
    final Runnable job;
    private final long ticket;

    Stamped(Runnable job, long ticket) {
      this.job = job;
      this.ticket = ticket;
    }

    /** Called once: the job started, was closed unrun, or was refused. */
    final void clear() {
      waiting.started(ticket);
      unstarted.decrementAndGet();
    }

    @Override
    public void run() {
      clear();
      job.run();
    }

    @Override
    public InvocationType getInvocationType() {
      return Invocable.getInvocationType(job);
    }

    @Override
    public String toString() {
      return job.toString();
    }
  }

  private final class StampedCloseable extends Stamped implements Closeable {
    StampedCloseable(Runnable job, long ticket) {
      super(job, ticket);
    }

    @Override
    public void close() throws IOException {
      clear();
      ((Closeable) job).close();
    }
  }
}
