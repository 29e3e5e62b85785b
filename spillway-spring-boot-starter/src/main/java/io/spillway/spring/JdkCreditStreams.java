package io.spillway.spring;

import io.spillway.api.Cancellable;
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
 * {@code data:} line per credit, its answer's {@code Spillway-Routes} handed to the listener as it
 * opens. Any status but {@code 200} ends the stream at once; {@code 404}, {@code 405} and a
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
      listener.opened(info.headers().firstValue(SpillwayHttpHeaders.ROUTES).orElse(null));
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
  public void deregister(URI stream, long sessionId) {
    HttpRequest request;
    try {
      request = HttpRequest.newBuilder(stream).DELETE()
          .header(SpillwayHttpHeaders.SESSION, Long.toString(sessionId)).build();
    } catch (IllegalArgumentException unsupported) {
      return; // never opened either (see open)
    }
    client.sendAsync(request, HttpResponse.BodyHandlers.discarding());
  }

  /** The body of an open stream, line by line; a {@code data:} line is a credit. */
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

    /** {@code data: <delta>} is gate 0's credit, {@code data: <delta> <gate>} another gate's. */
    @Override
    public void onNext(String line) {
      if (line.startsWith("data:")) {
        String data = line.substring(5).trim();
        int space = data.indexOf(' ');
        try {
          if (space < 0) {
            listener.credit(0, Integer.parseInt(data));
          } else {
            listener.credit(Integer.parseInt(data.substring(space + 1).trim()),
                Integer.parseInt(data.substring(0, space)));
          }
        } catch (NumberFormatException e) {
          // not a credit: ignored, as a malformed header is
        }
      }
    }

    @Override
    public void onError(Throwable t) { }

    @Override
    public void onComplete() { }
  }
}
