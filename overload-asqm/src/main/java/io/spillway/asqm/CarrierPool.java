package io.spillway.asqm;

import io.spillway.api.QueueDelaySignal;
import io.spillway.api.Ticker;
import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A fixed set of platform threads draining one FIFO whose entries are stamped when they arrive,
 * so the age of the oldest entry, the Breakwater queueing-delay signal (breakwater-osdi20 §3.1,
 * §4 "Queueing Delay Measurement"), can be read at any time without a lock.
 *
 * <p>It is {@link io.spillway.api.TimestampedQueue}'s idea with what a carrier pool adds: carriers
 * block on the queue when it is empty, and shutdown is ordered with submission under the same
 * lock, so an entry accepted before {@link #shutdown()} always runs and one offered after is
 * always rejected. In the virtual-thread route the entries are the JDK's continuation tasks (one
 * per mount of a virtual thread); in the platform fallback they are the dispatched tasks.
 *
 * <p>The stamp is read under the lock, so stamps are non-decreasing in queue order and the head
 * holds the true oldest stamp. The injected ticker must therefore be cheap and never block.
 *
 * <p>Thread-safe. Entries run on the carrier threads, in FIFO order of arrival.
 */
final class CarrierPool implements Executor, QueueDelaySignal {

  private static final AtomicInteger POOL_IDS = new AtomicInteger();

  private final Ticker ticker;
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition nonEmpty = lock.newCondition();
  private final Thread[] carriers;

  // Guarded by lock.
  private Runnable[] entries = new Runnable[64];
  private long[] stamps = new long[64];
  private int head;
  private int count;
  private boolean shutdown;

  // Published for lock-free readers (written under lock). A reader that sees size > 0 reads a
  // stamp that was the oldest at some instant during its read; see queueingDelayNanos.
  private volatile long oldestStamp;
  private volatile int publishedSize;
  private volatile long submitted;

  // Set when a close was interrupted: the remaining tasks run with their interrupt status set.
  private volatile boolean interruptTasks;

  /**
   * Set when this pool schedules virtual threads: what is offered after {@link #shutdown()} is a
   * continuation of a virtual thread that outlived the dispatcher (one a task started with {@link
   * Thread#ofVirtual()}, which inherits its scheduler), not a new task.
   */
  private volatile boolean schedulesVirtualThreads;

  CarrierPool(int carrierCount, Ticker ticker, String role) {
    if (carrierCount < 1) {
      throw new IllegalArgumentException("carriers must be positive: " + carrierCount);
    }
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    int id = POOL_IDS.incrementAndGet();
    carriers = new Thread[carrierCount];
    Thread.Builder builder = Thread.ofPlatform()
        .name("spillway-" + role + "-" + id + "-", 0)
        .daemon(true);
    for (int i = 0; i < carrierCount; i++) {
      carriers[i] = builder.unstarted(this::runCarrier);
    }
    for (Thread carrier : carriers) {
      carrier.start();
    }
  }

  /** From now on, {@link #execute} after {@link #shutdown()} runs continuations elsewhere. */
  void schedulesVirtualThreads() {
    schedulesVirtualThreads = true;
  }

  /**
   * Stamps {@code task} with the ticker and queues it for a carrier.
   *
   * <p>After {@link #shutdown()}, a pool that {@link #schedulesVirtualThreads} hands the task, a
   * virtual thread's continuation, to the common fork-join pool, unmeasured: refused, the JDK
   * would throw in whichever thread woke the virtual thread (an {@code unlock()}, a latch's
   * {@code countDown()}), and the woken thread would never run again.
   *
   * @throws RejectedExecutionException after {@link #shutdown()}, on a pool that runs tasks
   */
  @Override
  public void execute(Runnable task) {
    Objects.requireNonNull(task, "task");
    lock.lock();
    try {
      if (shutdown) {
        if (schedulesVirtualThreads) {
          java.util.concurrent.ForkJoinPool.commonPool().execute(task);
          return;
        }
        throw new RejectedExecutionException("carrier pool is shut down");
      }
      long now = ticker.read();
      if (count == entries.length) {
        grow();
      }
      int tail = (head + count) & (entries.length - 1);
      entries[tail] = task;
      stamps[tail] = now;
      if (++count == 1) {
        oldestStamp = now; // before the size, so a reader seeing 1 sees this stamp
      }
      publishedSize = count;
      submitted = submitted + 1; // single writer: the lock holder
      nonEmpty.signal();
    } finally {
      lock.unlock();
    }
  }

  @Override
  public long queueingDelayNanos(long nowNanos) {
    if (publishedSize == 0) {
      return 0;
    }
    long delay = nowNanos - oldestStamp;
    return delay > 0 ? delay : 0;
  }

  /** Entries waiting for a carrier. */
  int size() {
    return publishedSize;
  }

  /** Entries ever accepted (monotonic). */
  long submitted() {
    return submitted;
  }

  int carrierCount() {
    return carriers.length;
  }

  /** The carrier threads (for tests). */
  java.util.List<Thread> carrierThreads() {
    return java.util.List.of(carriers);
  }

  /** Whether {@code thread} is one of this pool's carriers. */
  boolean isCarrier(Thread thread) {
    for (Thread carrier : carriers) {
      if (carrier == thread) {
        return true;
      }
    }
    return false;
  }

  /** Accepts no more entries; carriers exit once the queue is drained. Idempotent. */
  void shutdown() {
    lock.lock();
    try {
      shutdown = true;
      nonEmpty.signalAll();
    } finally {
      lock.unlock();
    }
  }

  /**
   * Waits for every carrier to exit (call {@link #shutdown()} first). If the waiting thread is
   * interrupted and {@code interruptTasksOnInterrupt}, the tasks still running or queued are
   * interrupted (platform fallback: the tasks are the requests); either way waiting goes on.
   *
   * @return whether the waiting thread was interrupted (its status is cleared; the caller
   *     re-asserts it)
   */
  boolean awaitCarriers(boolean interruptTasksOnInterrupt) {
    boolean interrupted = false;
    for (Thread carrier : carriers) {
      while (true) {
        try {
          carrier.join();
          break;
        } catch (InterruptedException e) {
          if (!interrupted && interruptTasksOnInterrupt) {
            interruptTasks = true;
            for (Thread c : carriers) {
              c.interrupt();
            }
          }
          interrupted = true;
        }
      }
    }
    return interrupted;
  }

  private void runCarrier() {
    Thread self = Thread.currentThread();
    while (true) {
      Runnable task;
      lock.lock();
      try {
        while (count == 0) {
          if (shutdown) {
            return;
          }
          nonEmpty.awaitUninterruptibly();
        }
        task = entries[head];
        entries[head] = null;
        head = (head + 1) & (entries.length - 1);
        count--;
        publishedSize = count;
        if (count > 0) {
          oldestStamp = stamps[head];
        }
      } finally {
        lock.unlock();
      }
      // Clear first, then check: an interrupt from an interrupted close is never lost.
      Thread.interrupted();
      if (interruptTasks) {
        self.interrupt();
      }
      try {
        task.run();
      } catch (Throwable failure) {
        reportUncaught(self, failure);
      }
    }
  }

  private static void reportUncaught(Thread thread, Throwable failure) {
    try {
      thread.getUncaughtExceptionHandler().uncaughtException(thread, failure);
    } catch (Throwable ignored) {
      // The handler failed too; the carrier must survive to run the next entry.
    }
  }

  private void grow() {
    int n = entries.length;
    Runnable[] newEntries = new Runnable[n << 1];
    long[] newStamps = new long[n << 1];
    for (int i = 0; i < count; i++) {
      int from = (head + i) & (n - 1);
      newEntries[i] = entries[from];
      newStamps[i] = stamps[from];
    }
    entries = newEntries;
    stamps = newStamps;
    head = 0;
  }
}
