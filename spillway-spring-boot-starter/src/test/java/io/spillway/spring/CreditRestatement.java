package io.spillway.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.spillway.api.Cancellable;
import io.spillway.api.ResponseMetadata;
import io.spillway.spring.internal.HttpCreditStreams;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A demand report over real sockets, as the starter's client sends it ({@link
 * SpillwayHttpSession.CreditStreams#jdk()}): a session's {@code POST /spillway/credits} reaches its
 * server gate, which restates the session's window on the session's stream as a stamped explicit
 * credit with no change, the answer a client whose window is in doubt asks for (ResponseMetadata's
 * class comment); the demand path refuses what it cannot take, a report without the stream's key
 * among it; and the client's deregistration, which carries the key, ends the stream. Shared by
 * the Spring MVC and the WebFlux tests.
 */
final class CreditRestatement {

  private CreditRestatement() { }

  /** @param path a path the server's default gate decides on, answered with a {@code 200} */
  static void aDemandReportRestatesTheWindowOnTheStream(int port, String path) throws Exception {
    long session = io.spillway.api.internal.SessionIds.next();
    URI credits = LocalHttp.uri(port, HttpCreditStreams.PATH);
    SpillwayHttpSession.CreditStreams jdk = SpillwayHttpSession.CreditStreams.jdk();
    CompletableFuture<String> opened = new CompletableFuture<>();
    CompletableFuture<String> ended = new CompletableFuture<>();
    BlockingQueue<long[]> stamped = new LinkedBlockingQueue<>();
    BlockingQueue<long[]> unstamped = new LinkedBlockingQueue<>();
    Cancellable stream = jdk.open(credits, session, new SpillwayHttpSession.CreditStreams.Listener() {
      @Override
      public void opened(String routes, String streamKey) {
        opened.complete(streamKey);
      }

      @Override
      public void credit(int gate, int delta) {
        unstamped.add(new long[] {gate, delta});
      }

      @Override
      public void credit(int gate, int delta, int window, long seq) {
        stamped.add(new long[] {gate, delta, window, seq});
      }

      @Override
      public void closed(boolean notSpillway, String why) {
        opened.completeExceptionally(new IllegalStateException(why));
        ended.complete(why);
      }
    });
    String key = null;
    try {
      key = opened.get(30, TimeUnit.SECONDS);
      assertThat(key).as("the stream's key").isNotNull();
      // no demand is taken for a session the gate has not registered: nothing to restate yet
      HttpResponse<String> registering = LocalHttp.send(HttpRequest.newBuilder(
          LocalHttp.uri(port, path)).header(SpillwayHttpHeaders.SESSION, Long.toString(session))
          .header(SpillwayHttpHeaders.FLAGS, "1").build());
      assertThat(registering.statusCode()).isEqualTo(200);
      ResponseMetadata answer = new ResponseMetadata();
      assertThat(SpillwayHttpHeaders.readResponse(
          name -> registering.headers().firstValue(name).orElse(null), answer)).isNull();
      assertThat(answer.creditSeq()).as("the answer is stamped").isNotZero();

      jdk.demand(credits, session, key, 0, 1);
      long[] restated = stamped.poll(30, TimeUnit.SECONDS);
      assertThat(restated).as("a restatement on the stream").isNotNull();
      assertThat(restated[0]).as("gate").isZero();
      assertThat(restated[1]).as("delta").isZero();
      assertThat(restated[2]).as("window").isEqualTo(answer.creditWindow());
      assertThat(ResponseMetadata.isNewerCredit(restated[3], answer.creditSeq())).isTrue();
      assertThat(unstamped).isEmpty();

      // what the demand path refuses
      String id = Long.toString(session);
      assertThat(post(port, id, "x", null, key)).as("malformed demand").isEqualTo(400);
      assertThat(post(port, id, null, null, key)).as("no demand").isEqualTo(400);
      assertThat(post(port, id, "1", "7", key)).as("no such gate").isEqualTo(400);
      assertThat(post(port, Long.toString(session + 1 & Long.MAX_VALUE), "1", null, null))
          .as("a session without a stream here").isEqualTo(409);
      assertThat(post(port, id, "1", null, null)).as("without the stream's key").isEqualTo(403);
      assertThat(post(port, id, "1", null, key)).isEqualTo(204);

      // the client's deregistration, with the key, ends the stream at the server
      jdk.deregister(credits, session, key);
      assertThat(ended.get(30, TimeUnit.SECONDS)).as("the stream ended").isNotNull();
    } finally {
      stream.cancel();
      jdk.deregister(credits, session, key);
    }
  }

  private static int post(int port, String session, String demand, String gate, String key)
      throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(LocalHttp.uri(port, HttpCreditStreams.PATH))
        .header(SpillwayHttpHeaders.SESSION, session).POST(HttpRequest.BodyPublishers.noBody());
    if (key != null) {
      b.header(SpillwayHttpHeaders.STREAM_KEY, key);
    }
    if (demand != null) {
      b.header(SpillwayHttpHeaders.DEMAND, demand);
    }
    if (gate != null) {
      b.header(SpillwayHttpHeaders.GATE, gate);
    }
    return LocalHttp.send(b.build()).statusCode();
  }
}
