package io.spillway.spring;

import io.spillway.api.Cancellable;
import io.spillway.api.ClientEnvironment;
import io.spillway.api.ClientGate;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.OverloadScheme;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.Scheduler;
import io.spillway.api.Status;
import io.spillway.api.Ticker;
import io.spillway.api.internal.SessionIds;
import java.lang.System.Logger.Level;
import java.net.URI;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BiConsumer;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * One client session of an admission scheme with one HTTP server (docs/design.md, "A request's
 * path on a client"; credits are per client session and per backend): the HTTP twin of the gRPC
 * transport's {@code SpillwayClientInterceptor}. A request {@linkplain #offer offered} waits in the
 * session's {@link ClientGate} until the gate lets it go (Breakwater: until the session holds a
 * credit, breakwater-osdi20 §3.3), and is then sent with the gate's fields as {@code Spillway-*}
 * headers ({@link Ticket#writeHeaders}); its answer, read back with {@link #onAnswer}, brings the
 * credit delta the server wrote into the response's headers.
 *
 * <p>A server whose endpoints have gates of their own ({@code spillway.endpoints}) keeps a ledger
 * of the session's credits per gate, and refuses a request beyond its gate's; so the session keeps
 * a gate, and a window, per server gate, under one id, and routes each request by its path as the
 * server's credit stream says ({@code Spillway-Routes}, {@link EndpointRoutes}). A path that no
 * gate with credits decides on goes at once, without the session's fields.
 *
 * <ul>
 *   <li>A request that waits past the gate's timeout fails with a {@link
 *       SpillwayRejectedException} of status {@link Status#EXPIRED}, unsent, driven by the
 *       injected {@link Scheduler}: one pending wake-up per session, never a timer per request.
 *   <li>When the scheme {@linkplain OverloadScheme#issuesCredits issues credits}, the session
 *       keeps the server's credit stream open ({@link CreditStreams}; {@code GET
 *       /spillway/credits}, served by the starter): it opens it with its first request and holds
 *       requests until the server has answered it, so that a credit for a drained session, with
 *       nothing in flight to carry it, always has a way in.
 *   <li>A server that is not Spillway (no credit stream: {@code 404}, {@code 405}; or, before it
 *       has shown otherwise, an answer without {@code Spillway-Status}) makes the session a
 *       pass-through for good: held and queued requests go at once, without Spillway headers, and
 *       later ones are not queued. Once the server has answered the stream or sent the fields, an
 *       answer without them (a proxy's or a gateway's own answer) counts as an answer not read
 *       (next item).
 *   <li>An answer brings the window itself when the server stamped it ({@value
 *       SpillwayHttpHeaders#CREDIT_WINDOW}), which the gate takes over its own count. A request
 *       that ends without the answer's fields read (the caller gave up on it, the connection
 *       failed, an answer not the server's) goes to the gate as {@linkplain ClientGate#onUnanswered
 *       unanswered}: the server may have answered it with a change of the window that this client
 *       never saw. A gate whose window is then in doubt and lets nothing go asks the server to
 *       restate it with a demand report ({@link ClientGate#takeDemandReport}), which the session
 *       sends as {@code POST /spillway/credits} ({@link CreditStreams#demand}); the answer comes
 *       on the stream. Without that a count that drifted to nothing would wait for an explicit
 *       credit (breakwater-osdi20 §3.3) that a server holding the window open never sends.
 *   <li>A stream that cannot be opened makes it a pass-through for {@link #STREAM_RETRY_NANOS};
 *       a stream that ends starts the session again under a new id (see {@code onStreamClosed}).
 *   <li>{@link #close()} fails queued requests ({@link Status#FAILED}) and deregisters the session
 *       (its unused credits return to the server's pool). A session that {@link
 *       SpillwayHttpSessions} retires as idle closes so too, and hands the requests offered to it
 *       afterwards on to the session that replaced it.
 * </ul>
 *
 * <p>Thread-safe: the gates, which are not, are driven under one lock; futures complete outside
 * it.
 * The ticker is read once per event.
 */
public final class SpillwayHttpSession implements AutoCloseable {

  private static final System.Logger LOG = System.getLogger(SpillwayHttpSession.class.getName());
  private static final long FAR_FUTURE = 1L << 62;
  private static final long MIN_WAKEUP_NANOS = 1_000;

  private static final int CONTROL_OFF = 0; // the scheme sends no explicit credits
  private static final int CONTROL_NONE = 1; // none yet: open one with the next request
  private static final int CONTROL_OPENING = 2; // hold requests until the server answers it
  private static final int CONTROL_READY = 3;

  private final URI server;
  private final OverloadScheme scheme;
  private final long sloNanos;
  private final Ticker ticker;
  private final Scheduler scheduler;
  private final CreditStreams streams;

  private final ReentrantLock lock = new ReentrantLock();
  // Guarded by lock:
  private final ResponseMetadata answer = new ResponseMetadata();
  private final Runnable wakeupTask = this::onWakeup;
  private List<Ticket> releasing = new ArrayList<>();
  private List<Ticket> failing = new ArrayList<>();
  /** Demand reports the gates asked to send, sent outside the lock. */
  private List<Demand> demanding = new ArrayList<>();
  /** What the gate writes a polled request's fields into; handed to the ticket it releases. */
  private RequestMetadata spareFields = new RequestMetadata();
  private List<Ticket> held;
  private Cancellable wakeup;
  private long wakeupAt;
  private int control;
  private Cancellable stream;
  /**
   * The key the server bound the open stream to ({@link SpillwayHttpHeaders#STREAM_KEY}), which
   * the session's demand reports and deregistration carry; {@code null} while none is open (a
   * server with no stream open for the session needs none).
   */
  private String streamKey;
  /** Where the credit stream is: the origin's {@code /spillway/credits}, or where answers say. */
  private URI creditsUri;
  /**
   * The server's context path, what precedes {@code /spillway/credits} in {@link #creditsUri}
   * ({@code ""} at the origin's): its routes are paths within it.
   */
  private String contextPath = "";
  /** The session's id and gates; all renewed when the server may have forgotten the session. */
  private long sessionId;
  /** One gate per server gate, by its index in the routes; created as a path first needs one. */
  private ClientGate<Ticket>[] gates;
  /** Which server gate decides on which path, from the credit stream's answer. */
  private EndpointRoutes routes = EndpointRoutes.ONE_GATE;
  private boolean passThrough;
  /** While passing through because the stream could not be opened: when to try again. */
  private long retryStreamAt;
  private boolean passThroughForGood;
  /** Whether the server has shown it is Spillway's: an answer with its fields, or its stream. */
  private boolean spokeSpillway;
  /** Whether an open stream's end started the session again, at {@link #restartedAt}. */
  private boolean restarted;
  private long restartedAt;
  private boolean closed;
  /**
   * Requests offered and not yet ended: held, queued, released and not yet reported, or failed
   * and not yet settled. The session is idle while there are none.
   */
  private int unfinished;
  /** When {@link #unfinished} last fell to zero, or the session was made. */
  private long idleSince;
  /**
   * Set as the session is retired idle ({@link #retireIfIdle}): gives the origin's session that
   * takes the requests offered here from then on, or {@code null} when there is none.
   */
  private Supplier<SpillwayHttpSession> successor;

  /**
   * A session with {@code server}.
   *
   * @param server the server's origin (scheme, host, port)
   * @param scheme the admission scheme the server runs
   * @param sloNanos the end-to-end SLO of the session's requests
   * @param ticker read once per event
   * @param scheduler wakes the session when its oldest request is due to expire
   * @param streams opens the server's credit stream
   */
  public SpillwayHttpSession(URI server, OverloadScheme scheme, long sloNanos, Ticker ticker,
      Scheduler scheduler, CreditStreams streams) {
    this.server = Objects.requireNonNull(server, "server");
    this.creditsUri = server.resolve(io.spillway.spring.internal.HttpCreditStreams.PATH);
    this.scheme = Objects.requireNonNull(scheme, "scheme");
    this.sloNanos = sloNanos;
    this.sessionId = SessionIds.next();
    this.gates = newGates(1);
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    this.scheduler = Objects.requireNonNull(scheduler, "scheduler");
    this.streams = Objects.requireNonNull(streams, "streams");
    this.control = scheme.issuesCredits() ? CONTROL_NONE : CONTROL_OFF;
    this.idleSince = ticker.read();
  }

  /**
   * The longest a caller should wait for {@link Ticket#released()} by the wall clock: the SLO plus
   * {@link #STREAM_OPEN_ALLOWANCE_NANOS}. The gate expires a queued request sooner (its queue
   * timeout is at most the SLO) on the session's own clock, and a request held while the credit
   * stream opens waits for that, not in the queue (the JDK client gives up connecting after 5 s);
   * this bound only keeps a caller from waiting for ever on a clock or scheduler that stands still.
   */
  public long maxWaitNanos() {
    return sloNanos + STREAM_OPEN_ALLOWANCE_NANOS;
  }

  /** How long a session's first requests may be held while its credit stream opens: 10 s. */
  public static final long STREAM_OPEN_ALLOWANCE_NANOS = 10_000_000_000L;

  /** The server's origin. */
  public URI server() {
    return server;
  }

  /** The session's id, as its requests carry it now (a renewed session has a new one). */
  public long sessionId() {
    lock.lock();
    try {
      return sessionId;
    } finally {
      lock.unlock();
    }
  }

  /** Whether the server turned out not to be Spillway, so requests go at once. */
  public boolean isPassThrough() {
    lock.lock();
    try {
      return passThrough;
    } finally {
      lock.unlock();
    }
  }

  /** Requests waiting to be sent. */
  public int queued() {
    lock.lock();
    try {
      int queued = held == null ? 0 : held.size();
      for (ClientGate<Ticket> g : gates) {
        queued += g == null ? 0 : g.queued();
      }
      return queued;
    } finally {
      lock.unlock();
    }
  }

  /**
   * A request the application is making now, to {@code path} (the request URI's raw path, which
   * picks the server gate it waits for). Its {@link Ticket#released()} completes when it may be
   * sent, or fails with a {@link SpillwayRejectedException} if it expired in the queue or the
   * session closed; once released, the caller must report its end once, with {@link #onAnswer} or
   * {@link #onFailure}.
   *
   * <p>A session that its {@link SpillwayHttpSessions} retired as idle hands the request on to the
   * origin's session that replaced it: the ticket is that session's, and may be reported through
   * either.
   */
  public Ticket offer(String path) {
    String p = path == null || path.isEmpty() ? "/" : path;
    Ticket ticket = new Ticket(this, p);
    long now = ticker.read();
    boolean open = false;
    Supplier<SpillwayHttpSession> handOn = null;
    lock.lock();
    try {
      if (successor != null) {
        handOn = successor; // retired, out of the map: its successor is asked outside the lock
      } else {
        unfinished++;
        if (passThrough && !passThroughForGood && now - retryStreamAt >= 0) {
          passThrough = false; // try the server's credit stream again, as a new session
          renewLocked();
        }
        if (closed) {
          failing.add(ticket);
        } else if (passThrough) {
          releasing.add(ticket);
        } else if (control == CONTROL_NONE || control == CONTROL_OPENING) {
          open = control == CONTROL_NONE;
          control = CONTROL_OPENING;
          if (held == null) {
            held = new ArrayList<>(4);
          }
          held.add(ticket);
        } else {
          offerLocked(ticket, now);
          drainLocked(now);
        }
      }
    } finally {
      lock.unlock();
    }
    if (handOn != null) {
      SpillwayHttpSession next = handOn.get();
      if (next != null) {
        return next.offer(p);
      }
      // none took the origin over (the sessions closed): it fails as one offered after close
      lock.lock();
      try {
        unfinished++;
        failing.add(ticket);
      } finally {
        lock.unlock();
      }
    }
    if (open) {
      openStream();
    }
    settle(now);
    return ticket;
  }

  /**
   * The answer to a released request: its HTTP status and response headers by name ({@code null}
   * when absent). Later reports of the same request are ignored. A ticket of another session
   * (one this session handed on as it was retired, see {@link #offer}) is reported to that one.
   */
  public void onAnswer(Ticket ticket, int httpStatus, Function<String, String> headers) {
    if (ticket.session != this) {
      ticket.session.onAnswer(ticket, httpStatus, headers);
      return;
    }
    long now = ticker.read();
    lock.lock();
    try {
      ClientGate<Ticket> gate = ticket.gate;
      if (!endLocked(ticket, now)) {
        return;
      }
      if (!isCurrentLocked(ticket)) {
        // released in passing through, or by a session since renewed: no credit of ours; but a
        // server whose stream was not at the origin's path may have named where it is
        if (gate == null) {
          creditsAtLocked(headers.apply(SpillwayHttpHeaders.CREDITS));
        }
        return;
      }
      String status = headers.apply(SpillwayHttpHeaders.STATUS);
      if (status == null && !spokeSpillway) {
        becomePassThroughLocked("its answers carry no " + SpillwayHttpHeaders.STATUS, true, now);
      } else if (status == null) {
        // an answer without the fields from a Spillway server: a proxy's or a gateway's own, or
        // the server's with its fields lost on the way; whatever change it carried is not seen
        answer.reset().sessionId(sessionId).status(Status.FAILED);
        gate.onUnanswered(answer, ticket.sentAt, now);
      } else {
        spokeSpillway = true;
        String problem = SpillwayHttpHeaders.readResponse(headers, answer.reset());
        if (problem != null) {
          LOG.log(Level.DEBUG, "session {0} with {1}: {2}", sessionId, server, problem);
        }
        answer.sessionId(sessionId);
        gate.onResponse(answer, ticket.sentAt, now);
      }
      drainLocked(now);
    } finally {
      lock.unlock();
    }
    settle(now);
  }

  /**
   * The caller gives up on {@code ticket}, wherever it is: a request still queued is withdrawn
   * (and never sent), a released one counts as ended without an answer, one that failed already
   * needs nothing. Use it where the caller cannot tell which (an interrupt, a cancellation).
   */
  public void abandon(Ticket ticket) {
    if (ticket.released.cancel(false)) {
      ticket.session.withdraw(ticket);
    } else if (!ticket.released.isCompletedExceptionally()) {
      onFailure(ticket);
    }
  }

  /**
   * Takes a request whose caller gave up while it waited out of where it waits, so that it is no
   * longer counted as queued nor in the demand the gate reports to the server. One the gate has
   * already let go (its release not yet settled) is not there: {@code settle} finds it cancelled
   * and ends it unsent.
   */
  private void withdraw(Ticket ticket) {
    long now = ticker.read();
    lock.lock();
    try {
      if (held != null && held.remove(ticket)) {
        endLocked(ticket, now);
        return;
      }
      for (ClientGate<Ticket> g : gates) {
        if (g != null && g.remove(ticket, now)) {
          endLocked(ticket, now);
          drainLocked(now); // the head may have changed: the next may go, or expire later
          break;
        }
      }
    } finally {
      lock.unlock();
    }
    settle(now);
  }

  /**
   * A released request ended without its answer read (the connection failed, a read timed out,
   * the caller gave up): the server may have answered it, with a credit change this client never
   * sees, so the gate takes it as {@linkplain ClientGate#onUnanswered unanswered}.
   */
  public void onFailure(Ticket ticket) {
    ticket.session.ended(ticket, true);
  }

  /**
   * Ends a released request that brought no answer: {@code unanswered} if it may have reached the
   * server, else (its caller gave up before it was sent) as a failure no server saw.
   */
  private void ended(Ticket ticket, boolean unanswered) {
    long now = ticker.read();
    lock.lock();
    try {
      ClientGate<Ticket> gate = ticket.gate;
      if (!endLocked(ticket, now) || !isCurrentLocked(ticket)) {
        return;
      }
      answer.reset().sessionId(sessionId).status(Status.FAILED);
      if (unanswered) {
        gate.onUnanswered(answer, ticket.sentAt, now);
      } else {
        gate.onResponse(answer, ticket.sentAt, now);
      }
      drainLocked(now);
    } finally {
      lock.unlock();
    }
    settle(now);
  }

  /**
   * The server answered the credit stream, with its routes ({@code null}: one gate) and the key it
   * bound the stream to: requests may go.
   */
  void onStreamOpen(Cancellable from, String routesHeader, String key) {
    long now = ticker.read();
    lock.lock();
    try {
      if (from == stream && control == CONTROL_OPENING) {
        control = CONTROL_READY;
        streamKey = key;
        try {
          routes = EndpointRoutes.parse(routesHeader);
        } catch (IllegalArgumentException e) {
          LOG.log(Level.WARNING, "{0}: malformed {1} ({2}); every path waits for the default "
              + "gate''s credits", server, SpillwayHttpHeaders.ROUTES, e.getMessage());
          routes = EndpointRoutes.ONE_GATE;
        }
        spokeSpillway = true;
        offerHeldLocked(now);
        drainLocked(now);
      }
    } finally {
      lock.unlock();
    }
    settle(now);
  }

  /**
   * An explicit credit from server gate {@code gateIndex} arrived on the stream, with the window
   * after it and its stamp ({@code seq} 0: a delta alone). A gate sends them only to sessions it
   * has registered, so one this session has not called is ignored.
   */
  void onCredit(Cancellable from, int gateIndex, int delta, int window, long seq) {
    long now = ticker.read();
    lock.lock();
    try {
      if (from == stream && !passThrough && gateIndex >= 0 && gateIndex < gates.length
          && gates[gateIndex] != null) {
        answer.reset().sessionId(sessionId).credit(delta, window, seq);
        gates[gateIndex].onControl(answer, now);
        drainLocked(now);
      }
    } finally {
      lock.unlock();
    }
    settle(now);
  }

  /**
   * The stream ended or could not be opened:
   * <ul>
   *   <li>{@code notSpillway} (the server has no credit stream: {@code 404}, {@code 405}): a
   *       pass-through for good;
   *   <li>it could not be opened (the server is down or unreachable, a TLS failure): a
   *       pass-through for {@link #STREAM_RETRY_NANOS}, then the next request tries again as a new
   *       session; requests sent meanwhile carry no session, so the server takes them as a plain
   *       client's (its AQM and limit, its pushback), and none waits for a stream that does not
   *       come;
   *   <li>it had been open (the server ended it, or the connection broke): the server deregistered
   *       the session with it, and may have restarted, so its ledger of this session is gone. The
   *       session starts again under a new id with a new gate, its queued requests held until the
   *       new stream is answered; answers to requests of the old one bring no credit. A stream
   *       that ends within {@link #STREAM_RETRY_NANOS} of such a restart is taken as one that
   *       could not be opened (previous item): a server or proxy that ends every stream at once
   *       would otherwise be reconnected to without end.
   * </ul>
   */
  void onStreamClosed(Cancellable from, boolean notSpillway, String why) {
    long now = ticker.read();
    boolean reopen = false;
    lock.lock();
    try {
      if (from != stream) {
        return;
      }
      boolean wasOpen = control == CONTROL_READY;
      stream = null;
      streamKey = null;
      if (closed) {
        return;
      }
      if (notSpillway) {
        becomePassThroughLocked("it has no credit stream (" + why + ")", true, now);
      } else if (!wasOpen) {
        retryStreamAt = now + STREAM_RETRY_NANOS;
        becomePassThroughLocked("its credit stream could not be opened (" + why + "); trying "
            + "again in " + STREAM_RETRY_NANOS / 1_000_000_000 + " s", false, now);
      } else if (restarted && now - restartedAt < STREAM_RETRY_NANOS) {
        // ended again soon after the last restart: a server or proxy that ends every stream,
        // which a reopen at once would meet again and again, each a new connection
        retryStreamAt = now + STREAM_RETRY_NANOS;
        becomePassThroughLocked("its credit stream ended again soon after it was reopened ("
            + why + "); trying again in " + STREAM_RETRY_NANOS / 1_000_000_000 + " s", false,
            now);
      } else {
        restarted = true;
        restartedAt = now;
        LOG.log(Level.DEBUG, "session {0} with {1}: credit stream ended ({2}); starting again as "
            + "a new session", sessionId, server, why);
        List<Ticket> queued = new ArrayList<>();
        expireAllLocked(now, queued);
        renewLocked();
        control = CONTROL_OPENING;
        held = queued;
        reopen = true;
      }
      drainLocked(now);
    } finally {
      lock.unlock();
    }
    if (reopen) {
      openStream();
    }
    settle(now);
  }

  /**
   * The server named where its credit stream is ({@link SpillwayHttpHeaders#CREDITS}), on the
   * answer to a request that passed through: a session that passes through because it found no
   * stream where it looked (a server under a context path serves it under that path) looks there
   * with its next request, as a new session. A path off the server's origin, or the one already
   * looked at, changes nothing, so a server that has no stream there either is asked once.
   */
  private void creditsAtLocked(String path) {
    if (path == null || !passThrough || closed || !scheme.issuesCredits()) {
      return;
    }
    String p = path.trim();
    URI at;
    try {
      at = server.resolve(p);
    } catch (IllegalArgumentException malformed) {
      return;
    }
    if (!p.startsWith("/") || !Objects.equals(at.getScheme(), server.getScheme())
        || !Objects.equals(at.getRawAuthority(), server.getRawAuthority())
        || at.getRawQuery() != null || at.getRawFragment() != null || at.equals(creditsUri)) {
      return;
    }
    creditsUri = at;
    String stream = at.getRawPath();
    contextPath = stream.endsWith(io.spillway.spring.internal.HttpCreditStreams.PATH)
        ? stream.substring(0, stream.length()
            - io.spillway.spring.internal.HttpCreditStreams.PATH.length())
        : "";
    passThrough = false;
    passThroughForGood = false;
    renewLocked();
    LOG.log(Level.INFO, "{0}: its credit stream is at {1}; opening it with the next request",
        server, at.getRawPath());
  }

  /** How long a session whose credit stream could not be opened passes requests through: 30 s. */
  public static final long STREAM_RETRY_NANOS = 30_000_000_000L;

  /** A new id and new gates, nothing registered: the server will know it as a newcomer. */
  private void renewLocked() {
    if (wakeup != null) {
      wakeup.cancel();
      wakeup = null;
    }
    sessionId = SessionIds.next();
    gates = newGates(1);
    control = scheme.issuesCredits() ? CONTROL_NONE : CONTROL_OFF;
    spokeSpillway = false;
  }

  private void onWakeup() {
    long now = ticker.read();
    lock.lock();
    try {
      wakeup = null;
      if (!closed) {
        drainLocked(now);
      }
    } finally {
      lock.unlock();
    }
    settle(now);
  }

  /**
   * Ends the session: queued requests fail, the stream closes, and the server is told to return
   * the session's unused credits to its pool and end its stream ({@code DELETE}, sent when the
   * session has a stream, or a request registered it). Requests in flight end normally.
   * Idempotent.
   */
  @Override
  public void close() {
    long now = ticker.read();
    Closing closing;
    lock.lock();
    try {
      closing = closeLocked(now);
    } finally {
      lock.unlock();
    }
    finishClosing(closing, now);
  }

  /**
   * Retires the session if it is idle: no request of its unfinished (none held, queued, or
   * released and not yet reported), and none since {@code idleNanos} before {@code now}. The check
   * is made under the lock every request is offered under, so none slips in between: {@code
   * unlist} runs there, taking the session out of wherever callers look it up, and from then on
   * {@link #offer} hands what is offered here to the session {@code successor} gives. Then it
   * closes as {@link #close} does (its stream ends, the server deregisters it).
   *
   * @param unlist takes the session out of its map; may take that map's locks (never this one's)
   * @param successor the origin's session from now on, {@code null} when there is none; called
   *     outside this session's lock
   * @return whether it was retired
   */
  boolean retireIfIdle(long now, long idleNanos, Runnable unlist,
      Supplier<SpillwayHttpSession> successor) {
    Objects.requireNonNull(successor, "successor");
    Closing closing;
    lock.lock();
    try {
      if (closed || unfinished > 0 || now - idleSince < idleNanos) {
        return false;
      }
      unlist.run();
      this.successor = successor;
      closing = closeLocked(now);
    } finally {
      lock.unlock();
    }
    finishClosing(closing, now);
    return true;
  }

  /**
   * What {@link #close} does outside the lock: the stream to end, where to deregister which id,
   * with its stream's key.
   */
  private record Closing(Cancellable stream, URI deregisterAt, long sessionId, String streamKey) { }

  /** Closes the session under the lock; {@code null} if it was closed already. */
  private Closing closeLocked(long now) {
    if (closed) {
      return null;
    }
    closed = true;
    expireAllLocked(now, failing);
    if (held != null) {
      failing.addAll(held);
      held = null;
    }
    if (wakeup != null) {
      wakeup.cancel();
      wakeup = null;
    }
    Cancellable open = stream;
    stream = null;
    // the server may hold the stream open still (a servlet server notices a client gone only
    // when it next writes): the DELETE carries its key
    String key = streamKey;
    streamKey = null;
    boolean registered = false;
    for (ClientGate<Ticket> g : gates) {
      registered |= g != null && g.isRegistered();
    }
    // A stream asked for is ended by the server's side too: a servlet server notices that the
    // client went away only when it next writes, and it writes nothing to a session none of
    // whose requests has registered it (a stream opened as the session started again).
    boolean deregister = control != CONTROL_OFF && (open != null || registered && !passThrough);
    return new Closing(open, deregister ? creditsUri : null, sessionId, key);
  }

  private void finishClosing(Closing closing, long now) {
    if (closing == null) {
      return;
    }
    settle(now);
    if (closing.stream() != null) {
      closing.stream().cancel();
    }
    if (closing.deregisterAt() != null) {
      streams.deregister(closing.deregisterAt(), closing.sessionId(), closing.streamKey());
    }
  }

  // ---- under the lock ----

  /** Marks {@code t} ended, once; the session is idle from {@code now} if it was the last. */
  private boolean endLocked(Ticket t, long now) {
    if (t.ended) {
      return false;
    }
    t.ended = true;
    if (--unfinished == 0) {
      idleSince = now;
    }
    return true;
  }

  private void becomePassThroughLocked(String why, boolean forGood, long now) {
    if (passThrough) {
      return;
    }
    passThrough = true;
    passThroughForGood = forGood;
    LOG.log(forGood ? Level.INFO : Level.WARNING, "{0}: {1}; requests to it are sent at once"
        + " without credits", server, forGood ? "not a Spillway server, " + why : why);
    offerHeldLocked(now);
    expireAllLocked(now, releasing);
    if (wakeup != null) {
      wakeup.cancel();
      wakeup = null;
    }
  }

  /** Offers the requests held while the stream opened, as arriving now. */
  private void offerHeldLocked(long now) {
    if (held == null) {
      return;
    }
    for (Ticket t : held) {
      if (passThrough) {
        releasing.add(t);
      } else {
        offerLocked(t, now);
      }
    }
    held = null;
  }

  /**
   * Queues {@code t} in the gate of the server gate that decides on its path, or releases it at
   * once where none with credits does.
   */
  private void offerLocked(Ticket t, long now) {
    int index = routes.gateFor(withinContext(t.path));
    if (index < 0) {
      releasing.add(t); // no gate of the server counts it: it goes without the session's fields
      return;
    }
    if (index >= gates.length) {
      gates = Arrays.copyOf(gates, index + 1);
    }
    ClientGate<Ticket> g = gates[index];
    if (g == null) {
      g = scheme.newClientGate(new ClientEnvironment(sessionId, sloNanos, OverloadMetrics.NONE));
      gates[index] = g;
    }
    g.offer(t, now);
  }

  /** {@code path} as the server's routes see it: without its context path, if it has one. */
  private String withinContext(String path) {
    String c = contextPath;
    if (c.isEmpty() || !path.startsWith(c)) {
      return path;
    }
    if (path.length() == c.length()) {
      return "/";
    }
    return path.charAt(c.length()) == '/' ? path.substring(c.length()) : path;
  }

  /** Whether a gate of this session, as it is now, released {@code t}. */
  private boolean isCurrentLocked(Ticket t) {
    return t.gate != null && t.gateIndex < gates.length && gates[t.gateIndex] == t.gate;
  }

  /** Takes every queued request out of every gate, into {@code into}. */
  private void expireAllLocked(long now, List<Ticket> into) {
    for (ClientGate<Ticket> g : gates) {
      if (g != null) {
        g.expire(now + FAR_FUTURE, into::add);
      }
    }
  }

  @SuppressWarnings("unchecked")
  private static ClientGate<Ticket>[] newGates(int n) {
    return (ClientGate<Ticket>[]) new ClientGate<?>[n];
  }

  /** Expires, releases what may go, re-arms the wake-up. */
  private void drainLocked(long now) {
    if (passThrough) {
      return;
    }
    long at = 0;
    boolean due = false;
    for (int i = 0; i < gates.length; i++) {
      ClientGate<Ticket> gate = gates[i];
      if (gate == null) {
        continue;
      }
      gate.expire(now, failing::add);
      if (control != CONTROL_OPENING) {
        Ticket next;
        while ((next = gate.poll(now, spareFields.reset())) != null) {
          next.header = spareFields; // the ticket keeps them: a new spare for the next one
          next.gate = gate;
          next.gateIndex = i;
          releasing.add(next);
          spareFields = new RequestMetadata();
        }
      }
      int demand = gate.takeDemandReport();
      if (demand >= 0 && control == CONTROL_READY) {
        demanding.add(new Demand(creditsUri, sessionId, streamKey, i, demand));
      }
      if (gate.queued() > 0) {
        long dueAt = gate.nextWakeupNanos();
        if (!due || dueAt - at < 0) {
          at = dueAt;
          due = true;
        }
      }
    }
    if (!closed && due) {
      if (wakeup == null || at - wakeupAt < 0) {
        if (wakeup != null) {
          wakeup.cancel();
        }
        wakeupAt = at;
        wakeup = scheduler.schedule(wakeupTask, Math.max(at - now, MIN_WAKEUP_NANOS));
      }
    }
  }

  // ---- outside the lock ----

  /**
   * Completes the futures the last events decided on; {@code now} is the event's time, which a
   * released request takes as its sending time.
   */
  private void settle(long now) {
    List<Ticket> go;
    List<Ticket> fail;
    List<Demand> demands;
    boolean wasClosed;
    lock.lock();
    try {
      if (releasing.isEmpty() && failing.isEmpty() && demanding.isEmpty()) {
        return;
      }
      demands = take(demanding);
      if (demands == demanding) {
        demanding = new ArrayList<>();
      }
      go = take(releasing);
      if (go == releasing) {
        releasing = new ArrayList<>();
      }
      fail = take(failing);
      if (fail == failing) {
        failing = new ArrayList<>();
      }
      for (Ticket t : fail) {
        endLocked(t, now); // failed: the caller reports nothing more
      }
      wasClosed = closed;
    } finally {
      lock.unlock();
    }
    for (Ticket t : fail) {
      t.released.completeExceptionally(new SpillwayRejectedException(
          wasClosed ? Status.FAILED : Status.EXPIRED, 0));
    }
    for (Demand d : demands) {
      streams.demand(d.at, d.sessionId, d.streamKey, d.gate, d.demand);
    }
    for (Ticket t : go) {
      t.sentAt = now;
      if (!t.released.complete(t)) {
        ended(t, false); // the caller gave up while it waited: it is not sent
      }
    }
  }

  /** {@code list} itself if it holds anything (the caller replaces it), else an empty list. */
  private static <T> List<T> take(List<T> list) {
    return list.isEmpty() ? List.of() : list;
  }

  /**
   * A demand report of the session's gate with index {@code gate}, to send to {@code at} with
   * the key of the session's stream.
   */
  private record Demand(URI at, long sessionId, String streamKey, int gate, int demand) { }

  /**
   * Opens the credit stream outside the lock: the handle is the session's before the stream is
   * asked for, so an event that arrives at once (even on this thread, from a failure the client
   * reports before {@code open} returns) is matched against it and not lost.
   */
  private void openStream() {
    StreamHandle handle = new StreamHandle();
    long id;
    URI at;
    lock.lock();
    try {
      if (closed || control != CONTROL_OPENING) {
        return;
      }
      stream = handle;
      id = sessionId;
      at = creditsUri;
    } finally {
      lock.unlock();
    }
    handle.opened(streams.open(at, id, handle));
  }

  /** One credit stream of the session: its events, and the way to close it once it is open. */
  private final class StreamHandle implements CreditStreams.Listener, Cancellable {
    private Cancellable underlying; // guarded by this
    private boolean cancelled; // guarded by this

    synchronized void opened(Cancellable c) {
      underlying = c;
      if (cancelled) {
        c.cancel();
      }
    }

    @Override
    public void cancel() {
      Cancellable c;
      synchronized (this) {
        cancelled = true;
        c = underlying;
      }
      if (c != null) {
        c.cancel();
      }
    }

    @Override
    public void opened(String routes, String streamKey) {
      onStreamOpen(this, routes, streamKey);
    }

    @Override
    public void credit(int gate, int delta) {
      onCredit(this, gate, delta, 0, 0);
    }

    @Override
    public void credit(int gate, int delta, int window, long seq) {
      onCredit(this, gate, delta, window, seq);
    }

    @Override
    public void closed(boolean notSpillway, String why) {
      onStreamClosed(this, notSpillway, why);
    }
  }

  /**
   * One request's passage through the session: it may go once {@link #released()} completes,
   * carrying {@link #writeHeaders}; then its end is reported once. {@link
   * SpillwayHttpSession#abandon} while it waits withdraws the request from the queue; cancelling
   * {@link #released()} alone keeps it from being sent, but it stays queued until its gate
   * reaches it.
   */
  public static final class Ticket {
    /** Replaced under the lock as a gate releases it; empty when released passing through. */
    RequestMetadata header = NO_FIELDS;
    /** The gate that released it, {@code null} when released passing through. */
    ClientGate<Ticket> gate;
    /** That gate's index in the session's gates. */
    int gateIndex;
    /** The session whose gates and count of unfinished requests hold it. */
    final SpillwayHttpSession session;
    /** The request's path, which picks its gate. */
    final String path;
    final CompletableFuture<Ticket> released = new CompletableFuture<>();
    volatile long sentAt;
    private boolean ended; // guarded by the session's lock

    /** The fields of a request released passing through: none. Never written. */
    private static final RequestMetadata NO_FIELDS = new RequestMetadata();

    private Ticket(SpillwayHttpSession session, String path) {
      this.session = session;
      this.path = path;
    }

    /** Completes when the request may be sent; fails if it expired or the session closed. */
    public CompletableFuture<Ticket> released() {
      return released;
    }

    /** Writes the overload fields the gate gave the request. */
    public void writeHeaders(BiConsumer<String, String> header) {
      SpillwayHttpHeaders.writeRequest(this.header, header);
    }
  }

  /**
   * Opens servers' credit streams. The default, {@link #jdk()}, speaks HTTP/1.1 through the JDK's
   * {@code HttpClient}; tests and other transports supply their own.
   */
  public interface CreditStreams {

    /** What a stream reports, in order: {@code opened}, then credits, then {@code closed}. */
    interface Listener {
      /**
       * The server answered the stream.
       *
       * @param routes the answer's {@code Spillway-Routes}, {@code null} if it had none
       * @param streamKey the answer's {@value SpillwayHttpHeaders#STREAM_KEY}, which the
       *     session's demand reports and deregistration carry back; {@code null} if it had none
       */
      void opened(String routes, String streamKey);

      /** An explicit credit of {@code delta} from the server gate with index {@code gate}. */
      void credit(int gate, int delta);

      /**
       * A stamped explicit credit: as {@link #credit(int, int)}, with the session's window after
       * it and its stamp ({@value SpillwayHttpHeaders#CREDIT_WINDOW}); the default drops the
       * stamp.
       */
      default void credit(int gate, int delta, int window, long seq) {
        credit(gate, delta);
      }

      /** @param notSpillway the server has no credit stream at all */
      void closed(boolean notSpillway, String why);
    }

    /**
     * Opens {@code GET} {@code stream} for {@code sessionId}; cancelling the returned handle
     * closes it. Must not block; may report to {@code listener} from any thread, before it
     * returns too.
     *
     * @param stream the credit stream's URI: the server's origin and {@code /spillway/credits},
     *     or the path the server's answers name ({@link SpillwayHttpHeaders#CREDITS})
     */
    Cancellable open(URI stream, long sessionId, Listener listener);

    /**
     * Sends {@code DELETE} {@code stream} for {@code sessionId}; fire and forget.
     *
     * @param streamKey the key its stream's answer carried ({@link Listener#opened}), sent as
     *     {@value SpillwayHttpHeaders#STREAM_KEY}; {@code null} if it has none open
     */
    void deregister(URI stream, long sessionId, String streamKey);

    /**
     * Sends {@code POST} {@code stream} for {@code sessionId}: a demand report of {@code demand}
     * queued requests for the server gate with index {@code gate} ({@code Spillway-Demand},
     * {@code Spillway-Gate}), which no request could carry; fire and forget. The server answers on
     * the session's stream, if at all. Must not block.
     *
     * @param streamKey the key its stream's answer carried, as for {@link #deregister}
     */
    void demand(URI stream, long sessionId, String streamKey, int gate, int demand);

    /** The JDK {@code HttpClient}'s, on a client shared by every session of the process. */
    static CreditStreams jdk() {
      return JdkCreditStreams.SHARED;
    }
  }

}
