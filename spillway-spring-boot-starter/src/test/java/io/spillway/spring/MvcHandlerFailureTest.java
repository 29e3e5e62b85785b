package io.spillway.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.spillway.api.Outcome;
import io.spillway.api.Status;
import io.spillway.spring.app.MvcTestApp;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/** Spring MVC on Tomcat: how a failing handler's permit ends ({@link HandlerFailures}). */
@SpringBootTest(classes = MvcTestApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"server.tomcat.threads.max=1", "server.tomcat.threads.min-spare=1",
        "management.endpoints.web.exposure.include=spillway,metrics"})
class MvcHandlerFailureTest {

  @LocalServerPort
  int port;
  @Autowired
  SpillwayHttpGate gate;

  /** Its buffered body never leaves: the container answers 500 instead. */
  @Test
  void aHandlerThatFailsAfterWritingIntoTheBufferFails() throws Exception {
    assertEquals(Outcome.FAILED, HandlerFailures.outcomeOf(gate, port, "/write-then-fail", false));
    assertEquals(Outcome.FAILED, HandlerFailures.outcomeOf(gate, port, "/write-then-fail", true));
  }

  /** The container's error answer is the session's answer: its fields ride in its headers. */
  @Test
  void theErrorAnswerToASessionsFailedRequestCarriesItsFields() throws Exception {
    HandlerFailures.Ended ended = HandlerFailures.send(gate, port, "/write-then-fail", true, () -> { });
    assertEquals(Outcome.FAILED, ended.outcome());
    assertEquals(500, ended.response().statusCode());
    assertEquals(java.util.Optional.of(Integer.toString(Status.FAILED.code())),
        ended.response().headers().firstValue(SpillwayHttpHeaders.STATUS));
  }

  @Test
  void aHandlerThatFailsAfterItsResponseWentFailsUnlessItsPermitEndedAsItWent() throws Exception {
    assertEquals(Outcome.FAILED,
        HandlerFailures.outcomeOf(gate, port, "/write-then-fail?flush=true", false));
    assertEquals(Outcome.SUCCESS,
        HandlerFailures.outcomeOf(gate, port, "/write-then-fail?flush=true", true));
  }
}
