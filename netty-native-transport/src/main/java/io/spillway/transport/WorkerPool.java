package io.spillway.transport;

import io.spillway.api.QueueDelaySignal;
import io.spillway.api.TimestampedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The dispatch models' worker pool (mutune-osdi18 §3.2): every thread it may ever use is started up
 * front and those beyond the current size are parked, so growing the pool wakes a thread instead
 * of creating one ("we create maximally sized thread pools on start-up and then park extraneous
 * threads"). Requests wait in a {@link TimestampedQueue}, whose oldest stamp is the dispatch
 * stage's queueing delay (breakwater-osdi20 §3.1).
 *
 * <p>Thread-safe: any thread may submit, resize and read the delay.
 */
final class WorkerPool implements Executor, QueueDelaySignal, AutoCloseable {

  private final TimestampedQueue<Runnable> queue = new TimestampedQueue<>(1024);
  /** Beside {@link #queue}, in its order: what counts each task as unfinished (under the lock). */
  private final java.util.ArrayDeque<AtomicInteger> owners = new java.util.ArrayDeque<>(1024);
  /** The owner of tasks no caller counts: never changed (the deque takes no null). */
  private static final AtomicInteger UNCOUNTED = new AtomicInteger();
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition work = lock.newCondition();
  private final Condition parked = lock.newCondition();
  private final Thread[] threads;
  private final io.spillway.api.Ticker ticker;
  private int active;
  private boolean closed;

  /** Starts {@code maxThreads} platform threads, {@code active} of them taking work. */
  WorkerPool(int maxThreads, int active, io.spillway.api.Ticker ticker) {
    if (maxThreads < 1 || active < 0 || active > maxThreads) {
      throw new IllegalArgumentException("1 <= maxThreads, 0 <= active <= maxThreads: " + maxThreads + ", " + active);
    }
    this.ticker = ticker;
    this.active = active;
    threads = new Thread[maxThreads];
    for (int i = 0; i < maxThreads; i++) {
      int index = i;
      threads[i] = Thread.ofPlatform().daemon().name("spillway-worker-" + i).unstarted(() -> work(index));
      threads[i].start();
    }
  }

  /** Queues {@code task}, stamped with {@code nowNanos}. */
  void execute(Runnable task, long nowNanos) {
    execute(task, nowNanos, UNCOUNTED);
  }

  /**
   * Queues {@code task}, stamped with {@code nowNanos}, and counts it in {@code unfinished} until
   * it has run: incremented here, decremented by the worker after it (also if it throws), and
   * left as it was if the pool refuses the task.
   */
  void execute(Runnable task, long nowNanos, AtomicInteger unfinished) {
    lock.lock();
    try {
      if (closed) {
        throw new java.util.concurrent.RejectedExecutionException("worker pool closed");
      }
      queue.offer(task, nowNanos);
      owners.add(unfinished);
      if (unfinished != UNCOUNTED) {
        unfinished.incrementAndGet();
      }
      work.signal();
    } finally {
      lock.unlock();
    }
  }

  @Override
  public void execute(Runnable task) {
    execute(task, ticker.read());
  }

  /** Sets how many threads take work (the others park); takes effect at once. */
  void resize(int threadsActive) {
    if (threadsActive < 0 || threadsActive > threads.length) {
      throw new IllegalArgumentException("0 <= size <= " + threads.length + ": " + threadsActive);
    }
    lock.lock();
    try {
      active = threadsActive;
      parked.signalAll(); // those now inside the size start taking work
      work.signalAll();   // those now outside it move to parked
    } finally {
      lock.unlock();
    }
  }

  /** How many threads take work. */
  int active() {
    lock.lock();
    try {
      return active;
    } finally {
      lock.unlock();
    }
  }

  /** The most threads it can take work on. */
  int maxThreads() {
    return threads.length;
  }

  /** Requests waiting for a worker. */
  int queued() {
    return queue.size();
  }

  @Override
  public long queueingDelayNanos(long nowNanos) {
    return queue.queueingDelayNanos(nowNanos);
  }

  private void work(int index) {
    while (true) {
      Runnable task;
      AtomicInteger owner;
      lock.lock();
      try {
        while (true) {
          if (closed && queue.isEmpty()) {
            return;
          }
          if (index >= active && !closed) {
            parked.awaitUninterruptibly();
          } else if (queue.isEmpty()) {
            work.awaitUninterruptibly();
          } else {
            break;
          }
        }
        task = queue.poll();
        owner = owners.poll();
      } finally {
        lock.unlock();
      }
      try {
        task.run();
      } catch (Throwable t) {
        // Tasks end their own requests (ServerFrameHandler's Dispatch catches everything); one
        // that throws must not take a worker with it.
        HandlerFailures.report(System.getLogger(WorkerPool.class.getName()), t);
      } finally {
        if (owner != UNCOUNTED) {
          owner.decrementAndGet();
        }
      }
    }
  }

  /** Stops taking new work; the threads finish what is queued, then end. */
  @Override
  public void close() {
    lock.lock();
    try {
      closed = true;
      parked.signalAll();
      work.signalAll();
    } finally {
      lock.unlock();
    }
  }
}
