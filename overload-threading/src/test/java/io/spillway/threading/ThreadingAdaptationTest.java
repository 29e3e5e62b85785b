package io.spillway.threading;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.testing.VirtualClock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * µTune's adaptation in virtual time (mutune-osdi18 §4): the load detector, the piecewise-linear
 * model, the switching logic with its hysteresis, and the loop that ties them to a server's switch.
 */
class ThreadingAdaptationTest {

  private static final ThreadingModel IP = ThreadingModel.parse("IP");
  private static final ThreadingModel IB = ThreadingModel.parse("IB");
  private static final ThreadingModel DB4 = ThreadingModel.parse("DB4");
  private static final long SEED = Long.getLong("spillway.test.seed", 27L);

  /** A crossover like Fig. 8's: in-line poll best at low load, saturating near 4,000 rps; dispatch best above. */
  private static ThreadingProfile crossover() {
    return ThreadingProfile.builder()
        .add(IP, 0, 50_000).add(IP, 2_000, 80_000).add(IP, 4_000, 1_000_000).add(IP, 8_000, 5_000_000)
        .add(DB4, 0, 90_000).add(DB4, 2_000, 95_000).add(DB4, 4_000, 110_000).add(DB4, 8_000, 150_000)
        .build();
  }

  @Test
  void modelsParseAndPrintAsMuTuneNamesThem() {
    assertEquals("IP", IP.name());
    assertEquals("DB4", DB4.name());
    assertEquals(ThreadingModel.dispatch(ThreadingModel.Reception.POLL, 20), ThreadingModel.parse("dp20"));
    for (String bad : List.of("", "X", "IP3", "D", "DB", "DB0", "DBx", "IBB")) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ThreadingModel.parse(bad));
      assertTrue(e.getMessage().contains("expected IP, IB, DPn or DBn"), e.getMessage());
    }
  }

  @Test
  void theProfileInterpolatesBetweenTrainedLoadsAndKeepsRisingPastTheLast() {
    ThreadingProfile p = crossover();
    assertEquals(50_000, p.predictNanos(IP, 0), 1e-6);
    assertEquals(65_000, p.predictNanos(IP, 1_000), 1e-6);     // halfway between 50 and 80 us
    assertEquals(540_000, p.predictNanos(IP, 3_000), 1e-6);    // halfway between 80 and 1000 us
    assertEquals(6_000_000, p.predictNanos(IP, 9_000), 1e-6);  // last segment's slope, 1 ms per 1000 rps
    assertEquals(IP, p.best(1_000));
    assertEquals(DB4, p.best(3_000));
    assertThrows(IllegalArgumentException.class, () -> p.predictNanos(IB, 10));
  }

  @Test
  void theProfileAveragesRepeatedPointsAndSurvivesAFile(@TempDir Path dir) throws Exception {
    ThreadingProfile p = ThreadingProfile.builder().add(IB, 100, 40_000).add(IB, 100, 60_000)
        .add(IB, 50, 30_000).build();
    assertEquals(50_000, p.predictNanos(IB, 100), 1e-6);
    Path file = dir.resolve("profile.csv");
    p.write(file);
    ThreadingProfile back = ThreadingProfile.read(file);
    assertEquals(p.predictNanos(IB, 75), back.predictNanos(IB, 75), 1e-3);
    Files.writeString(file, "model,rps,p99_us\nIB,100,40\nXX,1,2\n");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ThreadingProfile.read(file));
    assertTrue(e.getMessage().contains(":3:"), e.getMessage());
  }

  @Test
  void theEstimatorReadsTheRateFromItsBufferAndFallsWhenArrivalsStop() {
    VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 1_000_000_000L); // wraps during the test
    ArrivalRateEstimator a = new ArrivalRateEstimator(5, 5);
    assertEquals(0, a.estimate(clock.read()), 1e-9);
    double rate = 0;
    for (int i = 0; i < 50; i++) {
      clock.advance(100_000); // 10,000 per second
      a.record(clock.read());
      rate = a.estimate(clock.read());
    }
    assertEquals(10_000, rate, 1e-6);
    clock.advance(1_000_000_000); // a second of silence: ~25 arrivals in ~1 s
    long updates = a.updates();
    rate = a.estimate(clock.read());
    assertTrue(rate < 30, "rate after a silence: " + rate);
    assertTrue(a.updates() > updates, "a long silence is news to the adaptation");
  }

  @Test
  void burstsAreReadAtTheirAverageRateNotTheirPeak() {
    VirtualClock clock = new VirtualClock();
    ArrivalRateEstimator a = new ArrivalRateEstimator(5, 9);
    double rate = 0;
    for (int burst = 0; burst < 200; burst++) {
      for (int i = 0; i < 20; i++) {
        clock.advance(1_000); // 20 arrivals 1 us apart...
        a.record(clock.read());
      }
      clock.advance(1_000_000 - 20_000); // ...every millisecond: 20,000 per second on average
      rate = a.estimate(clock.read());
    }
    assertEquals(20_000, rate, 20_000 * 0.15); // read after a gap: the window ends on a silence (the bursts peak at 1,000,000)
  }

  @Test
  void anOutlierGapMovesTheEstimateLittle() {
    VirtualClock clock = new VirtualClock();
    ArrivalRateEstimator a = new ArrivalRateEstimator(2, 9);
    double rate = 0;
    for (int i = 0; i < 40; i++) {
      clock.advance(i == 30 ? 1_000 : 1_000_000); // one pair 1 us apart among pairs 1 ms apart
      a.record(clock.read());
      rate = a.estimate(clock.read());
    }
    assertEquals(1_000, rate, 1_000 * 0.10);
  }

  @Test
  void thePolicyMovesOnlyPastItsMarginAndAfterConfirmations() {
    ThreadingPolicy policy = new ThreadingPolicy(crossover(), 0.10, 0, 3);
    assertEquals(IP, policy.decide(1_000, IP));
    assertEquals(IP, policy.decide(3_000, IP));   // DB4 wins: 1 of 3
    assertEquals(IP, policy.decide(3_000, IP));   // 2 of 3
    assertEquals(DB4, policy.decide(3_000, IP));  // 3 of 3: move
    assertEquals(DB4, policy.decide(2_000, DB4)); // IP predicts 80 us, DB4 95 us: IP wins 1 of 3
    assertEquals(DB4, policy.decide(2_050, DB4)); // IP 103 us vs DB4 95.4 us: DB4 best again, count resets
    assertEquals(DB4, policy.decide(2_000, DB4)); // counting starts over
    assertEquals(DB4, policy.decide(2_000, DB4));
    assertEquals(IP, policy.decide(2_000, DB4));
    assertEquals(IP, policy.decide(1_990, IP));   // 80 vs 95 both ways: inside nothing, already IP
    ThreadingPolicy tight = new ThreadingPolicy(crossover(), 0.30, 0, 1);
    assertEquals(DB4, tight.decide(1_900, DB4));  // IP 78.5 us beats 94.3 us by 20 %, not 30 %
    // A model the profile does not know is left at once.
    assertEquals(IP, policy.decide(100, IB));
  }

  @Test
  void aMoveMadeElsewhereStartsTheConfirmationsOver() {
    // At 3,000 rps DB4 (105 us) beats both in-line models (IP 762.5 us, IB 915 us) by far.
    ThreadingProfile p = ThreadingProfile.builder()
        .add(IP, 0, 50_000).add(IP, 4_000, 1_000_000)
        .add(IB, 0, 60_000).add(IB, 4_000, 1_200_000)
        .add(DB4, 0, 90_000).add(DB4, 4_000, 110_000).build();
    ThreadingPolicy policy = new ThreadingPolicy(p, 0.10, 0, 3);
    assertEquals(IP, policy.decide(3_000, IP)); // DB4 wins against IP: 1 of 3
    assertEquals(IP, policy.decide(3_000, IP)); // 2 of 3
    // An operator moves the server to IB. The two wins were counted against IP; counted on, one
    // decision would move the server away from the model just chosen.
    assertEquals(IB, policy.decide(3_000, IB)); // 1 of 3 against IB
    assertEquals(IB, policy.decide(3_000, IB)); // 2 of 3
    assertEquals(DB4, policy.decide(3_000, IB)); // 3 of 3: move
    // reset() forgets the count without a change of model. At 100 rps IP predicts 73.75 us, DB4 90.5 us.
    assertEquals(DB4, policy.decide(100, DB4));
    assertEquals(DB4, policy.decide(100, DB4)); // IP wins: 2 of 3
    policy.reset();
    assertEquals(DB4, policy.decide(100, DB4)); // 1 of 3 again
    assertEquals(DB4, policy.decide(100, DB4));
    assertEquals(IP, policy.decide(100, DB4));
  }

  /**
   * Decisions ride on arrivals: {@code runIfDue} with each arrival's own reading runs the adaptation
   * at most once a period, the first a period after the adapter was made, across the clock's
   * wrap-around; {@code run} decides at once and starts the period over.
   */
  @Test
  void arrivalsRunTheAdaptationAtMostOncePerPeriodAcrossTheClocksWrapAround() {
    long period = 1_000_000;
    VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 2_500_000L); // wraps 2.5 periods in
    ThreadingAdaptation adaptation = new ThreadingAdaptation(crossover(), 5, 9, period, 0.10, 0, 1);
    ArrivalRateEstimator arrivals = new ArrivalRateEstimator(adaptation.bufferSize(), adaptation.smoothing());
    Switch threading = new Switch(IP);
    int[] runs = {0};
    ThreadingAdapter adapter = new ThreadingAdapter(clock, List.of(arrivals), adaptation, () -> {
      runs[0]++; // read once by each run that decides
      return threading.current();
    }, threading::switchTo);
    // 6,000 arrivals a second (DB4 is predicted faster there; one win moves), one every 166,666 ns.
    // Arrival k comes k gaps in; the first run is due a period in, at arrival 7, and each next a
    // period after the last, 6 gaps (999,996 ns) being short of one: arrivals 7, 14, ..., 70. Each
    // run has 7 new arrivals, more than a window of 5, so each decides (reads the model once).
    for (int i = 0; i < 70; i++) {
      clock.advance(166_666);
      arrivals.record(clock.read());
      adapter.runIfDue(clock.read());
    }
    assertEquals(10, runs[0], "decisions");
    assertEquals(DB4, threading.current(), "the arrivals alone moved the server");
    assertTrue(clock.read() < 0, "the clock wrapped during the test");

    // Not due: within a period of the last run nothing happens, however many arrivals.
    adapter.run(); // forced, though not due: the period starts again from here
    int decided = runs[0];
    clock.advance(period / 2);
    for (int i = 0; i < 5; i++) {
      arrivals.record(clock.read());
      adapter.runIfDue(clock.read());
    }
    assertEquals(decided, runs[0], "decided within a period of the forced run");
    clock.advance(period / 2);
    arrivals.record(clock.read());
    adapter.runIfDue(clock.read());
    assertEquals(decided + 1, runs[0], "due a period after the forced run, with a new window closed");
  }

  @Test
  void aRestartedAdapterNeedsItsFullCountOfNewDecisions() {
    VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 5_000_000_000L);
    ThreadingAdaptation adaptation = new ThreadingAdaptation(crossover(), 5, 9, 1_000_000, 0.10, 0, 3);
    ArrivalRateEstimator arrivals = new ArrivalRateEstimator(adaptation.bufferSize(), adaptation.smoothing());
    Switch threading = new Switch(IP);
    ThreadingAdapter adapter = new ThreadingAdapter(clock, List.of(arrivals), adaptation, threading::current,
        threading::switchTo);
    Runnable window = () -> { // one window of 5 arrivals at 3,000/s, then one decision on its estimate
      for (int i = 0; i < adaptation.bufferSize(); i++) {
        clock.advance(333_333);
        arrivals.record(clock.read());
      }
      adapter.run();
    };
    window.run(); // DB4 wins: 1 of 3
    window.run(); // 2 of 3
    adapter.restart();
    window.run(); // 1 of 3 again
    window.run(); // 2 of 3
    assertEquals(IP, threading.current());
    assertEquals(0, threading.switches());
    window.run();
    assertEquals(DB4, threading.current());
  }

  @Test
  void aDecisionInFlightWhenTheAdaptationResumesCannotLandAfterTheResume() throws Exception {
    // A server hands the choice back as SpillwayServer.resumeAdaptiveThreading does: restart(),
    // then unpin. Two decisions for DB4 were made while an operator held IP; the third is being
    // made when the operator resumes. Landing after the unpin, it would move the server on
    // decisions made before the resume, which restart() promises cannot happen.
    VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 5_000_000_000L);
    ThreadingAdaptation adaptation = new ThreadingAdaptation(crossover(), 5, 9, 1_000_000, 0.10, 0, 3);
    ArrivalRateEstimator arrivals = new ArrivalRateEstimator(adaptation.bufferSize(), adaptation.smoothing());
    Switch threading = new Switch(IP);
    java.util.concurrent.atomic.AtomicBoolean pinned = new java.util.concurrent.atomic.AtomicBoolean(true);
    ThreadingAdapter[] adapter = new ThreadingAdapter[1];
    Thread[] operator = new Thread[1];
    adapter[0] = new ThreadingAdapter(clock, List.of(arrivals), adaptation, () -> {
      if (operator[0] != null && operator[0].getState() == Thread.State.NEW) {
        operator[0].start();
        // Until the operator has resumed, or waits for this decision to finish.
        Thread.State state;
        while ((state = operator[0].getState()) == Thread.State.RUNNABLE || state == Thread.State.NEW) {
          Thread.onSpinWait();
        }
      }
      return threading.current();
    }, m -> {
      if (!pinned.get()) {
        threading.switchTo(m);
      }
    });
    Runnable window = () -> { // one window of 5 arrivals at 3,000/s, then one decision on its estimate
      for (int i = 0; i < adaptation.bufferSize(); i++) {
        clock.advance(333_333);
        arrivals.record(clock.read());
      }
      adapter[0].run();
    };
    window.run(); // DB4 wins against the pinned IP: 1 of 3
    window.run(); // 2 of 3
    operator[0] = new Thread(() -> {
      adapter[0].restart();
      pinned.set(false);
    });
    window.run(); // 3 of 3 counted before the resume: must not move the server
    operator[0].join();
    assertEquals(IP, threading.current(), "moved on a decision made before the resume");
    window.run(); // 1 of 3 after the resume
    window.run(); // 2 of 3
    assertEquals(IP, threading.current());
    window.run();
    assertEquals(DB4, threading.current());
  }

  @Test
  void theHeadroomKeepsTheRobustModelUntilLoadIsWellBelowTheCrossover() {
    ThreadingPolicy policy = new ThreadingPolicy(crossover(), 0.10, 0.25, 1);
    // At 2,000 rps IP predicts 80 us against DB4's 95, but at 2,500 it would predict 310 us: stay.
    assertEquals(DB4, policy.decide(2_000, DB4));
    // At 1,000 rps IP is better at 1,250 too (68.75 vs 93.1 us): move.
    assertEquals(IP, policy.decide(1_000, DB4));
  }

  @Test
  void aMoveTowardsTheModelThatWinsAtHigherLoadComesAtTheCrossover() {
    // In-line saturates past its crossover (~2,033 rps), so the band lies below it only.
    ThreadingPolicy policy = new ThreadingPolicy(crossover(), 0.10, 0.25, 1);
    // At 2,000 rps IP predicts 80 us against DB4's 95: stay.
    assertEquals(IP, policy.decide(2_000, IP));
    // At 2,100 DB4 predicts 95.75 us (+ 10 %: 105.3) against IP's 126, and from there up to 2,625
    // DB4 stays below IP: move, though the estimate may be 2,100 ÷ 1.25 = 1,680 rps, where IP
    // would be faster (75.2 us against 94.2).
    assertEquals(DB4, policy.decide(2_100, IP));
  }

  @Test
  void theBandHoldsAtEveryTrainedLoadInsideItNotOnlyAtItsEnds() {
    // DB4 beats IB at 2,000 rps and from 3,000 on, but not at 2,500 in between (single runs, us).
    ThreadingProfile p = ThreadingProfile.builder()
        .add(IB, 2_000, 100_000).add(IB, 2_500, 100_000).add(IB, 3_000, 1_000_000)
        .add(DB4, 2_000, 50_000).add(DB4, 2_500, 300_000).add(DB4, 3_000, 310_000).build();
    // At 2,000 rps DB4 predicts 50 us (+ 10 %: 55) against IB's 100: with no band, move.
    assertEquals(DB4, new ThreadingPolicy(p, 0.10, 0, 1).decide(2_000, IB));
    // With headroom 0.6 the band runs from 2,000 to 3,200 rps: DB4 is no worse at either end (at
    // 3,200, 314 us against IB's 1,360), but at 2,500 inside it predicts 300 us against 100.
    assertEquals(IB, new ThreadingPolicy(p, 0.10, 0.6, 1).decide(2_000, IB));
  }

  @Test
  void theNoiseHeadroomIsAFixedNumberOfStandardErrorsOfTheEstimate() {
    // e^(2/√45) − 1: the estimate over 45 arrivals has a relative standard error of 1/√45 = 0.149.
    assertEquals(0.3474, ThreadingAdaptation.noiseHeadroom(5, 9), 1e-4);
    assertEquals(ThreadingAdaptation.noiseHeadroom(5, 9), ThreadingAdaptation.of(crossover()).headroom(), 0);
    assertEquals(Math.expm1(2.0 / 30.0), ThreadingAdaptation.noiseHeadroom(100, 9), 1e-12); // 900 arrivals
    assertThrows(IllegalArgumentException.class, () -> ThreadingAdaptation.noiseHeadroom(1, 9));
    assertThrows(IllegalArgumentException.class, () -> ThreadingAdaptation.noiseHeadroom(5, 0));
  }

  @Test
  void winsConfirmEachOtherOnlyOnDisjointArrivals() {
    // Headroom 0.25 for the 45 arrivals of a 5 × 9 estimator, 3 confirmations. At 2,700 rps the band
    // runs from 2,160 (IP 153.6 us, DB4 96.2) to 3,375 (IP 712.5, DB4 105.3), all past the
    // crossover (~2,033), and DB4 beats IP's 402 us by the margin (1.1 × 100.25 us): a win. The
    // wide band, 1.25³ = 1.95 each way, reaches 1,382 rps, where IP is faster: no wide win.
    ThreadingPolicy policy = new ThreadingPolicy(new ThreadingAdaptation(crossover(), 5, 9, 1_000_000, 0.10, 0.25, 3));
    assertEquals(IP, policy.decide(2_700, 45, 1_000, IP)); // 1 of 3
    assertEquals(IP, policy.decide(2_700, 45, 1_020, IP)); // 20 arrivals later: shares 25 of its 45
    assertEquals(IP, policy.decide(2_700, 45, 1_040, IP)); // still shares 5: not counted, not a loss
    assertEquals(IP, policy.decide(2_700, 45, 1_045, IP)); // 45 later: 2 of 3
    assertEquals(IP, policy.decide(1_900, 45, 1_060, IP)); // IP 78.5 us against DB4 94.75: a loss, count over
    assertEquals(IP, policy.decide(2_700, 45, 1_200, IP)); // 1 of 3
    assertEquals(IP, policy.decide(2_700, 45, 1_245, IP)); // 2 of 3
    assertEquals(DB4, policy.decide(2_700, 45, 1_290, IP)); // 3 of 3: move

    // The band narrows as the estimate counts more: at 2,400 rps a 45-arrival estimate's band
    // reaches down to 2,400 ÷ 1.25 = 1,920, below the crossover; one over 180 arrivals errs half as
    // much, and its band, 1.25^√(45/180) = 1.118, reaches down to 2,147 only.
    assertEquals(IP, policy.decide(2_400, 45, 2_000, IP)); // a loss
    assertEquals(IP, policy.decide(2_400, 180, 2_000, IP)); // 1 of 3

    // With no new arrivals (a load that stopped) only the wide band moves: at 6,000 rps it runs
    // from 3,072 to 11,719, where DB4 is predicted below IP throughout, and 3 wins in a row move.
    policy.reset();
    assertEquals(IP, policy.decide(6_000, 45, 3_000, IP));
    assertEquals(IP, policy.decide(6_000, 45, 3_000, IP));
    assertEquals(DB4, policy.decide(6_000, 45, 3_000, IP));
  }

  @Test
  void anInfiniteMarginOrHeadroomIsRefusedRatherThanReadAsNoBarrier() {
    // A margin of +∞ reads as "never move", but 0 ns × ∞ is NaN and every comparison with NaN is
    // false, so against a candidate predicted at 0 ns it let every move through. Likewise an
    // infinite headroom asks for a prediction at ∞ (or 0 × ∞) rps.
    ThreadingProfile p = ThreadingProfile.builder().add(IB, 0, 0).add(IB, 1_000, 0)
        .add(DB4, 0, 50_000).add(DB4, 1_000, 60_000).build();
    for (double bad : new double[] {Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, Double.NaN, -0.1}) {
      assertThrows(IllegalArgumentException.class, () -> new ThreadingPolicy(p, bad, 0, 1), "margin " + bad);
      assertThrows(IllegalArgumentException.class, () -> new ThreadingPolicy(p, 0, bad, 1), "headroom " + bad);
      assertThrows(IllegalArgumentException.class, () -> new ThreadingAdaptation(p, 5, 9, 1_000_000, bad, 0.25, 3),
          "margin " + bad);
      assertThrows(IllegalArgumentException.class, () -> new ThreadingAdaptation(p, 5, 9, 1_000_000, 0.1, bad, 3),
          "headroom " + bad);
    }
  }

  @Test
  void theLoopFollowsLoadAcrossTheCrossoverWithoutOscillating() {
    VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 5_000_000_000L);
    ThreadingAdaptation adaptation = ThreadingAdaptation.of(crossover());
    ArrivalRateEstimator arrivals = new ArrivalRateEstimator(adaptation.bufferSize(), adaptation.smoothing());
    {
      Switch threading = new Switch(adaptation.profile().best(0));
      ThreadingAdapter adapter = new ThreadingAdapter(clock, List.of(arrivals), adaptation, threading::current,
          threading::switchTo);
      clock.every(adaptation.periodNanos(), adapter);
      SplittableRandom random = new SplittableRandom(SEED);
      assertEquals(IP, threading.current());

      poisson(clock, arrivals, random, 500, 300_000_000L);
      assertEquals(IP, threading.current(), "seed " + SEED);
      assertEquals(0, threading.switches());

      long before = clock.read();
      long movedAt = poissonUntil(clock, arrivals, random, 6_000, 300_000_000L, () -> threading.current().equals(DB4));
      assertTrue(movedAt - before <= 20_000_000L, "moved to DB4 after " + (movedAt - before) + " ns, seed " + SEED);
      poisson(clock, arrivals, random, 6_000, 300_000_000L);
      assertEquals(DB4, threading.current());

      // Hovering at the crossover (IP's and DB4's predictions meet at ~2,033 rps), where the two
      // predict the same tail: DB4 stays until three estimates on disjoint arrivals read below
      // 2,033 ÷ 1.347 = 1,509 rps (the band, ThreadingAdaptation.noiseHeadroom: 2 standard errors
      // of a 45-arrival estimate), each with a chance of 2.3 % at 2,030, or three in a row read
      // below 2,033 ÷ 1.347³ = 832; a move at most, not one per estimate.
      long switches = threading.switches();
      poisson(clock, arrivals, random, 2_030, 1_000_000_000L);
      assertTrue(threading.switches() - switches <= 1,
          "switches while hovering: " + (threading.switches() - switches) + ", seed " + SEED);

      poisson(clock, arrivals, random, 300, 300_000_000L);
      assertEquals(IP, threading.current(), "seed " + SEED);
    }
  }

  @Test
  void aNetworkThreadThatHasFallenSilentDoesNotMakeEveryTickADecision() {
    // Two network threads: one read 20 requests and then nothing, the other reads a steady 500/s.
    // The busy thread closes a window every 10 ms, so there is new information about 100 times a
    // second; a decision on each tick (1,000 a second) would count the same estimate many times
    // toward a move's confirmations (ThreadingAdapter's class comment).
    VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 5_000_000_000L);
    ThreadingAdaptation adaptation = ThreadingAdaptation.of(crossover());
    ArrivalRateEstimator quiet = new ArrivalRateEstimator(adaptation.bufferSize(), adaptation.smoothing());
    ArrivalRateEstimator busy = new ArrivalRateEstimator(adaptation.bufferSize(), adaptation.smoothing());
    Switch threading = new Switch(IP);
    long[] decisions = {0};
    ThreadingAdapter adapter = new ThreadingAdapter(clock, List.of(quiet, busy), adaptation, threading::current,
        m -> {
          decisions[0]++;
          threading.switchTo(m);
        });
    clock.every(adaptation.periodNanos(), adapter);
    for (int i = 0; i < 20; i++) {
      clock.advance(1_000_000);
      quiet.record(clock.read());
    }
    clock.advance(1_000_000_000L);
    SplittableRandom random = new SplittableRandom(SEED);
    long before = decisions[0];
    long windowsBefore = busy.recorded() / adaptation.bufferSize();
    poisson(clock, busy, random, 500, 2_000_000_000L);
    long windows = busy.recorded() / adaptation.bufferSize() - windowsBefore;
    long made = decisions[0] - before;
    assertTrue(made <= windows * 3 / 2, "decisions " + made + " for " + windows + " windows, seed " + SEED);
    assertEquals(IP, threading.current());
  }

  @Test
  void whenArrivalsStopTheLoopReturnsToTheLowLoadModel() {
    VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 5_000_000_000L);
    ThreadingAdaptation adaptation = ThreadingAdaptation.of(crossover());
    ArrivalRateEstimator arrivals = new ArrivalRateEstimator(adaptation.bufferSize(), adaptation.smoothing());
    Switch threading = new Switch(IP);
    ThreadingAdapter adapter = new ThreadingAdapter(clock, List.of(arrivals), adaptation, threading::current,
        threading::switchTo);
    clock.every(adaptation.periodNanos(), adapter);
    poisson(clock, arrivals, new SplittableRandom(SEED), 6_000, 300_000_000L);
    assertEquals(DB4, threading.current());
    long stopped = clock.elapsed();
    while (threading.current().equals(DB4) && clock.elapsed() - stopped < 10_000_000_000L) {
      clock.advance(1_000_000);
    }
    assertEquals(IP, threading.current());
    // Silent, the estimate is the arrivals it counts over the time since the oldest of them, a
    // span S at 6,000 rps plus the silence t: it falls to r after t = S × (6,000/r − 1). A silence
    // brings no new arrivals, so only the wide band moves: for the ~54 arrivals an estimate at
    // 6,000 rps counts (a window of ~6 per 1 ms reading) the band is 1.347^√(45/54) = 1.313 and the
    // wide band 1.313³ = 2.26, so back to IP needs r ≤ 2,033 ÷ 2.26 = 898 rps, t = 5.7 S; S is 9
    // windows of ~1 ms, so ~51 ms, and 3 decisions in a row as the silence lowers the estimate
    // (each when it has fallen by one arrival's share, a few ms apart): ~60 ms, 70 for the spread of
    // Poisson windows.
    assertTrue(clock.elapsed() - stopped <= 70_000_000L, "back to IP after " + (clock.elapsed() - stopped) + " ns");
    assertTrue(adapter.lastRate() < 2_000, "rate " + adapter.lastRate());
  }

  /** What runs the requests, reduced to its model and a count of moves. */
  private static final class Switch {
    private ThreadingModel current;
    private long switches;

    Switch(ThreadingModel initial) {
      current = initial;
    }

    ThreadingModel current() {
      return current;
    }

    long switches() {
      return switches;
    }

    void switchTo(ThreadingModel model) {
      if (!model.equals(current)) {
        current = model;
        switches++;
      }
    }
  }

  /** Poisson arrivals at {@code rps} for {@code nanos} of virtual time, recorded as a network thread would. */
  private static void poisson(VirtualClock clock, ArrivalRateEstimator arrivals, SplittableRandom random,
      double rps, long nanos) {
    poissonUntil(clock, arrivals, random, rps, nanos, () -> false);
  }

  private static long poissonUntil(VirtualClock clock, ArrivalRateEstimator arrivals, SplittableRandom random,
      double rps, long nanos, java.util.function.BooleanSupplier stop) {
    long end = clock.read() + nanos;
    while (end - clock.read() > 0) {
      long gap = (long) (-Math.log(1 - random.nextDouble()) / rps * 1e9);
      clock.advance(Math.max(1, gap));
      arrivals.record(clock.read());
      if (stop.getAsBoolean()) {
        return clock.read();
      }
    }
    return clock.read();
  }
}
