package io.spillway.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.spillway.api.Outcome;
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

  @Test
  void aHandlerThatFailsAfterItsResponseWentFailsUnlessItsPermitEndedAsItWent() throws Exception {
    assertEquals(Outcome.FAILED,
        HandlerFailures.outcomeOf(gate, port, "/write-then-fail?written=true", false));
    assertEquals(Outcome.SUCCESS,
        HandlerFailures.outcomeOf(gate, port, "/write-then-fail?written=true", true));
  }
}
