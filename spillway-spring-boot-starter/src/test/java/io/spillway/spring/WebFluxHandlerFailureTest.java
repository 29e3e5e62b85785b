package io.spillway.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.spillway.api.Outcome;
import io.spillway.api.Status;
import io.spillway.spring.reactive.WebFluxTestApp;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/** WebFlux on Reactor Netty: how a failing handler's permit ends ({@link HandlerFailures}). */
@SpringBootTest(classes = WebFluxTestApp.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = "spring.main.web-application-type=reactive")
class WebFluxHandlerFailureTest {

  @LocalServerPort
  int port;
  @Autowired
  SpillwayHttpGate gate;

  @Test
  void aHandlerThatFailsBeforeItsResponseWentFails() throws Exception {
    assertEquals(Outcome.FAILED, HandlerFailures.outcomeOf(gate, port, "/write-then-fail", false));
    assertEquals(Outcome.FAILED, HandlerFailures.outcomeOf(gate, port, "/write-then-fail", true));
  }

  /**
   * The error answer (Boot's 500) is the session's answer to the request: the permit's credit
   * delta rides in its headers or nowhere, and a client that never gets it keeps a window the
   * server no longer grants.
   */
  @Test
  void theErrorAnswerToASessionsFailedRequestCarriesItsFields() throws Exception {
    HandlerFailures.Ended ended = HandlerFailures.send(gate, port, "/write-then-fail", true, () -> { });
    assertEquals(Outcome.FAILED, ended.outcome());
    assertEquals(500, ended.response().statusCode());
    assertEquals(java.util.Optional.of(Integer.toString(Status.FAILED.code())),
        ended.response().headers().firstValue(SpillwayHttpHeaders.STATUS));
  }

  /**
   * An error handler that answers after an asynchronous step (it reports the failure first, say)
   * writes its answer after the filter has seen the failure: the fields must be in the headers
   * by then, since the permit ends with the failure and later commits find it ended.
   */
  @Test
  void anErrorAnswerWrittenLaterStillCarriesTheSessionsFields() throws Exception {
    java.util.concurrent.CompletableFuture<Void> answer =
        new java.util.concurrent.CompletableFuture<>();
    WebFluxTestApp.errorAnswer = answer;
    try {
      // the answer is written only once the permit has ended
      HandlerFailures.Ended ended = HandlerFailures.send(gate, port, "/fail-answered-later", true,
          () -> answer.complete(null));
      assertEquals(Outcome.FAILED, ended.outcome());
      assertEquals(500, ended.response().statusCode());
      assertEquals(java.util.Optional.of(Integer.toString(Status.FAILED.code())),
          ended.response().headers().firstValue(SpillwayHttpHeaders.STATUS));
    } finally {
      answer.complete(null);
      WebFluxTestApp.errorAnswer = java.util.concurrent.CompletableFuture.completedFuture(null);
    }
  }

  /**
   * A client that goes away while its handler awaits a downstream reply cancels the exchange:
   * its permit ends once, as failed, and the reply that comes after ends nothing.
   */
  @Test
  void aClientThatGoesAwayEndsItsPermitOnceAsFailed() throws Exception {
    for (boolean session : new boolean[] {false, true}) {
      GateStats stats = gate.endpoints().get(0).stats();
      long admitted = stats.admitted();
      long[] before = new long[Outcome.values().length];
      for (Outcome o : Outcome.values()) {
        before[o.ordinal()] = stats.completions(o);
      }
      java.util.concurrent.CountDownLatch entered = new java.util.concurrent.CountDownLatch(1);
      java.util.concurrent.CompletableFuture<String> reply =
          new java.util.concurrent.CompletableFuture<>();
      WebFluxTestApp.downstream = reply;
      WebFluxTestApp.downstreamEntered = entered::countDown;
      try {
        try (java.net.Socket client = new java.net.Socket("127.0.0.1", port)) {
          String head = "GET /downstream HTTP/1.1\r\nHost: 127.0.0.1\r\n"
              + (session ? SpillwayHttpHeaders.SESSION + ": " + (System.nanoTime() & 0xFFFFFFFFL)
                  + "\r\n" + SpillwayHttpHeaders.FLAGS + ": 1\r\n" : "")
              + "\r\n";
          client.getOutputStream().write(head.getBytes(java.nio.charset.StandardCharsets.US_ASCII));
          client.getOutputStream().flush();
          org.junit.jupiter.api.Assertions.assertTrue(
              entered.await(30, java.util.concurrent.TimeUnit.SECONDS), "handler entered");
        } // the client goes away, no answer read
        StarterMvcTest.waitUntil(() -> gate.inFlight() == 0
            && HandlerFailures.completions(stats) > sum(before));
        reply.complete("too late");
        assertEquals(admitted + 1, stats.admitted(), "admitted");
        for (Outcome o : Outcome.values()) {
          assertEquals(before[o.ordinal()] + (o == Outcome.FAILED ? 1 : 0), stats.completions(o),
              o + (session ? " (session)" : ""));
        }
      } finally {
        reply.complete("too late");
        WebFluxTestApp.downstream =
            java.util.concurrent.CompletableFuture.completedFuture("ready");
        WebFluxTestApp.downstreamEntered = () -> { };
      }
    }
  }

  private static long sum(long[] counts) {
    long n = 0;
    for (long c : counts) {
      n += c;
    }
    return n;
  }

  @Test
  void aHandlerThatFailsAfterItsResponseWentFailsUnlessItsPermitEndedAsItWent() throws Exception {
    assertEquals(Outcome.FAILED,
        HandlerFailures.outcomeOf(gate, port, "/write-then-fail?written=true", false));
    assertEquals(Outcome.SUCCESS,
        HandlerFailures.outcomeOf(gate, port, "/write-then-fail?written=true", true));
  }
}
