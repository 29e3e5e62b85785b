package io.spillway.spring;

import io.spillway.api.OverloadScheme;
import io.spillway.api.Scheduler;
import io.spillway.api.Ticker;
import io.spillway.credit.Spillway;
import java.net.URI;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.LongFunction;

/**
 * An HTTP client's sessions, one per server it calls (credits are per client session and per
 * backend, docs/design.md), created on the first request to each origin (scheme, host, port) and
 * kept until {@link #close()}. The client filters ({@link SpillwayRestClientInterceptor}, {@link
 * SpillwayWebClientFilter}) take one of these to speak Spillway's credits.
 *
 * <pre>{@code
 * SpillwayHttpSessions sessions = new SpillwayHttpSessions(Duration.ofMillis(50));
 * RestClient client = RestClient.builder().baseUrl(url)
 *     .requestInterceptor(new SpillwayRestClientInterceptor(new RetryPushback(Ticker.system()),
 *         sessions)).build();
 * }</pre>
 *
 * <p>Each session runs the default scheme for the SLO ({@link Spillway#forSloNanos}), a scheme of
 * its own per server: the scheme's sessions share their estimate of the path's latency, which
 * differs from server to server. Thread-safe.
 */
public final class SpillwayHttpSessions implements AutoCloseable {

  private final long sloNanos;
  private final LongFunction<OverloadScheme> schemes;
  private final Ticker ticker;
  private final Scheduler scheduler;
  private final ScheduledExecutorService ownTimer;
  private final SpillwayHttpSession.CreditStreams streams;
  private final ConcurrentHashMap<String, SpillwayHttpSession> sessions = new ConcurrentHashMap<>();
  private volatile boolean closed;

  /**
   * @param sloNanos the end-to-end SLO of the requests sent through these sessions
   * @param schemes the scheme of a new session, given the SLO
   * @param ticker read once per event
   * @param scheduler wakes sessions when their oldest request is due to expire
   * @param streams opens servers' credit streams
   */
  public SpillwayHttpSessions(long sloNanos, LongFunction<OverloadScheme> schemes, Ticker ticker,
      Scheduler scheduler, SpillwayHttpSession.CreditStreams streams) {
    this(sloNanos, schemes, ticker, scheduler, null, streams);
  }

  /**
   * Sessions of the default scheme for {@code slo}, on the system clock, with a daemon timer of
   * their own and the JDK's {@code HttpClient} for credit streams.
   */
  public SpillwayHttpSessions(Duration slo) {
    this(slo.toNanos(), Spillway::forSloNanos, Ticker.system(), null, newTimer(),
        SpillwayHttpSession.CreditStreams.jdk());
  }

  private SpillwayHttpSessions(long sloNanos, LongFunction<OverloadScheme> schemes, Ticker ticker,
      Scheduler scheduler, ScheduledExecutorService ownTimer,
      SpillwayHttpSession.CreditStreams streams) {
    if (sloNanos <= 0) {
      throw new IllegalArgumentException("the SLO must be positive: " + sloNanos + " ns");
    }
    this.sloNanos = sloNanos;
    this.schemes = Objects.requireNonNull(schemes, "schemes");
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    this.ownTimer = ownTimer;
    this.scheduler = scheduler != null ? scheduler : Scheduler.of(ownTimer);
    this.streams = Objects.requireNonNull(streams, "streams");
  }

  private static ScheduledExecutorService newTimer() {
    return Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "spillway-http-sessions");
      t.setDaemon(true);
      return t;
    });
  }

  /**
   * The session with {@code uri}'s origin, created on first use.
   *
   * @throws IllegalStateException once closed
   */
  public SpillwayHttpSession of(URI uri) {
    if (closed) {
      throw new IllegalStateException("the sessions are closed");
    }
    String origin = origin(uri);
    SpillwayHttpSession s = sessions.get(origin);
    if (s != null) {
      return s;
    }
    s = sessions.computeIfAbsent(origin, o -> new SpillwayHttpSession(URI.create(o),
        schemes.apply(sloNanos), sloNanos, ticker, scheduler, streams));
    if (closed) {
      // close() may have gone over the sessions before this one was in the map: nothing else
      // would close it, nor the credit stream its first request opens
      s.close();
      throw new IllegalStateException("the sessions are closed");
    }
    return s;
  }

  /** The sessions open now, by origin. */
  public java.util.Map<String, SpillwayHttpSession> sessions() {
    return java.util.Map.copyOf(sessions);
  }

  /**
   * {@code scheme://host:port}, with the scheme's default port where the URI has none; scheme and
   * host in lower case, as they compare (RFC 3986 §6.2.2.1): one server, however a caller spells
   * it, is one session, whose credits are that server's.
   */
  static String origin(URI uri) {
    String host = uri.getHost();
    int port = uri.getPort();
    if (host == null && uri.getRawAuthority() != null) {
      // A registry-based authority: a host name URI does not take as a server's (one with '_',
      // as Docker Compose service names have), which the HTTP clients send to all the same.
      String authority = uri.getRawAuthority();
      authority = authority.substring(authority.lastIndexOf('@') + 1);
      int colon = authority.lastIndexOf(':');
      host = authority;
      if (colon >= 0 && authority.indexOf(']', colon) < 0) {
        host = authority.substring(0, colon);
        try {
          port = Integer.parseInt(authority.substring(colon + 1));
        } catch (NumberFormatException notAPort) {
          port = -1;
        }
      }
    }
    if (port < 0) {
      port = "https".equalsIgnoreCase(uri.getScheme()) ? 443 : 80;
    }
    return uri.getScheme().toLowerCase(java.util.Locale.ROOT) + "://"
        + host.toLowerCase(java.util.Locale.ROOT) + ":" + port;
  }

  /** Closes every session (each deregisters with its server). Idempotent. */
  @Override
  public void close() {
    closed = true;
    for (SpillwayHttpSession s : sessions.values()) {
      s.close();
    }
    sessions.clear();
    if (ownTimer != null) {
      ownTimer.shutdownNow();
    }
  }
}
