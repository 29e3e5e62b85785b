package io.spillway.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class StepConvergenceTest {

  @Test
  void alreadyConvergedInTheFirstWindow() {
    double[] g = {99, 100, 101, 100, 100, 100};
    assertEquals(0, StepConvergence.of("s", 1, 2, 0, g, 20).convergenceMillis());
  }

  @Test
  void convergesWhenGoodputStaysInsideTheBand() {
    // converged value = mean of the second half = 100; band ±5
    double[] g = {40, 80, 96, 104, 100, 100, 100, 100};
    StepConvergence c = StepConvergence.of("s", 1, 2, 0, g, 20);
    assertEquals(100, c.convergedGoodputRps(), 1e-9);
    assertEquals(40, c.convergenceMillis());
  }

  @Test
  void aLateExcursionRestartsTheClock() {
    double[] g = {100, 100, 100, 80, 100, 100, 100, 100};
    assertEquals(80, StepConvergence.of("s", 1, 2, 0, g, 20).convergenceMillis());
  }

  @Test
  void neverConvergedIsReportedAsSuch() {
    double[] g = {100, 0, 100, 0};
    assertEquals(-1, StepConvergence.of("s", 1, 2, 0, g, 20).convergenceMillis());
  }
}
