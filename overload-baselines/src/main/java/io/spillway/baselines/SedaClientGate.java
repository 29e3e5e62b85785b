package io.spillway.baselines;

import io.spillway.api.ClientEnvironment;
import io.spillway.api.ClientGate;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.Status;
import io.spillway.api.TimestampedQueue;
import java.util.SplittableRandom;
import java.util.function.Consumer;

/**
 * SEDA at a client, as breakwater-osdi20 §5.1 runs it: requests wait in a FIFO for a token from a
 * {@link TokenBucket} whose rate {@link SedaRateController} sets from the 99th-percentile response
 * time of this client's own responses; requests that wait longer than the client queue timeout
 * expire. The server drops nothing ("SEDA does not support any AQM at the server and has zero drop
 * rate", §5.1).
 *
 * <p>Each session starts at its own rate, drawn from [initialRate/2, initialRate] by a generator seeded
 * with the session id, so runs are reproducible and clients do not move in lockstep. The bucket
 * starts full, so a new session's first requests are not held for a whole token period.
 *
 * <p>Not thread-safe: confined to the session's thread, per {@link ClientGate}.
 *
 * @param <R> the driver's request type
 */
final class SedaClientGate<R> implements ClientGate<R> {

  private final long sessionId;
  private final SedaConfig config;
  private final SedaRateController controller;
  private final TimestampedQueue<R> queue = new TimestampedQueue<>();
  private TokenBucket bucket; // created at the first reading of the clock

  SedaClientGate(SedaConfig config, ClientEnvironment environment) {
    this.sessionId = environment.sessionId();
    this.config = config;
    double u = new SplittableRandom(0x5EDAL ^ (sessionId * 0x9E3779B97F4A7C15L)).nextDouble();
    double initial = Math.max(config.minRate(), config.initialRate() * (0.5 + 0.5 * u));
    this.controller = new SedaRateController(config.targetNanos(), config.timeoutNanos(),
        config.nreq(), config.adjI(), config.adjD(), config.minRate(), initial);
  }

  private TokenBucket bucket(long nowNanos) {
    if (bucket == null) {
      bucket = new TokenBucket(controller.rate(), config.burst(), config.burst(), nowNanos);
    }
    return bucket;
  }

  @Override
  public boolean offer(R request, long arrivalNanos, long nowNanos) {
    bucket(nowNanos);
    queue.offer(request, ClientGate.queuedSince(arrivalNanos, nowNanos));
    return true;
  }

  @Override
  public R poll(long nowNanos, RequestMetadata header) {
    if (queue.isEmpty() || !bucket(nowNanos).tryTake(nowNanos)) {
      return null;
    }
    R next = queue.poll();
    header.sessionId(sessionId).demand(queue.size());
    return next;
  }

  @Override
  public void onResponse(ResponseMetadata response, long sentAtNanos, long nowNanos) {
    if (response.status() != Status.OK) {
      return; // only served requests have a response time (the authors' client ignores drops)
    }
    if (controller.onResponse(nowNanos - sentAtNanos, nowNanos)) {
      bucket(nowNanos).setRate(controller.rate(), nowNanos);
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
    long expiry = queue.oldestEnqueueNanos() + config.clientQueueTimeoutNanos();
    if (bucket == null) {
      return expiry;
    }
    long token = bucket.nextTokenNanos();
    return token - expiry < 0 ? token : expiry;
  }

  @Override
  public int queued() {
    return queue.size();
  }

  /** The current rate, requests per second (for tests and diagnostics). */
  double rate() {
    return controller.rate();
  }
}
