package io.spillway.harness.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * When the graph harness's capacity warm-up counts as steady: three one-second slices whose
 * throughputs agree within 5 %, in each of which the services' JIT compiled for at most 15 % of it (once the JIT is done, a
 * trickle of 40-110 ms a second goes on; while it is at work, about a second a second).
 */
class GraphWarmUpTest {

  private static boolean steady(List<Long> completed, List<Long> jitMillis) {
    return GraphHarnessMain.GraphHarness.steady(completed, jitMillis);
  }

  @Test
  void aPlateauWhileTheJitCompilesIsNotSteady() {
    // a search warm-up measured on the hotel graph: 674, 690, 700 rps with the JIT compiling about a second per second
    assertFalse(steady(List.of(460L, 674L, 690L, 700L), List.of(759L, 945L, 1100L, 1000L)));
  }

  @Test
  void agreeingSlicesWithAQuietJitAreSteady() {
    assertTrue(steady(List.of(967L, 1199L, 1295L, 1273L, 1288L), List.of(747L, 110L, 54L, 61L, 34L)));
  }

  @Test
  void oneBusySliceAmongTheLastThreeIsEnoughToGoOn() {
    assertFalse(steady(List.of(1280L, 1295L, 1273L), List.of(50L, 151L, 40L)));
    assertTrue(steady(List.of(1280L, 1295L, 1273L), List.of(50L, 150L, 40L)));
  }

  @Test
  void aQuietJitDoesNotMakeSpreadThroughputSteady() {
    assertFalse(steady(List.of(1000L, 1100L, 1200L), List.of(0L, 0L, 0L)));
  }

  @Test
  void fewerThanThreeSlicesAreNeverSteady() {
    assertFalse(steady(List.of(1280L, 1290L), List.of(0L, 0L)));
  }

  @Test
  void aJvmThatDoesNotReportItsJitIsJudgedOnThroughputAlone() {
    // compileMillis() == -1: the harness records 0 ms per slice
    assertTrue(steady(List.of(1280L, 1290L, 1285L), List.of(0L, 0L, 0L)));
  }

  @Test
  void theWarmUpLimitIsAWholeNumberOfSecondsOfAtLeastOne() {
    assertEquals(2, GraphHarnessMain.parsePositive("--capacity-warmup-max-s", " 2"));
    IllegalArgumentException zero = assertThrows(IllegalArgumentException.class,
        () -> GraphHarnessMain.parsePositive("--capacity-warmup-max-s", "0"));
    assertTrue(zero.getMessage().contains("--capacity-warmup-max-s"), zero.getMessage());
    assertThrows(IllegalArgumentException.class,
        () -> GraphHarnessMain.parsePositive("--capacity-warmup-max-s", "1.5"));
  }
}
