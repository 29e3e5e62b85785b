package io.spillway.api;

import java.util.function.Consumer;

/**
 * The client of a purely server-side scheme (no control, CoDel, a server concurrency limit): a
 * plain FIFO that releases every request at once. Requests only sit in it between {@link #offer}
 * and the driver's next {@link #poll}; one that somehow waits a whole SLO expires, since it can no
 * longer be good.
 *
 * <p>Not thread-safe: confined to the session's thread, per {@link ClientGate}. Package-private:
 * schemes get one from {@link ClientGate#sendAtOnce}.
 *
 * @param <R> the driver's request type
 */
final class SendAtOnceClientGate<R> implements ClientGate<R> {

  private final long sessionId;
  private final long timeoutNanos;
  private final TimestampedQueue<R> queue = new TimestampedQueue<>();

  /** A gate for the session in {@code environment}, expiring requests after its SLO. */
  SendAtOnceClientGate(ClientEnvironment environment) {
    this.sessionId = environment.sessionId();
    this.timeoutNanos = environment.sloNanos();
  }

  @Override
  public boolean offer(R request, long arrivalNanos, long nowNanos) {
    queue.offer(request, ClientGate.queuedSince(arrivalNanos, nowNanos));
    return true;
  }

  @Override
  public R poll(long nowNanos, RequestMetadata header) {
    R next = queue.poll();
    if (next != null) {
      header.sessionId(sessionId).demand(queue.size());
    }
    return next;
  }

  @Override
  public void onResponse(ResponseMetadata response, long sentAtNanos, long nowNanos) { }

  @Override
  public int expire(long nowNanos, Consumer<? super R> expired) {
    return queue.pollOlderThan(nowNanos, timeoutNanos, expired);
  }

  @Override
  public boolean remove(R request, long nowNanos) {
    return queue.removeFirst(queued -> queued == request);
  }

  @Override
  public long nextWakeupNanos() {
    return queue.oldestEnqueueNanos() + timeoutNanos;
  }

  @Override
  public int queued() {
    return queue.size();
  }
}
