package io.spillway.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.Status;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * An application whose {@code @ExceptionHandler(Exception.class)} answers every failure with its
 * own 500 ({@code /abort} throws a budget abort, {@code /fail} a bug): a budget abort is still
 * Spillway's fast reject (429) with its pushback, counted as an abort, and every other exception is still
 * the application's to answer. Run once per web stack by its subclasses.
 */
abstract class GlobalExceptionHandlerContract {

  @LocalServerPort
  int port;
  @Autowired
  SpillwayHttpGate gate;

  @Test
  void aBudgetAbortIsAFastRejectDespiteTheApplicationsOwnHandler() throws Exception {
    long aborts = gate.endpoints().get(0).stats().budgetAborts();
    HttpResponse<String> r = LocalHttp.get(port, "/abort");
    assertEquals(429, r.statusCode(), r.body());
    assertEquals(Integer.toString(Status.REJECTED_BUDGET.code()),
        r.headers().firstValue(SpillwayHttpHeaders.STATUS).orElseThrow());
    assertTrue(r.headers().firstValue("Retry-After").isPresent());
    assertEquals(aborts + 1, gate.endpoints().get(0).stats().budgetAborts());
  }

  @Test
  void otherExceptionsAreStillTheApplicationsToAnswer() throws Exception {
    HttpResponse<String> r = LocalHttp.get(port, "/fail");
    assertEquals(500, r.statusCode());
    assertEquals("{\"error\":\"handled\"}", r.body());
  }
}
