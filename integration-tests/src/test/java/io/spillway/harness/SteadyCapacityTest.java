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

  /** A scripted JIT clock: the totals read before the first slice and after each. */
  private static SteadyCapacity.JitClock jitTotals(long... totals) {
    int[] reads = {0};
    return () -> totals[reads[0]++];
  }

  /** JIT totals from each slice's ms compiled, starting from {@code start}. */
  private static long[] totalsOf(long start, long... perSlice) {
    long[] totals = new long[perSlice.length + 1];
    totals[0] = start;
    for (int i = 0; i < perSlice.length; i++) {
      totals[i + 1] = totals[i] + perSlice[i];
    }
    return totals;
  }

  @Test
  void aWarmUpWhoseJitIsQuietAtOnceStopsAfterThreeSlices() throws Exception {
    int[] ran = {0};
    // completions that would never pass as a capacity reading: a warm-up judges only the JIT
    SteadyCapacity.Slices s = SteadyCapacity.warm(i -> {
      ran[0]++;
      return 5_000L * (i + 1);
    }, jitTotals(totalsOf(40_000, 150, 20, 0, 999)), 30);
    assertEquals(3, s.count());
    assertEquals(3, ran[0], "no slice runs past the third");
    assertTrue(s.settled());
    assertEquals(List.of(150L, 20L, 0L), s.compilingMillis());
    assertEquals("5000/150 10000/20 15000/0", s.trace());
    assertEquals("harness: breakwater warm-up 11 s (8 s fixed, then 3 one-second slice(s) at 0.50x until the JITs"
        + " were quiet; per slice, calls completed / ms the JITs compiled: 5000/150 10000/20 15000/0)",
        SteadyCapacity.describeWarm("harness: breakwater warm-up", 8, 0.5, s));
  }

  @Test
  void aWarmUpGoesOnWhileTheJitCompilesAndStopsOnceItIsQuiet() throws Exception {
    // a fresh server compiling for seconds, one quiet second amid it, then quiet from the 7th
    long[] perSlice = {900, 600, 140, 400, 160, 120, 90, 40, 0, 0};
    SteadyCapacity.Slices s = SteadyCapacity.warm(i -> 14_000L, jitTotals(totalsOf(2_000, perSlice)), 30);
    assertEquals(8, s.count(), "the last three slices (120, 90, 40 ms) are the first quiet three in a row");
    assertTrue(s.settled());
    assertEquals(List.of(900L, 600L, 140L, 400L, 160L, 120L, 90L, 40L), s.compilingMillis());
  }

  @Test
  void aWarmUpWhoseJitNeverGoesQuietStopsAtTheBoundAndSaysSo() throws Exception {
    int[] ran = {0};
    SteadyCapacity.Slices s = SteadyCapacity.warm(i -> {
      ran[0]++;
      return 14_000L;
    }, jitTotals(totalsOf(0, 300, 151, 151, 151, 151, 0)), 5);
    assertEquals(5, s.count());
    assertEquals(5, ran[0]);
    assertFalse(s.settled());
    String line = SteadyCapacity.describeWarm("harness: none warm-up", 8, 0.9, s);
    assertTrue(line.startsWith("harness: none warm-up 13 s (8 s fixed, then 5 one-second slice(s) at 0.90x;"), line);
    assertTrue(line.endsWith(" NOT quiet after 5 slices: may still compile in measured levels"), line);
  }

  @Test
  void aJvmThatDoesNotReportItsJitLetsTheWarmUpEndAfterThreeSlices() throws Exception {
    assertEquals(3, SteadyCapacity.warm(i -> 14_000L, () -> -1, 30).count());
    assertThrows(IllegalArgumentException.class, () -> SteadyCapacity.warm(i -> 1L, () -> 0, 0));
  }

  @Test
  void capacityAndWarmUpShareOneJitRule() {
    List<Long> steadyCalls = List.of(28_000L, 28_100L, 27_900L);
    assertTrue(SteadyCapacity.jitQuiet(List.of(150L, 150L, 150L)));
    assertTrue(SteadyCapacity.steady(steadyCalls, List.of(150L, 150L, 150L)));
    assertFalse(SteadyCapacity.jitQuiet(List.of(150L, 151L, 150L)));
    assertFalse(SteadyCapacity.steady(steadyCalls, List.of(150L, 151L, 150L)));
    assertFalse(SteadyCapacity.jitQuiet(List.of(0L, 0L)), "three slices at least");
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
