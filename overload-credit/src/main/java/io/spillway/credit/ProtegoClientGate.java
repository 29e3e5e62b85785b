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
 * <p>Which id: the one on the latest response that carried credits to this session. Credits are
 * fungible, so the client cannot say which grant a request spends; the latest one is the
 * credit a request sent right after a response spends, which is when a client with queued requests
 * sends. An explicit credit message carries no id in this SPI ({@link io.spillway.api.ControlChannel}
 * has only a delta), so after one the client echoes 0 (no sample) until a response brings an id,
 * rather than report an old id whose age would include the session's idle time.
 *
 * <p>Composes a {@link BreakwaterClientGate}; Breakwater's own client is unchanged. Not
 * thread-safe: confined to the session's thread, per {@link ClientGate}.
 *
 * @param <R> the driver's request type
 */
public final class ProtegoClientGate<R> implements ClientGate<R> {

  private final BreakwaterClientGate<R> credits;
  private long creditId;

  /** A client gate for the session in {@code environment}. */
  public ProtegoClientGate(ProtegoConfig config, ClientEnvironment environment) {
    this.credits = new BreakwaterClientGate<>(config.creditMachinery(), environment);
  }

  @Override
  public boolean offer(R request, long nowNanos) {
    return credits.offer(request, nowNanos);
  }

  @Override
  public R poll(long nowNanos, RequestMetadata header) {
    R request = credits.poll(nowNanos, header);
    if (request != null) {
      header.creditId(creditId);
    }
    return request;
  }

  @Override
  public void onResponse(ResponseMetadata response, long sentAtNanos, long nowNanos) {
    if (response.creditId() != 0) {
      creditId = response.creditId();
    }
    credits.onResponse(response, sentAtNanos, nowNanos);
  }

  @Override
  public void onControl(ResponseMetadata control, long nowNanos) {
    creditId = control.creditId(); // 0 unless a transport carries ids on explicit credits
    credits.onControl(control, nowNanos);
  }

  @Override
  public int expire(long nowNanos, Consumer<? super R> expired) {
    return credits.expire(nowNanos, expired);
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

  /** The credit id the next request will echo; 0 when there is none. */
  public long creditId() {
    return creditId;
  }
}
