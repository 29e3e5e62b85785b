package io.spillway.harness;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.sim.Experiment;
import io.spillway.sim.ResultRecord;
import io.spillway.sim.Scenario;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A socket capacity reading: taken from the last three one-second slices once they agree and the
 * JIT is quiet, with their spread, and the rule that marks a run whose goodput beats it by more.
 */
class SteadyCapacityTest {

  @Test
  void aFirstRunStillCompilingIsNotSteadyUntilTheJitGoesQuiet() {
    // a fresh server's slices: throughput climbing while C2 works, then agreeing once it is quiet
    List<Long> completed = List.of(17_034L, 24_100L, 27_400L, 27_900L, 28_124L, 27_800L);
    List<Long> jit = List.of(900L, 700L, 400L, 120L, 60L, 40L);
    assertFalse(SteadyCapacity.steady(completed.subList(0, 5), List.of(900L, 700L, 400L, 160L, 60L)));
    assertTrue(SteadyCapacity.steady(completed, jit));
  }

  @Test
  void measureRunsSlicesUntilSteadyAndTracesThem() throws Exception {
    // the same fresh server, its JIT clock read before the first slice and after each
    long[] slices = {17_034, 24_100, 27_400, 27_900, 28_124, 27_800, 99_999};
    long[] jitTotals = {1_000, 1_900, 2_600, 3_000, 3_120, 3_180, 3_220, 9_999};
    int[] jitReads = {0};
    SteadyCapacity.Measured m = SteadyCapacity.measure(i -> slices[i],
        () -> jitTotals[jitReads[0]++], 30);
    assertEquals(6, m.reading().slices(), "stops at the first steady slice");
    assertTrue(m.reading().settled());
    assertEquals((27_900 + 28_124 + 27_800) / 3.0, m.reading().rps(), 1e-9);
    assertEquals("17034/900 24100/700 27400/400 27900/120 28124/60 27800/40", m.trace());
    assertTrue(m.describe("harness: capacity", " before the run", 30)
        .startsWith("harness: capacity 27941 rps before the run (spread 1.2%;"));
  }

  @Test
  void aReadingThatNeverSettlesSaysSo() throws Exception {
    SteadyCapacity.Measured m = SteadyCapacity.measure(i -> 10_000L + 2_000L * i, () -> -1, 4);
    assertEquals(4, m.reading().slices());
    assertFalse(m.reading().settled());
    assertTrue(m.describe("capacity of none:", "", 4).endsWith(" NOT steady after 4 s: may read low"));
  }

  @Test
  void theReadingIsTheMeanOfTheLastThreeSlicesAndTheirSpread() {
    SteadyCapacity.Reading r = SteadyCapacity.Reading.of(List.of(10_000L, 27_900L, 28_100L, 28_000L), true);
    assertEquals(28_000, r.rps(), 1e-9);
    assertEquals(200.0 / 28_000, r.spread(), 1e-12);
    assertEquals(4, r.slices());
    assertTrue(r.settled());
  }

  @Test
  void fewerSlicesThanThreeStillGiveAReadingSaidToBeUnsettled() {
    SteadyCapacity.Reading r = SteadyCapacity.Reading.of(List.of(1_000L, 3_000L), false);
    assertEquals(2_000, r.rps(), 1e-9);
    assertEquals(1.0, r.spread(), 1e-12);
    assertFalse(r.settled());
    assertThrows(IllegalArgumentException.class, () -> SteadyCapacity.Reading.of(List.of(), false));
  }

  @Test
  void goodputBeyondTheReadingsSpreadShowsItWasLow() {
    SteadyCapacity.Reading r = new SteadyCapacity.Reading(20_000, 0.02, 5, true);
    assertTrue(r.exceededBy(20_390) < 0, "within the spread");
    assertTrue(r.exceededBy(20_410) > 0);
    assertEquals(0.10, r.exceededBy(22_400), 1e-12);
    SteadyCapacity.Reading after = new SteadyCapacity.Reading(27_000, 0.01, 4, true);
    assertSame(after, SteadyCapacity.Reading.higher(r, after));
    assertSame(after, SteadyCapacity.Reading.higher(after, r));
  }

  @Test
  void aSecondReadingCountsAsHigherOnlyBeyondBothSpreads() {
    SteadyCapacity.Reading first = new SteadyCapacity.Reading(29_013, 0.029, 15, true);
    SteadyCapacity.Reading after = new SteadyCapacity.Reading(31_480, 0.009, 9, true);
    SteadyCapacity.Reading again = new SteadyCapacity.Reading(31_878, 0.014, 9, true);
    assertTrue(after.above(first), "31,480 - 0.9 % lies above 29,013 + 2.9 %");
    assertFalse(again.above(after), "31,878 - 1.4 % overlaps 31,480 + 0.9 %");
    assertFalse(first.above(after));
  }

  @Test
  void resultsMarkRowsOverCapacityOnlyWhenTheCapacityHasASpread() {
    Scenario s = Scenario.of(Map.of("schemes", "none", "service_mean_us", "25", "rtt_us", "50"));
    ResultRecord within = row(s, 20_300);
    ResultRecord over = row(s, 21_000);
    Experiment.Results measured = new Experiment.Results(s, 20_000, true, List.of(within, over), List.of(),
        List.of(), 0.02);
    assertFalse(measured.overCapacity(within));
    assertTrue(measured.overCapacity(over));
    Experiment.Results given = new Experiment.Results(s, 20_000, false, List.of(within, over), List.of());
    assertFalse(given.overCapacity(over), "a given capacity has no spread to judge by");
  }

  private static ResultRecord row(Scenario s, double goodput) {
    return new ResultRecord("none", s.clients(), 1.0, 20_000, 20_000, goodput, goodput, 100, 500, 750, 0, 0, 0, 1, 0, 0, 0, 0);
  }
}
