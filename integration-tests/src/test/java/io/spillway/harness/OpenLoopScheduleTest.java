package io.spillway.harness;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.sim.Scenario;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The open-loop schedule is the scenario's, not the generator's: whether its turns come every
 * microsecond or once, late, the same arrivals are issued under the same times, each step takes
 * effect at its own time, and every arrival before the run's end is issued.
 */
class OpenLoopScheduleTest {

  private static final long MS = 1_000_000;
  /** Near the ticker's wrap, to catch comparisons that are not by difference. */
  private static final long START = Long.MAX_VALUE - 3 * MS / 2;
  private static final List<Scenario.DemandStep> STEPS =
      List.of(new Scenario.DemandStep(0.5, 0), new Scenario.DemandStep(1.5, MS));

  /** What a schedule issued. */
  private static final class Issued implements OpenLoopSchedule.Arrivals {
    final List<Long> arrivals = new ArrayList<>();
    final List<String> steps = new ArrayList<>();

    @Override
    public void arrival(long at) {
      arrivals.add(at);
    }

    @Override
    public void demandChanged(long sinceStart, double level) {
      steps.add(sinceStart + "@" + level);
    }
  }

  private static OpenLoopSchedule schedule() {
    return new OpenLoopSchedule(STEPS, 1_000_000, new SplittableRandom(7)); // 1 per µs at 1×
  }

  @Test
  void lateTurnsIssueTheSameArrivalsAndStepsAtTheirOwnTimes() {
    Issued everyMicro = new Issued();
    OpenLoopSchedule a = schedule();
    a.start(START, 2 * MS, everyMicro);
    for (long t = START; t - (START + 3 * MS) <= 0; t += 1_000) {
      a.issueDue(t, 1_024, everyMicro);
    }
    Issued once = new Issued();
    OpenLoopSchedule b = schedule();
    b.start(START, 2 * MS, once);
    while (b.issueDue(START + 5 * MS, 1_024, once) > 0) { } // one late turn, in bursts

    assertEquals(everyMicro.arrivals, once.arrivals, "the same arrivals, under the same times");
    assertEquals(List.of("0@0.5", MS + "@1.5"), once.steps, "the step at its own time");
    assertTrue(a.exhausted() && b.exhausted());
    long beforeStep = once.arrivals.stream().filter(t -> t - (START + MS) < 0).count();
    long afterStep = once.arrivals.size() - beforeStep;
    assertTrue(beforeStep > 400 && beforeStep < 600, "about 500 at 0.5× in the first ms: " + beforeStep);
    assertTrue(afterStep > 1_350 && afterStep < 1_650, "about 1,500 at 1.5× in the second: " + afterStep);
    assertTrue(once.arrivals.stream().allMatch(t -> t - (START + 2 * MS) < 0), "none at or after the end");
  }

  @Test
  void nextDueIsTheNextArrivalOrStepOrTheEnd() {
    Issued out = new Issued();
    OpenLoopSchedule s = new OpenLoopSchedule(
        List.of(new Scenario.DemandStep(0, 0), new Scenario.DemandStep(1, MS)), 1_000, new SplittableRandom(1));
    s.start(START, 2 * MS, out);
    assertEquals(START + MS, s.nextDue(), "no arrival at level 0: the step is next");
    s.issueDue(START + MS, 10, out);
    assertEquals(List.of("0@0.0", MS + "@1.0"), out.steps);
    assertTrue(s.nextDue() - (START + MS) > 0 && s.nextDue() - (START + 2 * MS) <= 0);
  }
}
