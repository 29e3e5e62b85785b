package io.spillway.sim;

import io.spillway.api.Scheduler;
import java.util.PriorityQueue;
import java.util.function.LongSupplier;

/**
 * The simulators' future-event list: events in time order, ties in the order they were scheduled,
 * so a run is a pure function of its seed. Cancelling marks an event; {@link #next} skips it.
 *
 * <p>Not thread-safe: one simulation, one thread.
 */
final class EventQueue {

  /** One scheduled event. {@code target} and {@code aux} are free for the simulation's use. */
  static final class Event implements Comparable<Event> {
    final long time;
    final long seq;
    final int type;
    final Object payload;
    Object target;
    int aux;
    boolean cancelled;

    Event(long time, long seq, int type, Object payload) {
      this.time = time;
      this.seq = seq;
      this.type = type;
      this.payload = payload;
    }

    @Override
    public int compareTo(Event o) {
      int c = Long.compare(time, o.time);
      return c != 0 ? c : Long.compare(seq, o.seq);
    }
  }

  private final PriorityQueue<Event> events = new PriorityQueue<>();
  private long sequence;

  /** Schedules an event at simulated time {@code time}. */
  Event schedule(long time, int type, Object payload) {
    Event e = new Event(time, sequence++, type, payload);
    events.add(e);
    return e;
  }

  /** The next event due before {@code endNanos} that was not cancelled; {@code null} when none is. */
  Event next(long endNanos) {
    while (!events.isEmpty()) {
      Event e = events.poll();
      if (e.time >= endNanos) {
        return null;
      }
      if (!e.cancelled) {
        return e;
      }
    }
    return null;
  }

  /**
   * The controllers' {@link Scheduler}: each task becomes an event of {@code taskType} at the
   * simulated time {@code now} reads plus its delay; its handle cancels the event.
   */
  Scheduler scheduler(int taskType, LongSupplier now) {
    return (task, delayNanos) -> {
      if (delayNanos < 0) {
        throw new IllegalArgumentException("negative delay: " + delayNanos);
      }
      Event e = schedule(now.getAsLong() + delayNanos, taskType, task);
      return () -> e.cancelled = true;
    };
  }
}
