package io.spillway.transport;

import io.spillway.threading.ArrivalRateEstimator;
import io.spillway.threading.ThreadingModel;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A server's live threading model (mutune-osdi18 §3–§4): which model its network threads follow,
 * changed from any thread by {@link #switchTo} (an operator) or {@link #adaptTo} (the adaptation
 * loop), and applied by each network thread as requests arrive, without losing or reordering one.
 *
 * <p>An operator's switch pins the model: the adaptation's moves are ignored until {@link #resume}.
 * Both kinds of move take this object's lock, so a decision the adaptation made against the model
 * before an operator's switch cannot land after it and undo it.
 *
 * <ul>
 *   <li><b>Reception</b> is read by the network threads' I/O handlers on every loop iteration
 *       ({@link ReceptionIoHandlerFactory}): under {@code POLL} the loop asks for ready sockets
 *       without waiting ({@code epoll_wait} with a zero timeout, {@code io_uring_enter} without
 *       waiting for a completion, {@code selectNow}) and comes straight back, so an arrival never
 *       waits for a wake-up; under {@code BLOCK} it waits in the kernel as Netty's default does.
 *   <li><b>Execution</b> changes per network thread ({@link Loop}), at the next request it reads,
 *       and only in a way that keeps the start order of its requests: going to dispatch, the
 *       requests still queued on the loop move to the workers first, in order, with their stamps;
 *       going in-line, the loop keeps dispatching until every request it dispatched has finished,
 *       as µTune lets "in-flight requests during transitions" finish under the earlier model (§4).
 *   <li><b>Pool size</b> changes at once: {@link WorkerPool#resize} parks or wakes threads started
 *       up front. Going in-line leaves the workers as they are: they finish what was dispatched and
 *       then wait, idle, on their queue.
 * </ul>
 *
 * <p>Thread-safe.
 */
final class ThreadingSwitch {

  private final Set<ThreadingModel> allowed;
  private final WorkerPool pool; // null if no allowed model dispatches
  private final AtomicLong switches = new AtomicLong();
  private volatile ThreadingModel target;
  /** Run by the network threads as they record arrivals; null until the server adapts. */
  private volatile io.spillway.threading.ThreadingAdapter adapter;
  /** Set by an operator's switch: the adaptation may not move the model until {@link #resume}. */
  private boolean pinned;

  ThreadingSwitch(ThreadingModel initial, Set<ThreadingModel> allowed, WorkerPool pool) {
    this.allowed = Set.copyOf(allowed);
    this.pool = pool;
    if (!this.allowed.contains(initial)) {
      throw new IllegalArgumentException(initial + " is not among " + allowed);
    }
    this.target = initial;
    if (!initial.inline()) {
      pool.resize(initial.workers());
    }
  }

  /** The most workers any allowed model uses (the pool's threads); 0 if none dispatches. */
  static int maxWorkers(Set<ThreadingModel> models) {
    return models.stream().mapToInt(ThreadingModel::workers).max().orElse(0);
  }

  /** The model the server runs (new requests follow it; see the class comment for transitions). */
  ThreadingModel current() {
    return target;
  }

  /** How many times the model has changed. */
  long switches() {
    return switches.get();
  }

  /**
   * Moves the server to {@code model} for an operator and pins it there: the adaptation's moves
   * ({@link #adaptTo}) are ignored until {@link #resume}.
   *
   * @throws IllegalArgumentException if {@code model} is not one this server was built for
   */
  synchronized void switchTo(ThreadingModel model) {
    check(model);
    pinned = true;
    move(model);
  }

  /**
   * Moves the server to {@code model} for the adaptation loop, unless an operator has pinned the
   * model.
   *
   * @throws IllegalArgumentException if {@code model} is not one this server was built for
   */
  synchronized void adaptTo(ThreadingModel model) {
    check(model);
    if (!pinned) {
      move(model);
    }
  }

  /** Hands the choice of model back to the adaptation. */
  synchronized void resume() {
    pinned = false;
  }

  /** Whether an operator's switch holds the model (see {@link #switchTo}). */
  synchronized boolean pinned() {
    return pinned;
  }

  private void check(ThreadingModel model) {
    Objects.requireNonNull(model, "model");
    if (!allowed.contains(model)) {
      throw new IllegalArgumentException(model + " is not among this server's models " + allowed);
    }
  }

  private void move(ThreadingModel model) {
    if (model.equals(target)) {
      return;
    }
    if (!model.inline()) {
      pool.resize(model.workers());
    }
    target = model;
    switches.incrementAndGet();
  }

  /**
   * Has the network threads run {@code adaptation} as they record arrivals, when a period has
   * passed since its last run ({@link io.spillway.threading.ThreadingAdapter#runIfDue}).
   */
  void adaptOnArrivals(io.spillway.threading.ThreadingAdapter adaptation) {
    this.adapter = adaptation;
  }

  /** Whether the network threads poll now: read by their loops once per iteration. */
  boolean polls() {
    return target.polls();
  }

  /** One network thread's side of the switch. Confined to that thread's event loop. */
  final class Loop {
    private final LoopQueue queue;
    private final ArrivalRateEstimator arrivals; // null: not adapting
    /** This loop's requests on the workers, queued or running: decremented by the worker. */
    private final java.util.concurrent.atomic.AtomicInteger dispatched =
        new java.util.concurrent.atomic.AtomicInteger();
    private boolean inline;

    Loop(LoopQueue queue, ArrivalRateEstimator arrivals) {
      this.queue = queue;
      this.arrivals = arrivals;
      this.inline = target.inline();
    }

    ArrivalRateEstimator arrivals() {
      return arrivals;
    }

    /**
     * Records the arrival of an admitted request (µTune's load detector) and, when it is due, runs
     * the adaptation here, on the reading the request already took.
     */
    void arrived(long nowNanos) {
      if (arrivals != null) {
        arrivals.record(nowNanos);
        io.spillway.threading.ThreadingAdapter a = adapter;
        if (a != null) {
          a.runIfDue(nowNanos);
        }
      }
    }

    /** Runs an admitted request under the current model. On the loop. */
    void submit(LoopQueue.Task request, long nowNanos) {
      boolean wantInline = target.inline();
      if (wantInline != inline) {
        if (!wantInline) {
          queue.drainTo(this::dispatch);
          inline = false;
        } else if (dispatched.get() == 0) {
          // Order is kept per connection, and a connection's requests all arrive on this loop:
          // once this loop's own dispatched requests have finished, none of its requests can
          // start after one it runs in-line. Other loops' requests on the workers do not hold it
          // back; waiting for the whole pool to be empty would keep every loop dispatching for
          // as long as any one loop has a request running, under load indefinitely.
          inline = true;
        }
      }
      if (inline) {
        queue.submit(request, nowNanos);
      } else {
        dispatch(request, nowNanos);
      }
    }

    /**
     * Hands a request to the workers; one they refuse ends here, unrun. Every request taken off
     * this loop's queue or out of its socket must end exactly once (docs/design.md), and a request
     * being moved to the workers has already left the queue that would otherwise end it. The pool
     * refuses only once closed, which the server does after its loops have stopped.
     */
    private void dispatch(LoopQueue.Task request, long stampNanos) {
      try {
        pool.execute(request, stampNanos, dispatched); // counted without a wrapper per request
      } catch (java.util.concurrent.RejectedExecutionException closed) {
        request.abandon();
      }
    }

    /** Whether this loop currently runs its requests in-line. */
    boolean runsInline() {
      return inline;
    }
  }

  /** The loops' in-line queues and the pool, as the dispatch stages of the overload signal. */
  static List<io.spillway.api.QueueDelaySignal> stages(List<LoopQueue> queues, WorkerPool pool) {
    List<io.spillway.api.QueueDelaySignal> s = new java.util.ArrayList<>(queues);
    if (pool != null) {
      s.add(pool);
    }
    return s;
  }
}
