package io.spillway.harness;

import io.spillway.sim.Scenario;
import java.util.List;
import java.util.SplittableRandom;

/**
 * An open-loop arrival schedule: Poisson arrivals at {@code level × capacity} per second, the
 * level following a list of demand steps, for a run of fixed length. The schedule is the
 * scenario's, not the generator's: a step takes effect at its scheduled time and every arrival
 * scheduled before the run's end is issued, however late the generator's turns come, each under its
 * own scheduled time. A generator that skipped what it missed, or applied a step when it got to it,
 * would leave its lateness uncharged (coordinated omission) and offer less load than it reports.
 *
 * <p>Exponential gaps are memoryless, so at a step the next gap is drawn afresh at the new rate
 * from the step's time.
 *
 * <p>Not thread-safe: driven by one generator thread.
 */
public final class OpenLoopSchedule {

  /** What the schedule issues, in time order. */
  public interface Arrivals {
    /** An arrival scheduled at {@code at} (a ticker reading), due now or earlier. */
    void arrival(long at);

    /** The demand level became {@code level} at {@code sinceStart} ns into the run. */
    void demandChanged(long sinceStart, double level);
  }

  private final List<Scenario.DemandStep> steps;
  private final double capacityRps;
  private final SplittableRandom draws;
  private long start;
  private long end;
  private int stepIndex;
  private double ratePerNano;
  private long next;

  /** Arrivals at {@code steps}' levels of {@code capacityRps}, gaps drawn from {@code draws}. */
  public OpenLoopSchedule(List<Scenario.DemandStep> steps, double capacityRps,
      SplittableRandom draws) {
    if (steps.isEmpty()) {
      throw new IllegalArgumentException("an open loop needs at least one demand step");
    }
    this.steps = steps;
    this.capacityRps = capacityRps;
    this.draws = draws;
  }

  /** Starts the run at {@code start}, lasting {@code runNanos}: the first step applies. */
  public void start(long start, long runNanos, Arrivals out) {
    this.start = start;
    this.end = start + runNanos;
    applyStep(0, start, out);
  }

  /**
   * Issues the arrivals due by {@code now} and before the run's end, in order, at most {@code max}
   * of them (the rest on the next call, under their own times); a step due meanwhile takes effect
   * at its own time, the arrivals before it at the old rate. Returns how many it issued.
   */
  public int issueDue(long now, int max, Arrivals out) {
    int issued = 0;
    while (issued < max) {
      if (stepIndex + 1 < steps.size()) {
        long step = start + steps.get(stepIndex + 1).startNanos();
        if (step - now <= 0 && step - next <= 0) {
          applyStep(stepIndex + 1, step, out);
          continue;
        }
      }
      if (next - now > 0 || next - end >= 0) {
        break;
      }
      out.arrival(next);
      next += gap();
      issued++;
    }
    return issued;
  }

  /** Whether every arrival scheduled before the run's end has been issued. */
  public boolean exhausted() {
    return next - end >= 0;
  }

  /**
   * The next time the schedule has something to do (an arrival or a step), or the run's end if
   * that comes first.
   */
  public long nextDue() {
    long due = next - end < 0 ? next : end;
    if (stepIndex + 1 < steps.size()) {
      long step = start + steps.get(stepIndex + 1).startNanos();
      if (step - due < 0) {
        due = step;
      }
    }
    return due;
  }

  private void applyStep(int index, long at, Arrivals out) {
    stepIndex = index;
    ratePerNano = steps.get(index).level() * capacityRps / 1e9;
    out.demandChanged(at - start, steps.get(index).level());
    next = at + gap();
  }

  private long gap() {
    if (ratePerNano <= 0) {
      return Long.MAX_VALUE / 4;
    }
    return Math.max(1, Math.round(-Math.log(1.0 - draws.nextDouble()) / ratePerNano));
  }
}
