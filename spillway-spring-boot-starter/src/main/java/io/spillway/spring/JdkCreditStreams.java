package io.spillway.spring;

import io.spillway.api.Cancellable;
import io.spillway.api.ResponseMetadata;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodySubscriber;
import java.net.http.HttpResponse.BodySubscribers;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;

/**
 * Credit streams over the JDK's {@code HttpClient} (HTTP/1.1, one connection per open stream):
 * {@code GET /spillway/credits} (or the path the server names) read as server-sent events, one
 * event per credit or per several merged (a {@code data:} line, and a {@code window:} line when
 * it is stamped), its answer's {@code Spillway-Routes} and {@code Spillway-Stream-Key} handed to
 * the listener as it opens; demand reports and deregistrations as {@code POST} and {@code DELETE}
 * of the same path, carrying that key back (the server takes them only with it while the stream
 * is open). Any status but {@code 200} ends the stream at once; {@code 404}, {@code 405} and a
 * {@code 200} that is not {@code text/event-stream} (a catch-all handler) mean the server has
 * none. Thread-safe.
 */
final class JdkCreditStreams implements SpillwayHttpSession.CreditStreams {

  static final JdkCreditStreams SHARED = new JdkCreditStreams(HttpClient.newBuilder()
      .version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(5)).build());

  private final HttpClient client;

  JdkCreditStreams(HttpClient client) {
    this.client = client;
  }

  @Override
  public Cancellable open(URI stream, long sessionId, Listener listener) {
    HttpRequest request;
    try {
      request = HttpRequest.newBuilder(stream).GET()
          .header(SpillwayHttpHeaders.SESSION, Long.toString(sessionId))
          .header("Accept", "text/event-stream").build();
    } catch (IllegalArgumentException unsupported) {
      // a URI the application's client sends to but this one refuses (a host name with '_'):
      // this client will never reach the stream, so for the session there is none
      listener.closed(true, "the JDK's HttpClient cannot send to " + stream + " ("
          + unsupported.getMessage() + ")");
      return () -> { };
    }
    Events events = new Events(listener);
    CompletableFuture<HttpResponse<Void>> exchange = client.sendAsync(request, info -> {
      if (info.statusCode() != 200 || !info.headers().firstValue("Content-Type")
          .orElse("").startsWith("text/event-stream")) {
        return BodySubscribers.discarding();
      }
      events.opened = true;
      listener.opened(info.headers().firstValue(SpillwayHttpHeaders.ROUTES).orElse(null),
          info.headers().firstValue(SpillwayHttpHeaders.STREAM_KEY).orElse(null));
      return events.lines;
    });
    exchange.whenComplete((response, failure) -> {
      if (failure != null) {
        listener.closed(false, failure.toString());
      } else {
        int status = response.statusCode();
        // a 200 that is not a stream of events: a catch-all handler, not Spillway's
        boolean none = status == 404 || status == 405 || (status == 200 && !events.opened);
        listener.closed(none, "HTTP " + status + (status == 200 && !events.opened
            ? " without text/event-stream" : ""));
      }
    });
    return () -> {
      events.cancel();
      exchange.cancel(true);
    };
  }

  @Override
  public void deregister(URI stream, long sessionId, String streamKey) {
    HttpRequest request;
    try {
      request = withKey(HttpRequest.newBuilder(stream).DELETE()
          .header(SpillwayHttpHeaders.SESSION, Long.toString(sessionId)), streamKey).build();
    } catch (IllegalArgumentException unsupported) {
      return; // never opened either (see open)
    }
    client.sendAsync(request, HttpResponse.BodyHandlers.discarding());
  }

  @Override
  public void demand(URI stream, long sessionId, String streamKey, int gate, int demand) {
    HttpRequest request;
    try {
      HttpRequest.Builder b = withKey(HttpRequest.newBuilder(stream)
          .POST(HttpRequest.BodyPublishers.noBody())
          .header(SpillwayHttpHeaders.SESSION, Long.toString(sessionId))
          .header(SpillwayHttpHeaders.DEMAND, Integer.toString(demand)), streamKey);
      if (gate != 0) {
        b.header(SpillwayHttpHeaders.GATE, Integer.toString(gate));
      }
      request = b.build();
    } catch (IllegalArgumentException unsupported) {
      return; // never opened either (see open)
    }
    client.sendAsync(request, HttpResponse.BodyHandlers.discarding());
  }

  /** {@code request} with the stream's key, if there is one. */
  private static HttpRequest.Builder withKey(HttpRequest.Builder request, String streamKey) {
    return streamKey == null ? request : request.header(SpillwayHttpHeaders.STREAM_KEY, streamKey);
  }

  /**
   * The body of an open stream, line by line; an event (lines up to a blank one) with a {@code
   * data:} line is a credit, stamped by its {@code window:} line if it has a well-formed one.
   */
  private static final class Events implements Flow.Subscriber<String> {
    private final Listener listener;
    private final BodySubscriber<Void> lines;
    private volatile Flow.Subscription subscription;
    private volatile boolean cancelled;
    volatile boolean opened;

    Events(Listener listener) {
      this.listener = listener;
      this.lines = BodySubscribers.fromLineSubscriber(this);
    }

    void cancel() {
      cancelled = true;
      Flow.Subscription s = subscription;
      if (s != null) {
        s.cancel();
      }
    }

    @Override
    public void onSubscribe(Flow.Subscription s) {
      subscription = s;
      if (cancelled) {
        s.cancel();
      } else {
        s.request(Long.MAX_VALUE);
      }
    }

    /** The current event's {@code data:} and {@code window:} values; read by one thread. */
    private String data;
    private String window;

    /**
     * Collects an event's fields; the blank line that ends it delivers it. {@code data: <delta>}
     * is gate 0's credit, {@code data: <delta> <gate>} another gate's; {@code window: <window>/<stamp>}
     * stamps it.
     */
    @Override
    public void onNext(String line) {
      if (line.isEmpty()) {
        String d = data;
        String w = window;
        data = null;
        window = null;
        if (d != null) {
          deliver(d, w);
        }
      } else if (line.startsWith("data:")) {
        data = line.substring(5).trim();
      } else if (line.startsWith("window:")) {
        window = line.substring(7);
      }
    }

    private void deliver(String data, String window) {
      int space = data.indexOf(' ');
      int gate;
      int delta;
      try {
        if (space < 0) {
          gate = 0;
          delta = Integer.parseInt(data);
        } else {
          gate = Integer.parseInt(data.substring(space + 1).trim());
          delta = Integer.parseInt(data.substring(0, space));
        }
      } catch (NumberFormatException e) {
        return; // not a credit: ignored, as a malformed header is
      }
      ResponseMetadata stamp = new ResponseMetadata();
      if (window != null && SpillwayHttpHeaders.readCreditWindow(window, stamp) == null) {
        listener.credit(gate, delta, stamp.creditWindow(), stamp.creditSeq());
      } else {
        listener.credit(gate, delta); // unstamped, or a malformed stamp: the delta alone
      }
    }

    @Override
    public void onError(Throwable t) { }

    @Override
    public void onComplete() { }
  }
}
