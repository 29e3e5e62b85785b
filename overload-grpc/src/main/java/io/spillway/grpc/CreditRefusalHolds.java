package io.spillway.grpc;

import io.spillway.api.Scheduler;
import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Calls refused for want of credit ({@code REJECTED_NO_CREDIT}) on a connection, answered after a
 * hold instead of at once: gRPC's counterpart of the native transport's hold on reading a
 * connection (its {@code ServerFrameHandler}).
 *
 * <p>Why. A credit gate refuses for credit only a call that came on no credit the server gave:
 * a session with its whole window in the server (Breakwater §3.2: a client sends only with a
 * credit in hand), or a session its connection may not add (Breakwater's server gate bounds the
 * sessions one connection has on probation, "Newcomers"). Nothing the connection sends next can
 * fare better until something changes, and every refusal costs the server's core the decoding of
 * the call's headers, the decision and the writing of its trailers: 7–9 µs a call through
 * grpc-java, so a client that invents a session id for every call with 16 calls outstanding took
 * 0.13–0.15 of a core in refusals alone (docs/results/reliability.md, "Session floods"). The
 * native transport stops reading such a connection; gRPC multiplexes the connection and offers
 * no per-connection reading stop, so the refusal's answer is what waits. A client that waits for
 * its answers before it sends more (any client with a bound on its calls outstanding) is slowed
 * to its bound per hold, and the server's core is spent on the others.
 *
 * <p>The rules, as the native transport's: a connection's holds run one at a time; a refusal
 * while none runs starts one of {@value #FIRST_HOLD_NANOS} ns, and refusals during it join it
 * and are answered at its end. Each hold in a row is twice as long as the one before, up to
 * {@value #MAX_HOLD_NANOS} ns, as TCP backs off its retransmissions (RFC 6298 §5.5); a call of the
 * connection that is admitted starts them again from the first. A well-behaved client, refused
 * for credit only when its window was in doubt (a call it cancelled on its way), loses the first
 * hold at most. A connection that keeps sending without credit is answered at most {@value
 * #MAX_HELD_PER_ORIGIN} calls per {@value #MAX_HOLD_NANOS} ns once backed off; beyond that many
 * held, a refusal is answered at once, so what a connection that does not wait for its answers
 * leaves in the server is bounded, and so is the number of connections held ({@value
 * #MAX_ORIGINS}; a refusal on one more is answered at once). A connection quiet for {@value
 * #FORGET_AFTER_NANOS} ns after its last hold is forgotten.
 *
 * <p>Only the time of the answer changes: the call's permit ended when it was refused, and its
 * trailers (credit change, status, pushback) are those it had then.
 *
 * <p>Thread-safe. Answers run on the scheduler's thread; an answer that throws is logged at
 * DEBUG and the others still run.
 */
final class CreditRefusalHolds {

  private static final System.Logger LOG = System.getLogger(CreditRefusalHolds.class.getName());

  static final long FIRST_HOLD_NANOS = 50_000;
  static final long MAX_HOLD_NANOS = 10_000_000;
  static final long FORGET_AFTER_NANOS = 2 * MAX_HOLD_NANOS;
  static final int MAX_HELD_PER_ORIGIN = 256;
  static final int MAX_ORIGINS = 4_096;

  private final Scheduler scheduler;
  private final ConcurrentHashMap<Long, Origin> origins = new ConcurrentHashMap<>();
  private final AtomicInteger held = new AtomicInteger();
  private final java.util.concurrent.atomic.AtomicLong heldEver = new java.util.concurrent.atomic.AtomicLong();

  /** @param scheduler runs the answers at the end of each hold */
  CreditRefusalHolds(Scheduler scheduler) {
    this.scheduler = java.util.Objects.requireNonNull(scheduler, "scheduler");
  }

  /**
   * Holds {@code answer}, a refusal for credit on connection {@code origin} (never 0), to the end
   * of the connection's hold; false if it is not held, and the caller answers at once.
   */
  boolean hold(long origin, Runnable answer) {
    Long key = origin;
    Origin o = origins.get(key);
    if (o == null) {
      if (origins.size() >= MAX_ORIGINS) {
        return false;
      }
      o = origins.computeIfAbsent(key, Origin::new);
    }
    long delay;
    synchronized (o) {
      if (o.forgotten) { // removed as it was found: a rare race, answered at once
        return false;
      }
      if (o.waiting != null) {
        if (o.waiting.size() >= MAX_HELD_PER_ORIGIN) {
          return false;
        }
        o.waiting.add(answer);
        held.incrementAndGet();
        heldEver.incrementAndGet();
        return true;
      }
      delay = Math.min(MAX_HOLD_NANOS, FIRST_HOLD_NANOS << Math.min(o.inARow, 20));
      o.inARow++;
      o.holds++;
      o.waiting = new ArrayList<>();
      o.waiting.add(answer);
      held.incrementAndGet();
      heldEver.incrementAndGet();
    }
    Origin holding = o;
    scheduler.schedule(() -> release(holding), delay);
    return true;
  }

  /** A call on connection {@code origin} was admitted: its next hold is the first again. */
  void admitted(long origin) {
    if (origins.isEmpty()) {
      return; // the common case: no connection held, nothing looked up
    }
    Origin o = origins.get(origin);
    if (o != null) {
      synchronized (o) {
        o.inARow = 0;
      }
    }
  }

  /** Calls held now. */
  int heldCalls() {
    return held.get();
  }

  /** Refusals held since this was made, answered or not. */
  long refusalsHeld() {
    return heldEver.get();
  }

  /** Connections with a hold running or remembered. */
  int origins() {
    return origins.size();
  }

  private void release(Origin o) {
    List<Runnable> answers;
    long hold;
    synchronized (o) {
      answers = o.waiting;
      o.waiting = null;
      hold = o.holds;
    }
    held.addAndGet(-answers.size());
    for (Runnable answer : answers) {
      try {
        answer.run();
      } catch (RuntimeException e) {
        LOG.log(Level.DEBUG, "a held refusal could not be answered", e);
      }
    }
    scheduler.schedule(() -> forget(o, hold), FORGET_AFTER_NANOS);
  }

  /** Removes a connection whose last hold was {@code hold}, if none has started since. */
  private void forget(Origin o, long hold) {
    synchronized (o) {
      if (o.waiting != null || o.holds != hold) {
        return;
      }
      o.forgotten = true;
    }
    origins.remove(o.key, o);
  }

  /** One connection's holds; fields guarded by its monitor. */
  private static final class Origin {
    final Long key;
    /** The answers waiting for the running hold's end; {@code null} while none runs. */
    List<Runnable> waiting;
    /** Holds since the connection's last admitted call. */
    int inARow;
    /** Holds started, ever: tells {@link #forget} whether one started since it was scheduled. */
    long holds;
    boolean forgotten;

    Origin(Long key) {
      this.key = key;
    }
  }
}
