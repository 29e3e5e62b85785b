package io.spillway.spring.internal;

import io.spillway.spring.SpillwayHttpGate;
import io.spillway.spring.SpillwayHttpHeaders;
import jakarta.servlet.AsyncContext;
import jakarta.servlet.AsyncEvent;
import jakarta.servlet.AsyncListener;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.io.OutputStream;

/**
 * A session's credit stream ({@link HttpCreditStreams}) on a servlet container: an asynchronous
 * request without a timeout, written by a virtual thread of its own, so that a gate's control
 * loop only adds a credit to what waits to be written ({@link #send} never blocks) and a slow
 * client holds up no one but itself. What waits is merged per gate ({@link PendingCredits}): a
 * client that does not read leaves its writer blocked on the socket, and the credits sent
 * meanwhile cost one event per gate, not one each. When the stream ends, by the client, an
 * error, or a later stream of the same session, the thread completes the request; a stream that
 * is still the session's then deregisters it.
 *
 * <p>Thread-safe.
 */
final class ServletCreditStream implements HttpCreditStreams.Stream, AsyncListener, Runnable {

  private static final System.Logger LOG = System.getLogger(ServletCreditStream.class.getName());
  private static final String NOT_THE_STREAMS_KEY = "the session's credit stream is open here "
      + "and this request does not carry its Spillway-Stream-Key";

  private final long sessionId;
  private final Runnable complete;
  private final OutputStream out;
  private final HttpCreditStreams streams;
  private final SpillwayHttpGate gate;
  private final PendingCredits pending = new PendingCredits(); // guarded by this
  private boolean ended; // guarded by this

  /**
   * @param out the response's body
   * @param complete completes the asynchronous request
   */
  ServletCreditStream(long sessionId, OutputStream out, Runnable complete,
      HttpCreditStreams streams, SpillwayHttpGate gate) {
    this.sessionId = sessionId;
    this.complete = complete;
    this.out = out;
    this.streams = streams;
    this.gate = gate;
  }

  /**
   * Serves {@value HttpCreditStreams#PATH}: {@code GET} opens the session's stream, {@code POST}
   * reports its demand ({@link HttpCreditStreams#demand}), {@code DELETE} deregisters the session
   * ({@link HttpCreditStreams#deregister}), each refused without the key of the session's open
   * stream; without a well-formed {@code Spillway-Session} it is a {@code 400}.
   */
  static void serve(HttpServletRequest request, HttpServletResponse response,
      HttpCreditStreams streams, SpillwayHttpGate gate) throws IOException {
    long session = HttpCreditStreams.sessionOf(request.getHeader(SpillwayHttpHeaders.SESSION));
    if (session <= 0) {
      response.sendError(HttpServletResponse.SC_BAD_REQUEST,
          "a credit stream needs a positive Spillway-Session");
      return;
    }
    switch (request.getMethod()) {
      case "DELETE" -> {
        int status = streams.deregister(session,
            request.getHeader(SpillwayHttpHeaders.STREAM_KEY), gate);
        if (status == HttpServletResponse.SC_NO_CONTENT) {
          response.setStatus(status);
        } else {
          response.sendError(status, NOT_THE_STREAMS_KEY);
        }
      }
      case "GET" -> open(session, request, response, streams, gate);
      case "POST" -> {
        int status = streams.demand(session, request.getHeader(SpillwayHttpHeaders.DEMAND),
            request.getHeader(SpillwayHttpHeaders.GATE),
            request.getHeader(SpillwayHttpHeaders.STREAM_KEY), gate);
        if (status == HttpServletResponse.SC_NO_CONTENT) {
          response.setStatus(status);
        } else {
          response.sendError(status, switch (status) {
            case HttpServletResponse.SC_CONFLICT -> "the session has no credit stream here";
            case HttpServletResponse.SC_FORBIDDEN -> NOT_THE_STREAMS_KEY;
            default -> "a demand report needs a Spillway-Demand (and Spillway-Gate) of a gate "
                + "with credits";
          });
        }
      }
      default -> {
        response.setHeader("Allow", "GET, POST, DELETE");
        response.sendError(HttpServletResponse.SC_METHOD_NOT_ALLOWED);
      }
    }
  }

  private static void open(long session, HttpServletRequest request, HttpServletResponse response,
      HttpCreditStreams streams, SpillwayHttpGate gate) throws IOException {
    AsyncContext async = request.startAsync();
    async.setTimeout(0);
    ServletCreditStream stream = new ServletCreditStream(session, response.getOutputStream(),
        async::complete, streams, gate);
    String key = HttpCreditStreams.newKey();
    // nothing is written before the writer starts, below: the headers can follow the open
    int status = streams.open(session, stream, key,
        request.getHeader(SpillwayHttpHeaders.STREAM_KEY));
    if (status != HttpServletResponse.SC_OK) {
      response.setStatus(status);
      async.complete();
      return;
    }
    response.setStatus(HttpServletResponse.SC_OK);
    response.setContentType("text/event-stream");
    response.setHeader("Cache-Control", "no-store");
    response.setHeader(SpillwayHttpHeaders.ROUTES, gate.routes());
    response.setHeader(SpillwayHttpHeaders.STREAM_KEY, key);
    async.addListener(stream);
    Thread.ofVirtual().name("spillway-credits-" + session).start(stream);
  }

  @Override
  public synchronized void send(int endpoint, int creditDelta, int window, long seq) {
    if (!ended) {
      pending.add(endpoint, creditDelta, window, seq);
      notifyAll();
    }
  }

  /** Events waiting to be written: at most one per gate. */
  synchronized int pendingEvents() {
    return pending.gates();
  }

  /** Ends the stream once what waits is written. */
  @Override
  public synchronized void end() {
    ended = true;
    notifyAll();
  }

  @Override
  public void run() {
    try {
      out.write(HttpCreditStreams.SUBSCRIBED);
      out.flush();
      while (true) {
        byte[] events;
        synchronized (this) {
          while (pending.isEmpty() && !ended) {
            wait();
          }
          events = pending.take();
        }
        if (events == null) {
          break; // ended, and all written
        }
        out.write(events);
        out.flush();
      }
    } catch (IOException | RuntimeException e) {
      LOG.log(System.Logger.Level.DEBUG,
          "credit stream of session {0} ended: {1}", sessionId, e.toString());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      synchronized (this) {
        ended = true; // a credit sent from now on is dropped, not kept for no writer
      }
      try {
        complete.run();
      } catch (IllegalStateException alreadyOver) {
        // the container ended the request first (the client went away)
      }
      if (streams.closed(sessionId, this)) {
        gate.deregister(sessionId);
      }
    }
  }

  @Override
  public void onComplete(AsyncEvent event) {
    end();
  }

  @Override
  public void onTimeout(AsyncEvent event) {
    end();
  }

  @Override
  public void onError(AsyncEvent event) {
    end();
  }

  @Override
  public void onStartAsync(AsyncEvent event) { }
}
