package io.spillway.credit;

import io.spillway.api.ClientEnvironment;
import io.spillway.api.ClientGate;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import java.util.function.Consumer;

/**
 * Protego's client for one session: Breakwater's client (queue, credits, expiry; protego-nsdi23
 * §3.1 "Operation" reuses it) that also echoes a credit id on every request, so that the server
 * can measure the end-to-end RTT from credit issue to response (§3.1, 8-byte credit id).
 *
 * <p>Which id: the one on the latest response, advanced by the time since that response arrived
 * here. Protego's credit id is the credit's issue time in the server's nanoseconds
 * ({@link ProtegoServerGate}); advancing it by the time the credit waited at this client makes the
 * server's sample {@code now − id} the network RTT plus the request's time in the server, the lag
 * with which the measures follow a new pool size (§4 "Performance measurement"), and not the
 * client's idleness. Without the advance, a credit that arrives at a client with nothing queued
 * measures how long the client then stays idle: with 1,000 clients at a few hundred requests per
 * second each, milliseconds (the previous session measured 4–14 ms "RTTs" that way, and capping
 * the samples at the SLO only kept the idle times under 200 µs). Only a duration of the client's
 * clock is added, so the two clocks need not agree. Credits are fungible, so the client cannot
 * say which grant a request spends; whichever it is, the request left now, so the sample is the
 * same. An explicit credit message carries no id in this SPI ({@link io.spillway.api.ControlChannel}
 * has only a delta), so after one the client echoes 0 (no sample) until a response brings an id.
 *
 * <p>Composes a {@link BreakwaterClientGate}; Breakwater's own client is unchanged. Not
 * thread-safe: confined to the session's thread, per {@link ClientGate}.
 *
 * @param <R> the driver's request type
 */
public final class ProtegoClientGate<R> implements ClientGate<R> {

  private final BreakwaterClientGate<R> credits;
  private long creditId;
  private long creditArrivedAt;

  /**
   * A client gate for the session in {@code environment}. Users get one from {@link
   * Protego#newClientGate}.
   */
  ProtegoClientGate(ProtegoConfig config, ClientEnvironment environment) {
    this.credits = new BreakwaterClientGate<>(config.creditMachinery(), environment);
  }

  @Override
  public boolean offer(R request, long arrivalNanos, long nowNanos) {
    return credits.offer(request, arrivalNanos, nowNanos);
  }

  @Override
  public R poll(long nowNanos, RequestMetadata header) {
    R request = credits.poll(nowNanos, header);
    if (request != null) {
      header.creditId(creditId(nowNanos));
    }
    return request;
  }

  @Override
  public void onResponse(ResponseMetadata response, long sentAtNanos, long nowNanos) {
    if (response.creditId() != 0) {
      creditId = response.creditId();
      creditArrivedAt = nowNanos;
    }
    credits.onResponse(response, sentAtNanos, nowNanos);
  }

  @Override
  public void onUnanswered(ResponseMetadata response, long sentAtNanos, long nowNanos) {
    credits.onUnanswered(response, sentAtNanos, nowNanos);
  }

  @Override
  public void onControl(ResponseMetadata control, long nowNanos) {
    creditId = control.creditId(); // 0 unless a transport carries ids on explicit credits
    creditArrivedAt = nowNanos;
    credits.onControl(control, nowNanos);
  }

  @Override
  public int expire(long nowNanos, Consumer<? super R> expired) {
    return credits.expire(nowNanos, expired);
  }

  @Override
  public boolean remove(R request, long nowNanos) {
    return credits.remove(request, nowNanos);
  }

  @Override
  public long nextWakeupNanos() {
    return credits.nextWakeupNanos();
  }

  @Override
  public int queued() {
    return credits.queued();
  }

  @Override
  public int takeDemandReport() {
    return credits.takeDemandReport();
  }

  @Override
  public boolean isRegistered() {
    return credits.isRegistered();
  }

  /** The session's credit window as this client knows it (in flight plus unused). */
  public int window() {
    return credits.window();
  }

  /**
   * The credit id a request sent at {@code nowNanos} echoes: the latest response's id advanced by
   * the time since it arrived; 0 when there is none. Never 0 otherwise, since ids are positive.
   */
  long creditId(long nowNanos) {
    return creditId == 0 ? 0 : creditId + Math.max(0, nowNanos - creditArrivedAt);
  }
}
