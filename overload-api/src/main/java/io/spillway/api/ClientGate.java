package io.spillway.api;

import java.util.function.Consumer;

/**
 * The client side of an admission scheme for one client session: a queue of requests waiting for
 * permission to be sent (a credit, a window slot, a rate token), which expires requests that have
 * waited too long to meet their SLO (Breakwater §3.3).
 *
 * <p>A driver (the transport's client, or the simulator) calls {@link #offer} when the application
 * issues a request, then {@link #poll} until it returns {@code null}, sending each request it
 * returns; it feeds back every response and control message, and calls {@link #expire} no later than
 * {@link #nextWakeupNanos()}.
 *
 * <p>Not thread-safe: a session's gate is confined to one thread (its event loop) or guarded by
 * the driver.
 *
 * @param <R> the driver's request type, opaque to the gate
 */
public interface ClientGate<R> {

  /**
   * Queues a request issued at {@code nowNanos}: {@link #offer(Object, long, long)} with the
   * arrival now.
   *
   * @return {@code false} if the gate refused it outright (a client-side drop); the caller then
   *     fails it at once
   */
  default boolean offer(R request, long nowNanos) {
    return offer(request, nowNanos, nowNanos);
  }

  /**
   * Queues a request that arrived at {@code arrivalNanos} and reaches the gate at {@code nowNanos}
   * (same ticker): the time between already counts as waiting in the client queue, so a request
   * that arrived longer ago than the queue timeout expires at the next {@link #expire} without
   * being sent. Breakwater §3.3 expires a request by its time in the client's queue, which starts
   * when the application issues it, not when the driver's thread gets to it. An arrival after
   * {@code nowNanos} counts as {@code nowNanos} ({@link #queuedSince}). Arrivals should not
   * decrease from one offer to the next: an older one queued behind a newer one expires only when
   * it reaches the head.
   *
   * @return {@code false} if the gate refused it outright (a client-side drop); the caller then
   *     fails it at once
   */
  boolean offer(R request, long arrivalNanos, long nowNanos);

  /** The stamp a gate queues a request under: its arrival, or now if the arrival is later. */
  static long queuedSince(long arrivalNanos, long nowNanos) {
    return arrivalNanos - nowNanos < 0 ? arrivalNanos : nowNanos;
  }

  /**
   * The client side of a purely server-side scheme (no control, CoDel, a server concurrency limit,
   * a peer library's limiter): a plain FIFO that releases every request at the driver's next
   * {@link #poll}, with the session's id and the queue's length as its demand, and expires a
   * request only if it somehow waits a whole SLO ({@link ClientEnvironment#sloNanos}). A custom
   * scheme whose decisions are all made on the server returns this from {@link
   * OverloadScheme#newClientGate}, or wraps it.
   *
   * @param <R> the driver's request type
   */
  static <R> ClientGate<R> sendAtOnce(ClientEnvironment environment) {
    return new SendAtOnceClientGate<>(environment);
  }

  /**
   * Returns the next request that may be sent now, oldest first, having written the overload
   * fields it carries (session, demand, flags) into {@code header}; {@code null} if none may go.
   */
  R poll(long nowNanos, RequestMetadata header);

  /**
   * Feeds back the response (or reject) to a request this gate released.
   *
   * @param sentAtNanos when the request left the client
   */
  void onResponse(ResponseMetadata response, long sentAtNanos, long nowNanos);

  /**
   * A request this gate released ended without its answer being read: the caller gave up on it
   * (cancelled, or its deadline passed) after it was sent, or the connection failed under it.
   * {@code response} carries the status the driver ends it with and nothing from the server. The
   * server may still have answered it, and whatever that answer carried (a credit change) is lost
   * to this client. The default treats it as {@link #onResponse}; a gate that keeps a ledger with
   * the server (Breakwater's credit window) may ask the server to restate it.
   *
   * @param sentAtNanos when the request left the client
   */
  default void onUnanswered(ResponseMetadata response, long sentAtNanos, long nowNanos) {
    onResponse(response, sentAtNanos, nowNanos);
  }

  /** Feeds back an explicit control message (a credit) from the server. */
  default void onControl(ResponseMetadata control, long nowNanos) { }

  /**
   * Removes queued requests that can no longer meet their SLO and hands each to {@code expired};
   * the caller fails them with {@link Status#EXPIRED}. Returns how many were removed.
   */
  int expire(long nowNanos, Consumer<? super R> expired);

  /**
   * Withdraws {@code request}, still queued, whose caller gave up on it at {@code nowNanos} (a
   * cancelled call): it leaves the queue at once, what it held (tokens paid for it) returns to the
   * session, and it is neither sent nor counted in {@link #queued()} or in the demand the gate
   * reports (Breakwater §3.2.2: demand is the requests waiting to be sent). Matched by identity.
   * Costs a scan of the queue; the driver calls it only for a cancelled request.
   *
   * @return whether it was queued here; {@code false} if it was released or expired already, or
   *     the gate cannot withdraw requests (the default: the driver then meets it at {@link #poll}
   *     or {@link #expire} and fails it there)
   */
  default boolean remove(R request, long nowNanos) {
    return false;
  }

  /**
   * When the gate next needs {@link #expire} or {@link #poll} to be called even if nothing else
   * happens (the oldest request's expiry, a rate limiter's next token). Only meaningful while
   * {@link #queued()} is positive.
   */
  long nextWakeupNanos();

  /** Requests waiting in this gate. */
  int queued();

  /**
   * A demand report the driver must send as a control message because no request can carry it
   * (demand synchronisation, or a request that the server restate a credit window the gate can
   * no longer trust, {@link #onUnanswered}), or {@code -1} if there is none. Taking it clears it.
   */
  default int takeDemandReport() {
    return -1;
  }

  /** Whether the session has registered with the server (sent its first request). */
  default boolean isRegistered() {
    return true;
  }
}
