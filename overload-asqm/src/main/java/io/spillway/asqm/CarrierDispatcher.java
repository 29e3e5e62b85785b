package io.spillway.asqm;

import io.spillway.api.QueueDelaySignal;
import io.spillway.api.Ticker;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Runs each admitted request on its own virtual thread, on a fixed set of carrier threads whose
 * run queue is a queueing stage with a measured delay: {@link #queueDelay()} reports {@code now −
 * stamp of the oldest queued entry} (zero when nothing waits), the per-queue signal of Breakwater
 * (breakwater-osdi20 §3.1 "thread queueing delay", §4 "Queueing Delay Measurement"). A server adds
 * it to its event-loop backlog with {@link QueueDelaySignal#sum}.
 *
 * <h2>Two routes</h2>
 *
 * <p><b>Virtual threads on a custom scheduler</b> ({@link #usesVirtualThreads()} true). The
 * dispatcher's scheduler is an {@link Executor} that stamps, with the injected {@link Ticker},
 * every task the JDK submits to it, and queues them FIFO for {@code carriers} platform carrier
 * threads. The JDK submits one task per <em>mount</em> of a virtual thread: when it starts and
 * every time it becomes runnable again after parking (a contended {@link
 * java.util.concurrent.locks.Lock}, a monitor, a condition, socket I/O, a timed park expiring).
 * So a request that wakes after a lock or I/O waits in the carrier queue again, and that wait is
 * counted, which the default scheduler would hide. JDK 25 has no public API for a custom
 * scheduler; the only route is the package-private constructor {@code
 * java.lang.ThreadBuilders$VirtualThreadBuilder(Executor)}, reached by reflection, which requires
 * the JVM option {@code --add-opens java.base/java.lang=ALL-UNNAMED} (or {@code =<module>}).
 * {@link #create} also starts one probe virtual thread to check that the JDK really runs it on
 * the given scheduler.
 *
 * <p><b>Platform fallback</b> ({@link #usesVirtualThreads()} false). When the constructor is
 * missing, {@code java.lang} is not opened, or the probe fails, {@link #create} falls back to a
 * fixed pool of {@code carriers} platform threads fed by the same stamped FIFO, so the delay
 * signal is the dispatch queue's own; the reason is logged once per JVM (level {@code WARNING},
 * logger {@code io.spillway.asqm.CarrierDispatcher}) and returned by {@link #fallbackReason()}.
 * Tasks then run to completion on a pool thread, and a task that blocks holds its thread.
 * {@link #platform} chooses this route deliberately (without a warning).
 *
 * <h2>What the signal sees and what it does not</h2>
 *
 * <p>A virtual thread holds its carrier until it parks or ends (JDK 25 does not time-slice), so a
 * CPU-bound request shows up as delay of the others, which is the CPU congestion the signal is
 * for. A virtual thread that parks while pinned (inside a native frame) keeps its carrier and is
 * not re-submitted; likewise blocking file I/O holds its carrier, and unlike the JDK's default
 * {@link java.util.concurrent.ForkJoinPool} scheduler this one adds no compensating carrier, so
 * size {@code carriers} for the cores request handling may use, not for blocking. Entries are
 * stamped under the queue's lock, so stamps are ordered; the ticker is called on whatever thread
 * wakes a virtual thread and must be cheap, non-blocking and thread-safe. The queue is one FIFO shared by all carriers: exact oldest-entry delay, at the
 * price of a short lock per mount.
 *
 * <p><b>Thread-safety:</b> thread-safe. {@link #execute}, {@link #queueDelay}, {@link #queued}
 * may be called from any thread (the delay and queue length are read without locks); tasks run on
 * virtual threads (or pool threads in the fallback). An exception thrown by a task goes to its
 * thread's uncaught-exception handler. {@link #close()} may be called from any thread except one
 * of this dispatcher's own tasks.
 */
public final class CarrierDispatcher implements Executor, AutoCloseable {

  /*
   * Design notes.
   *
   * [1] Breakwater (OSDI '20) §3.1 uses queueing delay rather than CPU load as the overload
   *     signal, and §4 measures it per queue as "now − timestamp of the oldest element", updated
   *     on dequeue; a server with several stages sums them. The carrier queue is such a stage.
   * [2] Protego (NSDI '23) §4 builds on a dispatcher that starts one thread per request (Shenango
   *     uthreads); a virtual thread per request is the JVM's equivalent, and Loom's scheduler
   *     queue plays the role of Shenango's runqueue.
   * [3] Why an Executor and not a counter around the task: a counter sees only the first mount.
   *     The scheduler sees every re-mount after a lock or I/O wait, and the waits behind a
   *     saturated CPU after such wake-ups are exactly what a lock-heavy server suffers.
   * [4] Shutdown order in the virtual route: stop accepting requests, wait for every virtual
   *     thread to end (they still need carriers to finish), and only then stop the carriers.
   * [5] One FIFO shared by all carriers rather than one queue per carrier: Breakwater §3.1
   *     warns that head-of-line blocking behind one busy core is a load-balancing artefact,
   *     not overload (Shenango's runtime then reports the maximum over per-core queues). A
   *     shared FIFO has no such artefact and its head is the exact oldest entry.
   */

  private static final System.Logger LOGGER = System.getLogger(CarrierDispatcher.class.getName());
  private static final Set<String> WARNED = ConcurrentHashMap.newKeySet();
  private static final Duration PROBE_TIMEOUT = Duration.ofSeconds(10);

  /** The reason {@link #platform} reports. */
  static final String FORCED_REASON = "platform dispatcher requested (CarrierDispatcher.platform)";

  private final CarrierPool pool;
  private final ExecutorService virtualThreads; // null in the platform fallback
  private final String fallbackReason; // null on the virtual route
  private final long probeSubmissions;
  private final QueueDelaySignal delay;
  private final AtomicBoolean closeStarted = new AtomicBoolean();

  private CarrierDispatcher(CarrierPool pool, ExecutorService virtualThreads, String fallbackReason,
      long probeSubmissions) {
    this.pool = pool;
    this.virtualThreads = virtualThreads;
    this.fallbackReason = fallbackReason;
    this.probeSubmissions = probeSubmissions;
    this.delay = pool::queueingDelayNanos;
  }

  /**
   * A dispatcher that runs tasks on virtual threads scheduled on {@code carriers} platform
   * carrier threads, or, if this JDK or JVM configuration does not allow a custom scheduler, on a
   * pool of {@code carriers} platform threads (see the class comment; the reason is logged once).
   *
   * @param carriers number of carrier (or pool) threads, typically the number of cores given to
   *     request handling
   * @param ticker stamps queued entries; read {@link QueueDelaySignal#queueingDelayNanos} with the
   *     same ticker
   * @throws IllegalArgumentException if {@code carriers < 1}
   */
  public static CarrierDispatcher create(int carriers, Ticker ticker) {
    return create(carriers, ticker, VirtualSchedulerRoute.BUILDER_CLASS);
  }

  /**
   * A dispatcher on {@code carriers} platform threads fed by a stamped FIFO, without trying the
   * virtual-thread route. {@link #fallbackReason()} says it was requested.
   *
   * @throws IllegalArgumentException if {@code carriers < 1}
   */
  public static CarrierDispatcher platform(int carriers, Ticker ticker) {
    return new CarrierDispatcher(new CarrierPool(carriers, ticker, "dispatch"), null,
        FORCED_REASON, 0);
  }

  /**
   * A dispatcher on the virtual-thread route only (see the class comment), or empty, with nothing
   * left running and nothing logged, if this JDK or JVM configuration does not allow it: for a
   * caller whose alternative is not the platform pool (which holds a thread for every blocked
   * task) but the JDK's own virtual-thread scheduler.
   *
   * @throws IllegalArgumentException if {@code carriers < 1}
   */
  public static Optional<CarrierDispatcher> onVirtualThreads(int carriers, Ticker ticker) {
    return onVirtualThreads(carriers, ticker, why -> { });
  }

  /**
   * As {@link #onVirtualThreads(int, Ticker)}; where the route is unavailable, {@code whyNot} is
   * given the reason, on the calling thread before this returns, for a caller that says which
   * fallback it takes.
   *
   * @throws IllegalArgumentException if {@code carriers < 1}
   */
  public static Optional<CarrierDispatcher> onVirtualThreads(int carriers, Ticker ticker,
      java.util.function.Consumer<String> whyNot) {
    return onVirtualThreads(carriers, ticker, VirtualSchedulerRoute.BUILDER_CLASS, whyNot);
  }

  /** {@link #onVirtualThreads(int, Ticker, java.util.function.Consumer)} with the builder class named, for tests. */
  static Optional<CarrierDispatcher> onVirtualThreads(int carriers, Ticker ticker, String builderClassName,
      java.util.function.Consumer<String> whyNot) {
    Objects.requireNonNull(ticker, "ticker");
    Objects.requireNonNull(whyNot, "whyNot");
    CarrierPool pool = new CarrierPool(carriers, ticker, "carrier");
    VirtualSchedulerRoute.Outcome route = probedRoute(pool, builderClassName);
    if (route.builder() != null) {
      return Optional.of(onRoute(pool, route));
    }
    whyNot.accept(route.unavailabilityReason());
    pool.shutdown();
    if (pool.awaitCarriers(false)) {
      Thread.currentThread().interrupt();
    }
    return Optional.empty();
  }

  /** {@link #create} with the builder class named, so tests can make the route unavailable. */
  static CarrierDispatcher create(int carriers, Ticker ticker, String builderClassName) {
    Objects.requireNonNull(ticker, "ticker");
    CarrierPool pool = new CarrierPool(carriers, ticker, "carrier");
    VirtualSchedulerRoute.Outcome route = probedRoute(pool, builderClassName);
    if (route.builder() != null) {
      return onRoute(pool, route);
    }
    String reason = route.unavailabilityReason();
    if (WARNED.add(reason)) {
      LOGGER.log(Level.WARNING, "Virtual threads with a custom carrier scheduler are unavailable ("
          + reason + "); dispatching on " + carriers + " platform thread"
          + (carriers == 1 ? "" : "s") + " instead (the delay signal is then the dispatch queue's)");
    }
    return new CarrierDispatcher(pool, null, reason, pool.submitted());
  }

  /** The route to {@code pool} as a scheduler, its builder kept only if a probe thread ran on it. */
  private static VirtualSchedulerRoute.Outcome probedRoute(CarrierPool pool, String builderClassName) {
    VirtualSchedulerRoute.Outcome route = VirtualSchedulerRoute.open(builderClassName, pool);
    if (route.builder() == null) {
      return route;
    }
    String reason = probe(route.builder(), pool);
    return reason == null ? route : new VirtualSchedulerRoute.Outcome(null, reason);
  }

  private static CarrierDispatcher onRoute(CarrierPool pool, VirtualSchedulerRoute.Outcome route) {
    pool.schedulesVirtualThreads();
    ExecutorService threads = Executors.newThreadPerTaskExecutor(route.builder().factory());
    return new CarrierDispatcher(pool, threads, null, pool.submitted());
  }

  /** Starts one empty virtual thread and checks that it ran through {@code pool}. */
  private static String probe(Thread.Builder.OfVirtual builder, CarrierPool pool) {
    long before = pool.submitted();
    Thread probe;
    try {
      probe = builder.unstarted(() -> { });
      probe.start();
    } catch (RuntimeException | Error e) {
      return "starting a virtual thread on a custom scheduler failed: " + e;
    }
    boolean interrupted = false;
    boolean finished = false;
    try {
      while (true) {
        try {
          finished = probe.join(PROBE_TIMEOUT);
          break;
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
    if (!finished) {
      return "a probe virtual thread did not finish on the custom scheduler within "
          + PROBE_TIMEOUT.toSeconds() + "s";
    }
    if (pool.submitted() == before) {
      return "this JDK (" + Runtime.version() + ") ignored the custom virtual-thread scheduler";
    }
    return null;
  }

  /**
   * Runs {@code task} on a new virtual thread (fallback: on a pool thread, in FIFO order).
   *
   * @throws RejectedExecutionException once {@link #close()} has begun
   * @throws NullPointerException if {@code task} is null
   */
  @Override
  public void execute(Runnable task) {
    Objects.requireNonNull(task, "task");
    if (virtualThreads != null) {
      virtualThreads.execute(task);
    } else {
      pool.execute(task);
    }
  }

  /**
   * The carrier-queue stage of the server's queueing delay: {@code now − stamp of the oldest
   * queued entry}, zero when none waits. Lock-free and allocation-free; read it with the ticker
   * this dispatcher was created with. Under concurrent submission a reading may be momentarily
   * stale; it is exact whenever the queue is quiescent.
   */
  public QueueDelaySignal queueDelay() {
    return delay;
  }

  /**
   * Entries waiting for a carrier now: runnable virtual threads not yet mounted (fallback: tasks
   * not yet started).
   */
  public int queued() {
    return pool.size();
  }

  /**
   * Entries handed to the carrier queue since creation: on the virtual route one per mount of a
   * virtual thread (its start, and each wake-up after it parked), in the fallback one per task.
   * Monotonic; meant for tests and metrics.
   */
  public long submissions() {
    return pool.submitted() - probeSubmissions;
  }

  /** The number of carrier (or pool) threads. */
  public int carriers() {
    return pool.carrierCount();
  }

  /** The carrier (or pool) threads, for tests that check none outlives {@link #close()}. */
  java.util.List<Thread> carrierThreads() {
    return pool.carrierThreads();
  }

  /** Whether tasks run on virtual threads scheduled by this dispatcher's carriers. */
  public boolean usesVirtualThreads() {
    return virtualThreads != null;
  }

  /** Why this dispatcher runs on platform threads, or empty on the virtual-thread route. */
  public Optional<String> fallbackReason() {
    return Optional.ofNullable(fallbackReason);
  }

  /**
   * Stops accepting tasks, waits for every accepted task to finish (including virtual threads
   * parked at the time, which still need carriers to end), then stops the carrier threads and
   * waits for them to exit. Idempotent; concurrent callers all wait.
   *
   * <p>A virtual thread a task started itself ({@link Thread#ofVirtual()}, which takes this
   * dispatcher's scheduler) is not waited for. If it outlives the dispatcher, it runs on the
   * common fork-join pool from then on, unmeasured, so that waking it never throws.
   *
   * <p>If the calling thread is interrupted while waiting, the tasks still running are
   * interrupted (virtual threads, or in the fallback the running and queued tasks, which then run
   * with their interrupt status set, so none is silently dropped), waiting continues, and the
   * caller's interrupt status is re-asserted before returning, as {@link ExecutorService#close()}
   * does.
   *
   * <p>Called from a thread this dispatcher runs, it would wait for that thread, which cannot end
   * while it waits ({@link ExecutorService#close()} leaves this case to the implementation; its
   * default waits forever). It is refused instead, before anything is shut down: hand the close to
   * another thread.
   *
   * @throws IllegalStateException if called from one of this dispatcher's tasks or pool threads,
   *     or (virtual route) from a virtual thread that runs on its carriers, such as one a task
   *     started with {@link Thread#ofVirtual()}
   */
  @Override
  public void close() {
    Thread caller = Thread.currentThread();
    if (pool.isCarrier(caller)
        || (virtualThreads != null && VirtualSchedulerRoute.isScheduledBy(caller, pool))) {
      throw new IllegalStateException("close() called from a thread of this dispatcher; it would "
          + "wait for itself");
    }
    closeStarted.set(true);
    boolean interrupted = false;
    if (virtualThreads != null) {
      virtualThreads.close(); // waits for all virtual threads; handles interrupts itself
      interrupted = Thread.interrupted();
    }
    pool.shutdown();
    interrupted |= pool.awaitCarriers(virtualThreads == null);
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public String toString() {
    return "CarrierDispatcher[" + (virtualThreads != null ? "virtual" : "platform")
        + ", carriers=" + pool.carrierCount() + ", queued=" + pool.size()
        + (closeStarted.get() ? ", closed" : "") + "]";
  }
}
