package io.spillway.harness;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.Status;
import io.spillway.sim.Experiment;
import io.spillway.sim.Recorder;
import io.spillway.sim.ResultRecord;
import io.spillway.sim.Scenario;
import io.spillway.sim.Tally;
import io.spillway.transport.OverloadRejectedException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * The socket harness's open-loop generator on a fake clock and a fake client: which arrivals it
 * issues, under which times, and how each call's end is counted (docs/design.md, "Measures").
 * Times are chosen by the test; nothing is sent.
 */
class LoadGeneratorTest {

  private static final long MS = 1_000_000L;
  /** The generator's turns, when it is not stalled: every 10 µs. */
  private static final long TURN = 10_000L;
  /** A fake clock's origin far from zero, so that only differences of readings can work. */
  private static final long T0 = Long.MAX_VALUE - 50 * MS;

  private static final Scenario SCENARIO = Scenario.of(Map.of("clients", "4", "cores", "1",
      "service", "exp", "service_mean_us", "20", "rtt_us", "50", "slo_us", "1000",
      "schemes", "none", "window_ms", "10"));

  /** A client that sends nothing: it keeps each call's arrival time and future for the test. */
  private static final class FakeCaller implements LoadGenerator.Caller {
    final List<Long> arrivals = new ArrayList<>();
    final List<CompletableFuture<byte[]>> calls = new ArrayList<>();

    @Override
    public int sessionCount() {
      return 4;
    }

    @Override
    public CompletableFuture<byte[]> call(int session, byte[] payload, long arrival) {
      arrivals.add(arrival - T0);
      CompletableFuture<byte[]> f = new CompletableFuture<>();
      calls.add(f);
      return f;
    }
  }

  private static LoadGenerator generator(FakeCaller caller, long[] clock,
      List<Scenario.DemandStep> steps, long runNanos, Recorder recorder) {
    return new LoadGenerator(caller, null, () -> clock[0], SCENARIO, steps, 10_000, runNanos, 0,
        recorder, 11, null);
  }

  /**
   * The arrivals a generator issues when it turns every 10 µs from 0 to {@code until}, except in
   * {@code [stallFrom, stallTo)}, where it does not run (its core taken).
   */
  private static List<Long> arrivals(List<Scenario.DemandStep> steps, long runNanos, long until,
      long stallFrom, long stallTo, Recorder recorder) {
    FakeCaller caller = new FakeCaller();
    long[] clock = {T0};
    LoadGenerator g = generator(caller, clock, steps, runNanos, recorder);
    g.start(T0);
    for (long t = 0; t <= until; t += TURN) {
      if (t >= stallFrom && t < stallTo) {
        continue;
      }
      clock[0] = T0 + t;
      g.turn(clock[0]);
    }
    return caller.arrivals;
  }

  private static final List<Scenario.DemandStep> STEP_AT_50_MS =
      List.of(new Scenario.DemandStep(0.5, 0), new Scenario.DemandStep(2.0, 50 * MS));

  @Test
  void aStepTakesEffectAtItsTimeHoweverLateTheGeneratorGetsThere() {
    Recorder onTime = new Recorder(10 * MS);
    Recorder late = new Recorder(10 * MS);
    List<Long> expected = arrivals(STEP_AT_50_MS, 100 * MS, 110 * MS, 0, 0, onTime);
    // stalled from 40 to 60 ms, across the step: the turn at 60 ms issues what it missed, under
    // the arrivals' own times, at 0.5 x before the step and 2 x after it
    List<Long> stalled = arrivals(STEP_AT_50_MS, 100 * MS, 110 * MS, 40 * MS, 60 * MS, late);
    assertEquals(expected.size(), stalled.size(), "arrivals issued with a stall across the step");
    assertEquals(expected, stalled);
    assertEquals(2.0, late.demandAt(50 * MS), "the window from the step carries the step's level");
    assertEquals(0.5, late.demandAt(50 * MS - 1));
    long before = stalled.stream().filter(a -> a >= 40 * MS && a < 50 * MS).count();
    long after = stalled.stream().filter(a -> a >= 50 * MS && a < 60 * MS).count();
    assertTrue(before > 20 && before < 90, "5,000/s for 10 ms: " + before);
    assertTrue(after > 140 && after < 270, "20,000/s for 10 ms: " + after);
  }

  @Test
  void theArrivalsDueBeforeTheEndAreIssuedWhenTheLastTurnComesLate() {
    List<Scenario.DemandStep> half = List.of(new Scenario.DemandStep(0.5, 0));
    List<Long> expected = arrivals(half, 100 * MS, 110 * MS, 0, 0, new Recorder(10 * MS));
    // no turn from 90 ms until 105 ms, after the run's end
    List<Long> stalled =
        arrivals(half, 100 * MS, 110 * MS, 90 * MS, 105 * MS, new Recorder(10 * MS));
    assertEquals(expected.size(), stalled.size(),
        "arrivals issued with the last turn after the end");
    assertEquals(expected, stalled);
    assertTrue(stalled.getLast() < 100 * MS, "none at or after the end: " + stalled.getLast());
  }

  @Test
  void latencyCountsFromTheScheduledArrivalAndOnlyAnswersWithinTheSloAreGood() {
    FakeCaller caller = new FakeCaller();
    long[] clock = {T0};
    Recorder recorder = new Recorder(10 * MS);
    LoadGenerator g = generator(caller, clock, List.of(new Scenario.DemandStep(0.5, 0)), 20 * MS,
        recorder);
    g.start(T0);
    clock[0] = T0 + 2 * MS; // the first turn, 2 ms late: 5,000/s has about 10 arrivals due
    g.turn(clock[0]);
    int n = caller.calls.size();
    assertTrue(n >= 4, "arrivals due by 2 ms: " + caller.arrivals);
    // answered at once, 2 ms after the turn: each waited from its arrival, over the 1 ms SLO
    caller.calls.get(0).complete(new byte[0]);
    // a reject that left the client at 2 ms and came back 300 µs later
    clock[0] = T0 + 2 * MS + 300_000;
    caller.calls.get(1).completeExceptionally(
        new OverloadRejectedException(Status.REJECTED_AQM, T0 + 2 * MS));
    caller.calls.get(2).completeExceptionally(new OverloadRejectedException(Status.EXPIRED));
    for (int i = 3; i < n; i++) {
      caller.calls.get(i).complete(new byte[0]);
    }
    Tally t = recorder.total();
    assertEquals(n, t.offered);
    assertEquals(n - 2, t.completed);
    assertEquals(n - 1, t.received,
        "the answers and the reject reached the server; the expiry did not");
    assertEquals(1, t.dropped);
    assertEquals(1, t.expired);
    List<Long> latencies = new ArrayList<>(List.of(2 * MS - caller.arrivals.get(0)));
    caller.arrivals.subList(3, n).forEach(a -> latencies.add(2 * MS + 300_000 - a));
    assertEquals(latencies.stream().filter(l -> l <= MS).count(), t.good,
        "only answers within 1 ms of their arrival are good: " + caller.arrivals);
    long longest = latencies.stream().mapToLong(Long::longValue).max().orElseThrow();
    assertEquals(longest, t.latency.getMaxValue(), longest / 500.0,
        "latency runs from each call's arrival, not from the late turn that issued it");
    ResultRecord r = Experiment.steadyRecord(SCENARIO, "none", 0.5, 10_000, recorder, 0, 10 * MS);
    assertEquals(300.0, r.rejectDelayMicros(), 1e-9, "mean reject delay");
    assertEquals(300.0, r.rejectDelayP99Micros(), 0.5, "p99 reject delay, from the same rejects");
  }
}
