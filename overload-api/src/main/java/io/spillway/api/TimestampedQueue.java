package io.spillway.api;

import java.util.Arrays;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A FIFO queue that stamps every item with its enqueue time and publishes the oldest stamp, so its
 * queueing delay can be read without locking (breakwater-osdi20 §3.1, §4 "Queueing Delay
 * Measurement": "each queue maintains the oldest timestamp of enqueued elements ... updated on
 * every dequeue").
 *
 * <p>Thread-safe: any thread may offer, poll and read the delay. Offer and poll take a short
 * uncontended lock; {@link #queueingDelayNanos} takes none. The queue grows as needed (a server's
 * backlog is bounded by admission control, not by this class); {@link #size()} is exact.
 *
 * @param <E> the item type
 */
public final class TimestampedQueue<E> implements QueueDelaySignal {

  private final ReentrantLock lock = new ReentrantLock();
  private Object[] items;
  private long[] stamps;
  private int head;
  private int count;

  // Published for lock-free readers. Writers order them so that a reader that sees size > 0
  // also sees an oldest stamp no newer than the real one was at some instant of the read.
  private volatile long oldestStamp;
  private volatile int publishedSize;

  /** Creates an empty queue. */
  public TimestampedQueue() {
    this(16);
  }

  /** Creates an empty queue sized for {@code initialCapacity} items before it first grows. */
  public TimestampedQueue(int initialCapacity) {
    int capacity = Integer.highestOneBit(Math.max(2, initialCapacity - 1)) << 1;
    items = new Object[capacity];
    stamps = new long[capacity];
  }

  /** Appends {@code item}, stamped with {@code nowNanos}. */
  public void offer(E item, long nowNanos) {
    if (item == null) {
      throw new NullPointerException("item");
    }
    lock.lock();
    try {
      if (count == items.length) {
        grow();
      }
      int tail = (head + count) & (items.length - 1);
      items[tail] = item;
      stamps[tail] = nowNanos;
      count++;
      if (count == 1) {
        oldestStamp = nowNanos;
      }
      publishedSize = count;
    } finally {
      lock.unlock();
    }
  }

  /** Removes and returns the oldest item, or {@code null} if the queue is empty. */
  @SuppressWarnings("unchecked")
  public E poll() {
    lock.lock();
    try {
      if (count == 0) {
        return null;
      }
      E item = (E) items[head];
      items[head] = null;
      head = (head + 1) & (items.length - 1);
      count--;
      publishedSize = count;
      if (count > 0) {
        oldestStamp = stamps[head];
      }
      return item;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Removes, oldest first, every item that has waited at least {@code maxAgeNanos} at {@code
   * nowNanos}, and hands each to {@code sink} (outside the lock). Returns how many were removed.
   * Because the queue is FIFO, this costs O(removed): it stops at the first item still young.
   */
  public int pollOlderThan(long nowNanos, long maxAgeNanos, java.util.function.Consumer<? super E> sink) {
    int removed = 0;
    while (true) {
      E item;
      lock.lock();
      try {
        if (count == 0 || nowNanos - stamps[head] < maxAgeNanos) {
          return removed;
        }
        item = poll();
      } finally {
        lock.unlock();
      }
      removed++;
      sink.accept(item);
    }
  }

  /**
   * Removes the oldest item that {@code matches} accepts, wherever it is in the queue, keeping the
   * order of the rest; returns whether one was removed. For an item whose waiter went away (a
   * cancelled request): it costs O(size), where {@link #offer} and {@link #poll} cost O(1).
   */
  public boolean removeFirst(java.util.function.Predicate<? super E> matches) {
    lock.lock();
    try {
      int mask = items.length - 1;
      for (int i = 0; i < count; i++) {
        @SuppressWarnings("unchecked")
        E item = (E) items[(head + i) & mask];
        if (!matches.test(item)) {
          continue;
        }
        // close the gap from the head's side: the items before it move one place toward the tail
        for (int j = i; j > 0; j--) {
          int to = (head + j) & mask;
          int from = (head + j - 1) & mask;
          items[to] = items[from];
          stamps[to] = stamps[from];
        }
        items[head] = null;
        head = (head + 1) & mask;
        count--;
        publishedSize = count;
        if (count > 0) {
          oldestStamp = stamps[head];
        }
        return true;
      }
      return false;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Returns the enqueue stamp of the oldest item. Only meaningful while {@link #size()} is
   * positive; callers that poll from one thread may read it before polling.
   */
  public long oldestEnqueueNanos() {
    return oldestStamp;
  }

  /** The number of queued items. */
  public int size() {
    return publishedSize;
  }

  /** Whether the queue is empty. */
  public boolean isEmpty() {
    return publishedSize == 0;
  }

  @Override
  public long queueingDelayNanos(long nowNanos) {
    if (publishedSize == 0) {
      return 0;
    }
    long delay = nowNanos - oldestStamp;
    return delay > 0 ? delay : 0;
  }

  private void grow() {
    int n = items.length;
    Object[] newItems = new Object[n << 1];
    long[] newStamps = new long[n << 1];
    for (int i = 0; i < count; i++) {
      int from = (head + i) & (n - 1);
      newItems[i] = items[from];
      newStamps[i] = stamps[from];
    }
    Arrays.fill(items, null);
    items = newItems;
    stamps = newStamps;
    head = 0;
  }
}
