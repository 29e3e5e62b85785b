package io.spillway.baselines;

import io.spillway.api.ClientEnvironment;
import io.spillway.api.ClientGate;
import io.spillway.api.InheritedPriority;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.TimestampedQueue;
import java.util.SplittableRandom;
import java.util.function.Consumer;

/**
 * DAGOR's client (SoCC 2018 §4.3, "collaborative admission control"; breakwater-osdi20 §5.1):
 * each request gets a random priority 1–P, travels with it in {@link RequestMetadata#priority}, and
 * is dropped locally at once ({@link #offer} returns {@code false}) if the level the server last
 * advertised would reject it. Requests that pass are sent at once. The level starts at P (admit
 * all) and follows the {@link ResponseMetadata#threshold()} of every response and reject.
 *
 * <p>Priorities come from a generator seeded with the session id, so runs are reproducible. A
 * sub-request that carries its request's priority ({@link InheritedPriority}) keeps it: inside a
 * call graph a caller sheds ahead of its callee by the priority the whole request has (§4.3).
 *
 * <p>Not thread-safe: confined to the session's thread, per {@link ClientGate}.
 *
 * @param <R> the driver's request type
 */
final class DagorClientGate<R> implements ClientGate<R> {

  private record Entry<R>(R request, int priority) { }

  private final long sessionId;
  private final long timeoutNanos;
  private final int maxPriority;
  private final SplittableRandom random;
  private final TimestampedQueue<Entry<R>> queue = new TimestampedQueue<>();
  private int level;

  DagorClientGate(DagorConfig config, ClientEnvironment environment) {
    this.sessionId = environment.sessionId();
    this.timeoutNanos = environment.sloNanos();
    this.maxPriority = config.maxPriority();
    this.random = new SplittableRandom(0xDA60L ^ (sessionId * 0x9E3779B97F4A7C15L));
    this.level = maxPriority;
  }

  @Override
  public boolean offer(R request, long arrivalNanos, long nowNanos) {
    int inherited = request instanceof InheritedPriority p ? p.inheritedPriority() : 0;
    int priority = inherited > 0 ? Math.min(inherited, maxPriority) : 1 + random.nextInt(maxPriority);
    if (priority > level) {
      return false; // the server would reject it: shed here, at no cost to the server
    }
    queue.offer(new Entry<>(request, priority), ClientGate.queuedSince(arrivalNanos, nowNanos));
    return true;
  }

  @Override
  public R poll(long nowNanos, RequestMetadata header) {
    Entry<R> next = queue.poll();
    if (next == null) {
      return null;
    }
    header.sessionId(sessionId).demand(queue.size()).priority(next.priority());
    return next.request();
  }

  @Override
  public void onResponse(ResponseMetadata response, long sentAtNanos, long nowNanos) {
    int advertised = response.threshold();
    if (advertised > 0) {
      level = Math.min(advertised, maxPriority);
    }
  }

  @Override
  public int expire(long nowNanos, Consumer<? super R> expired) {
    return queue.pollOlderThan(nowNanos, timeoutNanos, e -> expired.accept(e.request()));
  }

  @Override
  public boolean remove(R request, long nowNanos) {
    return queue.removeFirst(queued -> queued.request() == request);
  }

  @Override
  public long nextWakeupNanos() {
    return queue.oldestEnqueueNanos() + timeoutNanos;
  }

  @Override
  public int queued() {
    return queue.size();
  }

  /** The level this client last heard (for tests and diagnostics). */
  int level() {
    return level;
  }
}
