package io.spillway.grpc;

import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.spillway.api.ExecutorBacklogProbe;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.Ticker;
import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.function.Supplier;

/**
 * The backlog of gRPC's Netty event loops as a queueing-delay stage (breakwater-osdi20 §3.1:
 * "packets are queued while they await processing to create a request"; docs/design.md: the
 * signal is the sum over stages, the event loop's backlog first). Under overload a loop falls
 * behind decoding requests and encoding responses and requests wait in it, unseen by a gate that
 * reads only the workers' queue.
 *
 * <p>{@link SpillwayGrpcServer.Builder#install} uses one itself. Servers wired by hand (handlers on
 * the event loop with {@code directExecutor()}, for example) put {@link #interceptor()} first and
 * add the probe to their delay signal.
 *
 * <p>One {@link ExecutorBacklogProbe} per loop, driven by the work: {@link #arrived} is called on
 * the thread a call arrives on (the admission decision runs there, see
 * {@link SpillwayGrpcServer}); on a loop with no probe pending it stamps the time and submits the
 * probe, which Netty runs after the current iteration's I/O and the tasks queued before it. While
 * it waits, {@code now − stamp} is how long the loop has been held. An idle loop reads zero. The
 * signal is the largest over the loops (a request waits on its own loop only).
 *
 * <p>The loop is found through Netty's {@code ThreadExecutorMap}, in grpc-netty-shaded or in
 * Netty itself (grpc-netty), whichever the class path has; {@link #available()} says whether
 * either is there. A thread that is not an event loop (the in-process transport) is not probed.
 *
 * <p>Thread-safe: a loop's probe is stamped and reset on that loop only; the signal is read from
 * any thread.
 */
public final class EventLoopProbe implements QueueDelaySignal {

  private static final System.Logger LOG = System.getLogger(EventLoopProbe.class.getName());
  private static final List<Supplier<Executor>> FINDERS = finders();

  private final Ticker ticker;
  private final ConcurrentHashMap<Executor, ExecutorBacklogProbe> byLoop = new ConcurrentHashMap<>();
  private volatile ExecutorBacklogProbe[] probes = new ExecutorBacklogProbe[0];

  /** @param ticker the clock the signal is read with */
  public EventLoopProbe(Ticker ticker) {
    this.ticker = Objects.requireNonNull(ticker, "ticker");
  }

  /** Whether a Netty transport's loops can be found on this class path. */
  public static boolean available() {
    return !FINDERS.isEmpty();
  }

  /** The Netty event loop running the calling thread, or {@code null} if it is none. */
  static Executor currentLoop() {
    for (Supplier<Executor> finder : FINDERS) {
      Executor loop = finder.get();
      if (loop != null) {
        return loop;
      }
    }
    return null;
  }

  /**
   * Called on the thread a call arrives on, with a reading of the ticker if the caller has one
   * ({@code Long.MIN_VALUE} if not): probes its event loop, if it is one.
   */
  public void arrived(long nowNanos) {
    for (Supplier<Executor> finder : FINDERS) {
      Executor loop = finder.get();
      if (loop != null) {
        ExecutorBacklogProbe probe = probeOf(loop);
        if (!probe.pending()) { // one ticker reading per loop iteration at most
          probe.arrived(nowNanos == Long.MIN_VALUE ? ticker.read() : nowNanos);
        }
        return;
      }
    }
  }

  /**
   * An interceptor that probes the loop each call starts on, for calls decided on the transport
   * thread ({@code directExecutor()}); put it first, it changes nothing else.
   */
  public ServerInterceptor interceptor() {
    return new ServerInterceptor() {
      @Override
      public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
          ServerCallHandler<Q, R> next) {
        arrived(Long.MIN_VALUE);
        return next.startCall(call, headers);
      }
    };
  }

  /** How many loops calls have arrived on so far. */
  public int loopsProbed() {
    return probes.length;
  }

  @Override
  public long queueingDelayNanos(long nowNanos) {
    long max = 0;
    for (ExecutorBacklogProbe p : probes) {
      max = Math.max(max, p.queueingDelayNanos(nowNanos));
    }
    return max;
  }

  private ExecutorBacklogProbe probeOf(Executor loop) {
    ExecutorBacklogProbe p = byLoop.get(loop);
    if (p != null) {
      return p;
    }
    synchronized (this) { // once per loop
      p = byLoop.get(loop);
      if (p == null) {
        p = new ExecutorBacklogProbe(loop);
        ExecutorBacklogProbe[] grown = Arrays.copyOf(probes, probes.length + 1);
        grown[probes.length] = p;
        probes = grown; // before the map: a probe the map hands out is always read by the signal
        byLoop.put(loop, p);
      }
      return p;
    }
  }

  private static List<Supplier<Executor>> finders() {
    List<Supplier<Executor>> found = new ArrayList<>(2);
    if (present("io.grpc.netty.shaded.io.netty.util.internal.ThreadExecutorMap")) {
      found.add(ShadedNettyLoops::current);
    }
    if (present("io.netty.util.internal.ThreadExecutorMap")) {
      found.add(NettyLoops::current);
    }
    if (found.isEmpty()) {
      LOG.log(Level.DEBUG, "no Netty on the class path: gRPC's event loops are not probed");
    }
    return List.copyOf(found);
  }

  private static boolean present(String className) {
    try {
      Class.forName(className, false, EventLoopProbe.class.getClassLoader());
      return true;
    } catch (ClassNotFoundException | LinkageError e) {
      return false;
    }
  }

  /** Loaded only when grpc-netty-shaded is present. */
  private static final class ShadedNettyLoops {
    static Executor current() {
      return io.grpc.netty.shaded.io.netty.util.internal.ThreadExecutorMap.currentExecutor();
    }
  }

  /** Loaded only when Netty (grpc-netty's transport) is present. */
  private static final class NettyLoops {
    static Executor current() {
      return io.netty.util.internal.ThreadExecutorMap.currentExecutor();
    }
  }
}
