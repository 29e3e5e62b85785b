package io.spillway.asqm;

import io.spillway.api.RequestBudget;
import io.spillway.api.Ticker;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The enqueue stamps of the threads currently waiting on one lock or condition, kept so the
 * oldest is always at the head: Protego's waiter-queue instrumentation (protego-nsdi23 §4
 * "Queueing delay measurement": "When a thread is enqueued to the waiter queue, Protego
 * timestamps the request ... it returns the difference between the current timestamp and the
 * enqueue timestamp of the oldest thread in the waiter queue").
 *
 * <p>A doubly linked list, so a waiter that gives up (interrupt, timeout) or is served out of
 * arrival order (a non-fair lock lets a later waiter win) leaves in O(1). Stamps are read by the
 * joining thread before it joins, so two racing joins may arrive out of stamp order; {@link #join}
 * inserts by stamp (walking back from the tail, normally zero steps) so the head is always the
 * true oldest. Only waiters touch the list, under a short private lock: this is the slow path of
 * an acquisition that is about to park anyway.
 *
 * <p>Thread-safe. Readers take no lock: every change publishes the oldest stamp and the size
 * together as one immutable {@link Head} through one volatile field, so a reader never sees the
 * stamp of one state with the size of another ({@code WaiterLineLincheckTest} model-checks this).
 * That costs one small allocation per join and leave, on the slow path only.
 */
final class WaiterLine {

  static final class Waiter {
    final long stamp;
    Waiter prev;
    Waiter next;

    Waiter(long stamp) {
      this.stamp = stamp;
    }
  }

  /** The oldest stamp and the size at one instant. */
  record Head(long oldestStamp, int size) {
    static final Head EMPTY = new Head(0, 0);

    /** {@code now − oldest stamp}, or zero when nobody waits; never negative. */
    long queueingDelayNanos(long nowNanos) {
      if (size == 0) {
        return 0;
      }
      long delay = nowNanos - oldestStamp;
      return delay > 0 ? delay : 0;
    }
  }

  private final ReentrantLock guard = new ReentrantLock();
  private Waiter head; // guarded by guard
  private Waiter tail; // guarded by guard
  private int size; // guarded by guard

  private volatile Head published = Head.EMPTY; // written under guard

  /** Adds a waiter stamped {@code stampNanos}; the caller must {@link #leave} it exactly once. */
  Waiter join(long stampNanos) {
    Waiter waiter = new Waiter(stampNanos);
    guard.lock();
    try {
      Waiter before = tail;
      while (before != null && before.stamp - stampNanos > 0) {
        before = before.prev;
      }
      waiter.prev = before;
      if (before == null) {
        waiter.next = head;
        head = waiter;
      } else {
        waiter.next = before.next;
        before.next = waiter;
      }
      if (waiter.next == null) {
        tail = waiter;
      } else {
        waiter.next.prev = waiter;
      }
      size++;
      published = new Head(head.stamp, size);
    } finally {
      guard.unlock();
    }
    return waiter;
  }

  /** Removes a waiter added by {@link #join}. */
  void leave(Waiter waiter) {
    guard.lock();
    try {
      Waiter prev = waiter.prev;
      Waiter next = waiter.next;
      if (prev == null) {
        head = next;
      } else {
        prev.next = next;
      }
      if (next == null) {
        tail = prev;
      } else {
        next.prev = prev;
      }
      waiter.prev = null;
      waiter.next = null;
      size--;
      published = head == null ? Head.EMPTY : new Head(head.stamp, size);
    } finally {
      guard.unlock();
    }
  }

  /** {@code now − oldest stamp}, or zero when nobody waits; never negative. */
  long queueingDelayNanos(long nowNanos) {
    return published.queueingDelayNanos(nowNanos);
  }

  int size() {
    return published.size();
  }

  /** The oldest stamp and the size, read together. */
  Head head() {
    return published;
  }

  /** The head's stamp, under the guard (tests check the list against their own model). */
  long oldestStampExact() {
    guard.lock();
    try {
      if (head == null) {
        throw new IllegalStateException("no waiter");
      }
      return head.stamp;
    } finally {
      guard.unlock();
    }
  }

  /** Charges the time waited since {@code enqueuedAt} to the budget in scope, if any (Protego §3.2). */
  static void chargeWait(Ticker ticker, long enqueuedAt) {
    RequestBudget budget = RequestBudget.currentOrNull();
    if (budget != null) {
      budget.charge(ticker.read() - enqueuedAt);
    }
  }
}
