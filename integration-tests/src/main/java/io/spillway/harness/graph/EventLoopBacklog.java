package io.spillway.harness.graph;

import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.netty.shaded.io.netty.util.concurrent.EventExecutor;
import io.grpc.netty.shaded.io.netty.util.internal.ThreadExecutorMap;
import io.spillway.api.ExecutorBacklogProbe;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.Ticker;
import java.util.Arrays;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The backlog of gRPC's Netty event loops as a queueing-delay stage (breakwater-osdi20 §3.1:
 * "packets are queued while they await processing to create a request"; ../shared/DESIGN.md: the
 * signal is the sum over stages, the event loop's backlog first), for services whose calls are
 * decided on the transport thread ({@code directExecutor}, {@link GraphService}).
 *
 * <p>Why the graph needs it: every service of a process shares gRPC's event loops (one thread
 * when the process has one core), which decode every request and encode every response of every
 * hop. On one core they compete with the services' workers for the CPU; under overload the loop
 * falls behind and requests wait in it, unseen by a gate that reads only its service's worker
 * queue. The gates then go on admitting while latency grows without bound: the collapses of the
 * first sweep at this placement (docs/results/rajomon.md).
 *
 * <p>One {@link ExecutorBacklogProbe} per loop, as {@code netty-native-transport} probes its own,
 * driven by the work: the first call a loop starts while no probe of it is pending stamps the time
 * and submits the probe with {@code execute}; Netty runs submitted tasks after the I/O of the current
 * iteration and after the tasks queued before it (the workers' writes), so while the probe waits,
 * {@code now − stamp} is how long the loop has been held. An idle loop reads zero and costs
 * nothing; a busy one pays a ticker reading per call and one task per iteration. The signal is the
 * largest over the loops (a request waits on its own loop only; with one loop it is that loop's).
 *
 * <p>Finding the loop a call runs on uses Netty's {@code ThreadExecutorMap} (in grpc-netty-shaded
 * under {@code util.internal}); a call started off an event loop (a server with an executor) is
 * not probed.
 *
 * <p>Thread-safe: a loop's probe is stamped and run on that loop only; the signal is read from
 * any thread.
 */
final class EventLoopBacklog implements QueueDelaySignal {

  private final Ticker ticker;
  private final ConcurrentHashMap<EventExecutor, ExecutorBacklogProbe> byLoop = new ConcurrentHashMap<>();
  private volatile ExecutorBacklogProbe[] probes = new ExecutorBacklogProbe[0];

  EventLoopBacklog(Ticker ticker) {
    this.ticker = Objects.requireNonNull(ticker, "ticker");
  }

  /** An interceptor that probes the loop each call starts on; put it first, it changes nothing. */
  ServerInterceptor interceptor() {
    return new ServerInterceptor() {
      @Override
      public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
          ServerCallHandler<Q, R> next) {
        callStarted();
        return next.startCall(call, headers);
      }
    };
  }

  /** Called on the thread a call starts on: probes its event loop, if it is one. */
  void callStarted() {
    EventExecutor loop = ThreadExecutorMap.currentExecutor();
    if (loop != null) {
      ExecutorBacklogProbe probe = probeOf(loop);
      if (!probe.pending()) { // one clock reading per loop iteration, not per call
        probe.arrived(ticker.read());
      }
    }
  }

  /** How many event loops calls have started on so far (zero: nothing here runs on one). */
  int loopsProbed() {
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

  private ExecutorBacklogProbe probeOf(EventExecutor loop) {
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
}
