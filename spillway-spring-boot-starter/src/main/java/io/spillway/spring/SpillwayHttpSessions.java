package io.spillway.spring;

import io.spillway.api.Cancellable;
import io.spillway.api.OverloadScheme;
import io.spillway.api.Scheduler;
import io.spillway.api.Ticker;
import io.spillway.credit.Spillway;
import java.net.URI;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.LongFunction;

/**
 * An HTTP client's sessions, one per server it calls (credits are per client session and per
 * backend, docs/design.md), created on the first request to each origin (scheme, host, port) and
 * kept while the client uses it: a session idle for a while is retired (below), and {@link
 * #close()} ends them all. The client filters ({@link SpillwayRestClientInterceptor}, {@link
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
 * differs from server to server.
 *
 * <p>Each session holds an open credit stream (a long-lived {@code GET /spillway/credits}, one
 * connection) and the server's record of it. A client that calls many origins over its life
 * (a host per tenant, a service found at changing addresses, pods behind changing IPs) would keep
 * one of each for every origin it ever called; so a session with no request queued or in flight
 * for the idle period is closed as {@link SpillwayHttpSession#close} closes it (its stream ends,
 * the server deregisters it) and leaves the map, and the origin's next request starts a new
 * session, under a new generated id (docs/design.md, "Session ids are generated, not chosen").
 * The idle period is a hundred times the SLO, and at least 30 s:
 *
 * <ul>
 *   <li>A new session costs a registration and the stream's round trip before its first request
 *       goes, and restarts the credit ramp: it starts from the one credit its first request
 *       registers with, and gains more only as the server's pool grows, step by step
 *       (breakwater-osdi20 §3.2.1, eq. 1). A request lives about an SLO at most (it expires in
 *       the client's queue at its SLO, §3.3); a hundred SLOs with none queued or in flight is a
 *       pause in the client's work, not the gap between one call and the next.
 *   <li>The floor keeps short SLOs from retiring sessions every few seconds, so a service calling
 *       a backend every second or so keeps its session. Thirty seconds is three times the
 *       Breakwater server gate's own idle timeout ({@code
 *       BreakwaterServerGate.SESSION_IDLE_TIMEOUT_NANOS}, 10 s), after which the server has
 *       already deregistered the session from its gate and cut its window to the credit its next
 *       request registers with: what a session idle longer still holds is mostly its stream. It is
 *       also how often a session whose stream could not be opened tries again ({@link
 *       SpillwayHttpSession#STREAM_RETRY_NANOS}): an origin called now and then costs the server
 *       a new stream at most that often.
 * </ul>
 *
 * <p>A sweep on the scheduler, every quarter of the period, retires the sessions idle by the
 * ticker, so a session goes between one and one and a quarter periods after its last request
 * ends. A request that reaches a session as it is retired is never lost: the check and the
 * removal from the map are made under the lock the session offers requests under, and a retired
 * session hands what is offered to it on to the origin's new session ({@link
 * SpillwayHttpSession#offer}). A session that learned its server is not Spillway's forgets it
 * when retired: the new one asks for the stream again, once a period at most.
 *
 * <p>Thread-safe.
 */
public final class SpillwayHttpSessions implements AutoCloseable {

  private final long sloNanos;
  private final LongFunction<OverloadScheme> schemes;
  private final Ticker ticker;
  private final Scheduler scheduler;
  private final ScheduledExecutorService ownTimer;
  private final SpillwayHttpSession.CreditStreams streams;
  private final ConcurrentHashMap<String, SpillwayHttpSession> sessions = new ConcurrentHashMap<>();
  private final long idleNanos;
  private final Object sweepLock = new Object();
  /** The periodic sweep of idle sessions, started with the first session. Guarded by sweepLock. */
  private Cancellable sweep;
  private volatile boolean closed;

  /** The idle period in SLOs: see the class comment. */
  static final long IDLE_SLOS = 100;
  /** The least idle period, in seconds: see the class comment. */
  static final long MIN_IDLE_SECONDS = 30;

  /**
   * @param sloNanos the end-to-end SLO of the requests sent through these sessions
   * @param schemes the scheme of a new session, given the SLO
   * @param ticker read once per event
   * @param scheduler wakes sessions when their oldest request is due to expire, and sweeps the
   *     idle ones
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
    this.idleNanos = idleNanos(sloNanos);
  }

  /** {@value #IDLE_SLOS} SLOs, at least {@value #MIN_IDLE_SECONDS} s, at most 2^62 ns. */
  static long idleNanos(long sloNanos) {
    long slos = sloNanos > (1L << 62) / IDLE_SLOS ? 1L << 62 : sloNanos * IDLE_SLOS;
    return Math.max(slos, MIN_IDLE_SECONDS * 1_000_000_000L);
  }

  /**
   * How long a session must have had no request queued or in flight to be retired (see the class
   * comment).
   */
  long idleNanos() {
    return idleNanos;
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
    SpillwayHttpSession s = sessionAt(origin(uri));
    if (s == null) {
      throw new IllegalStateException("the sessions are closed");
    }
    return s;
  }

  /** The session with {@code origin}, created on first use; {@code null} once closed. */
  private SpillwayHttpSession sessionAt(String origin) {
    if (closed) {
      return null;
    }
    SpillwayHttpSession s = sessions.get(origin);
    if (s != null) {
      return s;
    }
    s = sessions.computeIfAbsent(origin, o -> new SpillwayHttpSession(URI.create(o),
        schemes.apply(sloNanos), sloNanos, ticker, scheduler, streams));
    startSweeping();
    if (closed) {
      // close() may have gone over the sessions before this one was in the map: nothing else
      // would close it, nor the credit stream its first request opens
      s.close();
      return null;
    }
    return s;
  }

  /** The sessions open now, by origin. */
  public Map<String, SpillwayHttpSession> sessions() {
    return Map.copyOf(sessions);
  }

  /**
   * Starts the sweep of idle sessions, once: with the first session, so that sessions never used
   * put nothing on the scheduler.
   */
  private void startSweeping() {
    synchronized (sweepLock) {
      if (sweep == null && !closed) {
        sweep = scheduler.every(Math.max(idleNanos / 4, 1), this::retireIdle);
      }
    }
  }

  /**
   * Retires the sessions idle for the idle period. Each is taken out of the map under its own
   * lock, and only if it is still the origin's; an {@link #of} that found it just before hands
   * its request on to the session that replaces it ({@link SpillwayHttpSession#offer}).
   */
  private void retireIdle() {
    long now = ticker.read();
    for (Map.Entry<String, SpillwayHttpSession> e : sessions.entrySet()) {
      String origin = e.getKey();
      SpillwayHttpSession s = e.getValue();
      s.retireIfIdle(now, idleNanos, () -> sessions.remove(origin, s), () -> sessionAt(origin));
    }
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
    synchronized (sweepLock) {
      if (sweep != null) {
        sweep.cancel();
      }
    }
    for (SpillwayHttpSession s : sessions.values()) {
      s.close();
    }
    sessions.clear();
    if (ownTimer != null) {
      ownTimer.shutdownNow();
    }
  }
}
