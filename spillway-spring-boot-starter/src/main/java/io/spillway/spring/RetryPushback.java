package io.spillway.spring;

import io.spillway.api.Status;
import io.spillway.api.Ticker;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What an HTTP client has been told by servers that shed its requests: per server (scheme, host
 * and port), the time before which it should not send again, from a {@code 429}'s or {@code 503}'s
 * {@code Spillway-Retry-Pushback-Ms} or, from a server that is not Spillway, its {@code
 * Retry-After} in seconds (RFC 6585 §4 and RFC 9110 §15.6.4 both let it say how long to wait).
 * Until then the client filters fail requests to that server at once with a {@link
 * SpillwayRejectedException}, without sending them: a retry loop above them then waits as the
 * server asked instead of adding to its overload (gRFC A6's pushback, over HTTP).
 *
 * <p>A hold lasts at most a minute, and the servers whose hold has ended are forgotten: at the next
 * call to them, or, once the servers remembered pass twice their number at the last sweep (at
 * least {@value #SWEEP_MIN}), by a sweep as a hold is recorded. So an application that calls many
 * hosts (webhooks, addresses its users give) remembers about those that shed its requests within
 * the last minute, not every one that ever did.
 *
 * <p>Thread-safe.
 */
public final class RetryPushback {

  private static final long NANOS_PER_MS = 1_000_000;
  private static final long MAX_PUSHBACK_MS = 60_000;

  private final Ticker ticker;
  private final ConcurrentHashMap<String, Long> notBefore = new ConcurrentHashMap<>();
  /** The fewest servers remembered at which a hold's recording sweeps out the ended ones. */
  static final int SWEEP_MIN = 64;
  /** Servers remembered at which the next recording sweeps; racy updates only move a sweep. */
  private volatile int sweepAt = SWEEP_MIN;

  public RetryPushback(Ticker ticker) {
    this.ticker = Objects.requireNonNull(ticker, "ticker");
  }

  /**
   * Throws if {@code server} asked not to be called yet.
   *
   * @throws SpillwayRejectedException with the milliseconds still to wait
   */
  public void checkBeforeSending(String server) {
    Long until = notBefore.get(server);
    if (until == null) {
      return;
    }
    long left = until - ticker.read();
    if (left > 0) {
      throw new SpillwayRejectedException(Status.REJECTED_LIMIT,
          Math.max(1, (left + NANOS_PER_MS - 1) / NANOS_PER_MS));
    }
    notBefore.remove(server, until);
  }

  /**
   * Records a response: a {@code 429} or {@code 503} with a pushback or {@code Retry-After} (at
   * most a minute is honoured) holds {@code server} off; any other status clears nothing (the hold
   * ends by time).
   *
   * @return the milliseconds the server asked to wait, 0 if it asked nothing
   */
  public long onResponse(String server, int status, String pushbackMs, String retryAfterSeconds) {
    if (status != 503 && status != 429) {
      return 0;
    }
    long ms = parse(pushbackMs, 1);
    if (ms <= 0) {
      ms = parse(retryAfterSeconds, 1000);
    }
    if (ms <= 0) {
      return 0;
    }
    ms = Math.min(ms, MAX_PUSHBACK_MS);
    long until = ticker.read() + ms * NANOS_PER_MS;
    // the later end holds; readings compare by their difference, as they may wrap (Ticker)
    notBefore.merge(server, until, (held, asked) -> asked - held > 0 ? asked : held);
    if (notBefore.size() >= sweepAt) {
      long now = ticker.read();
      notBefore.entrySet().removeIf(e -> e.getValue() - now <= 0);
      sweepAt = Math.max(SWEEP_MIN, 2 * notBefore.size());
    }
    return ms;
  }

  /** Servers remembered now, holds ended and not yet forgotten included. For tests. */
  int rememberedServers() {
    return notBefore.size();
  }

  /**
   * A decimal count times {@code unitMs}, at most a minute, or 0 if absent or malformed (an HTTP
   * date included). A count too long for a {@code long} is still a count (RFC 9110 §10.2.3:
   * {@code delay-seconds = 1*DIGIT}): the longest hold.
   */
  private static long parse(String value, long unitMs) {
    if (value == null) {
      return 0;
    }
    String v = value.trim();
    try {
      long n = Long.parseLong(v);
      return n <= 0 ? 0 : n >= MAX_PUSHBACK_MS / unitMs ? MAX_PUSHBACK_MS : n * unitMs;
    } catch (NumberFormatException e) {
      return !v.isEmpty() && v.chars().allMatch(c -> c >= '0' && c <= '9') ? MAX_PUSHBACK_MS : 0;
    }
  }
}
