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
 * class comment); and the demand path refuses what it cannot take. Shared by the Spring MVC and
 * the WebFlux tests.
 */
final class CreditRestatement {

  private CreditRestatement() { }

  /** @param path a path the server's default gate decides on, answered with a {@code 200} */
  static void aDemandReportRestatesTheWindowOnTheStream(int port, String path) throws Exception {
    long session = io.spillway.api.internal.SessionIds.next();
    URI credits = LocalHttp.uri(port, HttpCreditStreams.PATH);
    SpillwayHttpSession.CreditStreams jdk = SpillwayHttpSession.CreditStreams.jdk();
    CompletableFuture<String> opened = new CompletableFuture<>();
    BlockingQueue<long[]> stamped = new LinkedBlockingQueue<>();
    BlockingQueue<long[]> unstamped = new LinkedBlockingQueue<>();
    Cancellable stream = jdk.open(credits, session, new SpillwayHttpSession.CreditStreams.Listener() {
      @Override
      public void opened(String routes) {
        opened.complete(routes == null ? "" : routes);
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
      }
    });
    try {
      opened.get(30, TimeUnit.SECONDS);
      // no demand is taken for a session the gate has not registered: nothing to restate yet
      HttpResponse<String> registering = LocalHttp.send(HttpRequest.newBuilder(
          LocalHttp.uri(port, path)).header(SpillwayHttpHeaders.SESSION, Long.toString(session))
          .header(SpillwayHttpHeaders.FLAGS, "1").build());
      assertThat(registering.statusCode()).isEqualTo(200);
      ResponseMetadata answer = new ResponseMetadata();
      assertThat(SpillwayHttpHeaders.readResponse(
          name -> registering.headers().firstValue(name).orElse(null), answer)).isNull();
      assertThat(answer.creditSeq()).as("the answer is stamped").isNotZero();

      jdk.demand(credits, session, 0, 1);
      long[] restated = stamped.poll(30, TimeUnit.SECONDS);
      assertThat(restated).as("a restatement on the stream").isNotNull();
      assertThat(restated[0]).as("gate").isZero();
      assertThat(restated[1]).as("delta").isZero();
      assertThat(restated[2]).as("window").isEqualTo(answer.creditWindow());
      assertThat(ResponseMetadata.isNewerCredit(restated[3], answer.creditSeq())).isTrue();
      assertThat(unstamped).isEmpty();

      // what the demand path refuses
      assertThat(post(port, Long.toString(session), "x", null)).as("malformed demand")
          .isEqualTo(400);
      assertThat(post(port, Long.toString(session), null, null)).as("no demand").isEqualTo(400);
      assertThat(post(port, Long.toString(session), "1", "7")).as("no such gate").isEqualTo(400);
      assertThat(post(port, Long.toString(session + 1 & Long.MAX_VALUE), "1", null))
          .as("a session without a stream here").isEqualTo(409);
      assertThat(post(port, Long.toString(session), "1", null)).isEqualTo(204);
    } finally {
      stream.cancel();
      jdk.deregister(credits, session);
    }
  }

  private static int post(int port, String session, String demand, String gate)
      throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(LocalHttp.uri(port, HttpCreditStreams.PATH))
        .header(SpillwayHttpHeaders.SESSION, session).POST(HttpRequest.BodyPublishers.noBody());
    if (demand != null) {
      b.header(SpillwayHttpHeaders.DEMAND, demand);
    }
    if (gate != null) {
      b.header(SpillwayHttpHeaders.GATE, gate);
    }
    return LocalHttp.send(b.build()).statusCode();
  }
}
