package io.spillway.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.spillway.api.ResponseMetadata;
import io.spillway.spring.internal.HttpCreditStreams;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A session's credit stream belongs to the client that opened it, over real sockets: a {@code
 * DELETE}, {@code POST} or {@code GET} of {@code /spillway/credits} that names the session but
 * does not carry its stream's key ({@link SpillwayHttpHeaders#STREAM_KEY}) is refused with a
 * {@code 403} and changes nothing, so no other client can end the stream, take its credits or
 * return them to the pool; the owner's, carrying the key, are taken. Shared by the Spring MVC and
 * the WebFlux tests.
 */
final class StreamOwnership {

  private static final HttpClient HTTP = HttpClient.newBuilder()
      .version(HttpClient.Version.HTTP_1_1).build();
  /** Marks the end of a stream's lines. */
  private static final String ENDED = "(ended)";

  private StreamOwnership() { }

  /** @param path a path the server's default gate decides on, answered with a {@code 200} */
  static void aForgedRequestCannotActForAnotherSessionsStream(int port, String path)
      throws Exception {
    long session = io.spillway.api.internal.SessionIds.next();
    String id = Long.toString(session);
    URI credits = LocalHttp.uri(port, HttpCreditStreams.PATH);
    HttpResponse<Stream<String>> owner = HTTP.send(HttpRequest.newBuilder(credits)
        .header(SpillwayHttpHeaders.SESSION, id).GET().build(),
        HttpResponse.BodyHandlers.ofLines());
    assertThat(owner.statusCode()).isEqualTo(200);
    BlockingQueue<String> lines = new LinkedBlockingQueue<>();
    Thread.ofVirtual().start(() -> {
      try {
        owner.body().forEach(lines::add);
      } finally {
        lines.add(ENDED);
      }
    });
    // the session registers with a request, as its first one does
    HttpResponse<String> registering = LocalHttp.send(HttpRequest.newBuilder(
        LocalHttp.uri(port, path)).header(SpillwayHttpHeaders.SESSION, id)
        .header(SpillwayHttpHeaders.FLAGS, "1").build());
    assertThat(registering.statusCode()).isEqualTo(200);
    ResponseMetadata answer = new ResponseMetadata();
    assertThat(SpillwayHttpHeaders.readResponse(
        name -> registering.headers().firstValue(name).orElse(null), answer)).isNull();

    // another client knows the session's id, not its stream's key
    for (String forged : new String[] {null, "0123456789abcdef0123456789abcdef"}) {
      assertThat(send(credits, id, forged, "DELETE").statusCode())
          .as("DELETE with key %s", forged).isEqualTo(403);
      assertThat(send(credits, id, forged, "POST").statusCode())
          .as("POST with key %s", forged).isEqualTo(403);
      assertThat(send(credits, id, forged, "GET").statusCode())
          .as("GET with key %s", forged).isEqualTo(403);
    }

    // the owner's stream is still open and the session's, and the gate still has the session:
    // the owner's demand report is answered on that stream with the session's window restated
    String key = owner.headers().firstValue(SpillwayHttpHeaders.STREAM_KEY).orElse(null);
    assertThat(key).as("the stream's key").matches("[0-9a-f]{32}");
    assertThat(send(credits, id, key, "POST").statusCode()).isEqualTo(204);
    String restated = nextWindow(lines);
    assertThat(restated).as("a restatement on the owner's stream").isNotNull();
    ResponseMetadata window = new ResponseMetadata();
    assertThat(SpillwayHttpHeaders.readCreditWindow(restated.substring(7).trim(), window))
        .isNull();
    assertThat(window.creditWindow()).isEqualTo(answer.creditWindow());

    // the owner's DELETE ends it
    assertThat(send(credits, id, key, "DELETE").statusCode()).isEqualTo(204);
    String line;
    do {
      line = lines.poll(30, TimeUnit.SECONDS);
      assertThat(line).as("the owner's stream ends").isNotNull();
    } while (!line.equals(ENDED));
    // with no stream open, a DELETE needs no key: a client whose stream ended cleans up
    assertThat(send(credits, id, null, "DELETE").statusCode()).isEqualTo(204);
  }

  /** The next {@code window:} line of the stream, or {@code null} if it ends first. */
  private static String nextWindow(BlockingQueue<String> lines) throws InterruptedException {
    while (true) {
      String line = lines.poll(30, TimeUnit.SECONDS);
      if (line == null || line.equals(ENDED)) {
        return null;
      }
      if (line.startsWith("window:")) {
        return line;
      }
    }
  }

  /**
   * Sends {@code method} of the credit stream for session {@code id}, with stream key {@code
   * key} unless it is {@code null}; a {@code POST} reports a demand of 1 for gate 0.
   */
  private static HttpResponse<String> send(URI credits, String id, String key, String method)
      throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(credits)
        .header(SpillwayHttpHeaders.SESSION, id)
        .method(method, HttpRequest.BodyPublishers.noBody());
    if (method.equals("POST")) {
      b.header(SpillwayHttpHeaders.DEMAND, "1");
    }
    if (key != null) {
      b.header(SpillwayHttpHeaders.STREAM_KEY, key);
    }
    // bounded: a GET taken as the owner's would be a stream that does not end
    return LocalHttp.sendAsync(b.build()).get(30, TimeUnit.SECONDS);
  }
}
