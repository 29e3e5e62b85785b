package io.spillway.grpc;

import io.spillway.api.QueueDelaySignal;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.atomic.AtomicLong;

/**
 * How long the oldest admitted call has waited for its handler to start: Breakwater's signal,
 * {@code now − arrival of the oldest waiting request} (breakwater-osdi20 §3.1, §4), kept per call
 * rather than per executor queue.
 *
 * <p>Why per call: gRPC hands a call to its executor more than once before the handler runs. The
 * call starts in one task; the handler asks for the request message, which the transport thread
 * then delivers in a second task that joins the back of the same queue. A unary call therefore
 * crosses the workers' queue at least twice, and the queue's own oldest-entry delay reports about
 * half of what the call waits. The server's interceptor stamps a unary or server-streaming call
 * as it is admitted and clears it when its request reaches the handler, so the signal reads the
 * whole wait, the event loop's delivery of the message between the crossings included; a call
 * whose client has not sent the message when the loop delivers what it has is cleared then, and
 * stamped again as the message arrives (SpillwayServerInterceptor's {@code MessageArrival}). A
 * client-streaming or bidi call, whose handler runs as it starts, is cleared as a worker runs its
 * first task and stamped again at each later hand-off of its work (SpillwayServerInterceptor's
 * {@code CallHandOffs}): a stream the client leaves idle is not queueing at this server.
 *
 * <p>Calls are kept in a ring of {@value #SIZE} slots indexed by an admission sequence number; a
 * slot holds its sequence number (plus one) while the call waits and zero once it started. A
 * reader walks the head forward over started slots, so reading costs O(1) amortized; started
 * slots behind a waiting one are passed over when that one starts. A call admitted while more than
 * {@value #SIZE} others wait overwrites the oldest slot, which then reads as started: the signal
 * under-reads only in that case, and only by the overwritten calls.
 *
 * <p>Any dispatch that hands work over and can tell when it starts can use it the same way (an
 * HTTP server's worker pool, for example): stamp the task as it is handed over, clear it as it
 * starts.
 *
 * <p>Thread-safe and lock-free: admissions on any transport thread, starts on any worker,
 * readings from anywhere.
 */
public final class UnstartedCalls implements QueueDelaySignal {

  static final int SIZE = 1 << 16;
  private static final int MASK = SIZE - 1;
  private static final VarHandle SLOTS = MethodHandles.arrayElementVarHandle(long[].class);

  private final long[] tokens = new long[SIZE];
  private final long[] stamps = new long[SIZE];
  private final AtomicLong tail = new AtomicLong();
  private final AtomicLong head = new AtomicLong();

  /** An empty set of waiting calls. */
  public UnstartedCalls() { }

  /** A call was admitted at {@code nowNanos}; returns its ticket for {@link #started}. */
  public long arrived(long nowNanos) {
    long seq = tail.getAndIncrement();
    int i = (int) (seq & MASK);
    stamps[i] = nowNanos;
    SLOTS.setRelease(tokens, i, seq + 1); // publishes the stamp
    return seq;
  }

  /** The call with {@code ticket} reached its handler (or ended); idempotent. */
  public void started(long ticket) {
    SLOTS.compareAndSet(tokens, (int) (ticket & MASK), ticket + 1, 0L);
  }

  @Override
  public long queueingDelayNanos(long nowNanos) {
    long h = head.get();
    while (h - tail.get() < 0) {
      int i = (int) (h & MASK);
      long token = (long) SLOTS.getAcquire(tokens, i);
      if (token == h + 1) {
        long waited = nowNanos - stamps[i];
        return waited > 0 ? waited : 0;
      }
      // started, overwritten, or not yet published (read as started: a momentary under-read)
      head.compareAndSet(h, h + 1);
      h = head.get();
    }
    return 0;
  }
}
