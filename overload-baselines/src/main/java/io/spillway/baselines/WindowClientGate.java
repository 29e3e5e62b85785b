package io.spillway.baselines;

import io.spillway.api.ClientEnvironment;
import io.spillway.api.ClientGate;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.Status;
import io.spillway.api.TimestampedQueue;
import java.util.function.Consumer;

/**
 * A session's window (breakwater-osdi20 §2.2, ORCA-style): requests wait in a FIFO until fewer
 * than ⌊w⌋ are in flight, and expire after the client queue timeout; each response adjusts w by
 * {@link WindowPolicy}. A reject (which this scheme's server never sends, but a shared server
 * might) counts as late.
 *
 * <p>Not thread-safe: confined to the session's thread, per {@link ClientGate}.
 *
 * @param <R> the driver's request type
 */
final class WindowClientGate<R> implements ClientGate<R> {

  private final long sessionId;
  private final WindowConfig config;
  private final TimestampedQueue<R> queue = new TimestampedQueue<>();
  private double window = 1.0;
  private int inFlight;
  /** Late responses to requests sent before this instant do not decrease the window again. */
  private long lastDecrease;
  private boolean decreasedBefore;

  WindowClientGate(WindowConfig config, ClientEnvironment environment) {
    this.sessionId = environment.sessionId();
    this.config = config;
  }

  @Override
  public boolean offer(R request, long arrivalNanos, long nowNanos) {
    queue.offer(request, ClientGate.queuedSince(arrivalNanos, nowNanos));
    return true;
  }

  @Override
  public R poll(long nowNanos, RequestMetadata header) {
    if (inFlight >= WindowPolicy.slots(window)) {
      return null;
    }
    R next = queue.poll();
    if (next != null) {
      inFlight++;
      header.sessionId(sessionId).demand(queue.size());
    }
    return next;
  }

  @Override
  public void onResponse(ResponseMetadata response, long sentAtNanos, long nowNanos) {
    if (inFlight > 0) {
      inFlight--;
    }
    boolean good = response.status() == Status.OK
        && nowNanos - sentAtNanos <= config.latencyThresholdNanos();
    if (good) {
      window = WindowPolicy.increase(window, config.additiveIncrease(), config.maxWindow());
    } else if (!decreasedBefore || sentAtNanos - lastDecrease >= 0) {
      window = WindowPolicy.decrease(window, config.multiplicativeDecrease());
      lastDecrease = nowNanos;
      decreasedBefore = true;
    }
  }

  @Override
  public int expire(long nowNanos, Consumer<? super R> expired) {
    return queue.pollOlderThan(nowNanos, config.clientQueueTimeoutNanos(), expired);
  }

  @Override
  public boolean remove(R request, long nowNanos) {
    return queue.removeFirst(queued -> queued == request);
  }

  @Override
  public long nextWakeupNanos() {
    return queue.oldestEnqueueNanos() + config.clientQueueTimeoutNanos();
  }

  @Override
  public int queued() {
    return queue.size();
  }

  /** The current window w (for tests and diagnostics). */
  double window() {
    return window;
  }

  /** Requests sent and not yet answered. */
  int inFlight() {
    return inFlight;
  }
}
