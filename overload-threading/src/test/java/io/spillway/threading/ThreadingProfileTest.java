package io.spillway.threading;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.threading.ThreadingProfile.Curve;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The trained profile with repetitions (mutune-osdi18 §4 "Training phase", §5: several measurements
 * per point): median, fastest and slowest curves, each fitted non-decreasing in load, and the CSV.
 */
class ThreadingProfileTest {

  private static final ThreadingModel IB = ThreadingModel.parse("IB");
  private static final ThreadingModel DB16 = ThreadingModel.parse("DB16");

  @Test
  void poolAdjacentViolatorsWithLiteralNumbers() {
    assertArrayEquals(new double[] {1, 2.5, 2.5, 3.5, 3.5, 3.5, 6},
        ThreadingProfile.isotonic(new double[] {1, 3, 2, 4, 3.5, 3, 6}), 1e-12);
    // A merge that cascades back: 6 and 1 pool to 3.5, then 2 pulls the block to 3; 3 does not fall.
    assertArrayEquals(new double[] {3, 3, 3, 3}, ThreadingProfile.isotonic(new double[] {6, 1, 2, 3}), 1e-12);
    assertArrayEquals(new double[] {1, 2, 3}, ThreadingProfile.isotonic(new double[] {1, 2, 3}), 1e-12);
    assertArrayEquals(new double[] {2, 2, 2}, ThreadingProfile.isotonic(new double[] {3, 2, 1}), 1e-12);
    assertArrayEquals(new double[] {7}, ThreadingProfile.isotonic(new double[] {7}), 1e-12);
  }

  @Test
  void weightedPoolsTakeTheWeightedMean() {
    // 4 with weight 1 and 1 with weight 3 fall: (4 + 3) / 4 = 1.75 for both.
    assertArrayEquals(new double[] {1.75, 1.75},
        ThreadingProfile.isotonic(new double[] {4, 1}, new double[] {1, 3}), 1e-12);
    // 6 (w 1) and 1 (w 9) pool to 1.5; 2 (w 10) does not fall below it; 1 (w 10) pools with 2 to 1.5,
    // which does not fall below the first block either.
    assertArrayEquals(new double[] {1.5, 1.5, 1.5, 1.5},
        ThreadingProfile.isotonic(new double[] {6, 1, 2, 1}, new double[] {1, 9, 10, 10}), 1e-12);
    // equal weights: the unweighted fit
    assertArrayEquals(ThreadingProfile.isotonic(new double[] {1, 3, 2, 4, 3.5, 3, 6}),
        ThreadingProfile.isotonic(new double[] {1, 3, 2, 4, 3.5, 3, 6}, new double[] {2, 2, 2, 2, 2, 2, 2}), 1e-12);
  }

  @Test
  void aTrainedCurveThatFallsWithLoadIsFittedFlat() {
    // IB's single-run training on sockets (µs): its p99 at 50 rps above its p99 at 500 rps, pooled
    // by the requests behind each, i.e. weighted by load: (1406.0·50 + 775.7·500) / 550 = 833.0 µs.
    ThreadingProfile p = ThreadingProfile.builder().add(IB, 50, 1_406_000).add(IB, 500, 775_700)
        .add(IB, 1_500, 1_508_400).add(IB, 3_000, 3_311_600).build();
    assertEquals(833_000, p.predictNanos(IB, 50), 1e-6);
    assertEquals(833_000, p.predictNanos(IB, 275), 1e-6);
    assertEquals(833_000, p.predictNanos(IB, 500), 1e-6);
    assertEquals(1_170_700, p.predictNanos(IB, 1_000), 1e-6); // halfway from 833.0 to 1508.4 µs
    assertEquals(3_311_600, p.predictNanos(IB, 3_000), 1e-6);
    // One run: the three curves are the same curve.
    for (Curve c : Curve.values()) {
      assertEquals(833_000, p.predictNanos(IB, 50, c), 1e-6, c.name());
    }
  }

  @Test
  void repetitionsGiveMedianFastestAndSlowestCurvesEachMonotone() {
    ThreadingProfile p = ThreadingProfile.builder()
        .add(IB, 100, 40_000).add(IB, 100, 100_000).add(IB, 100, 60_000)
        .add(IB, 50, 30_000).add(IB, 50, 200_000)
        .build();
    assertArrayEquals(new double[] {50, 100}, p.loads(IB), 0);
    assertArrayEquals(new double[] {40_000, 100_000, 60_000}, p.repetitions(IB, 100), 0); // as added
    // Medians 115 µs at 50 rps and 60 µs at 100 rps fall: pooled, weighted by load, to
    // (115·50 + 60·100) / 150 = 78.33 µs.
    assertEquals(235_000.0 / 3, p.predictNanos(IB, 50, Curve.MEDIAN), 1e-6);
    assertEquals(235_000.0 / 3, p.predictNanos(IB, 100), 1e-6);
    // Fastest 30 then 40 µs: already rising.
    assertEquals(30_000, p.predictNanos(IB, 50, Curve.FASTEST), 1e-6);
    assertEquals(35_000, p.predictNanos(IB, 75, Curve.FASTEST), 1e-6);
    assertEquals(40_000, p.predictNanos(IB, 100, Curve.FASTEST), 1e-6);
    // Slowest 200 then 100 µs: pooled to (200·50 + 100·100) / 150 = 133.33 µs.
    assertEquals(400_000.0 / 3, p.predictNanos(IB, 50, Curve.SLOWEST), 1e-6);
    assertEquals(400_000.0 / 3, p.predictNanos(IB, 100, Curve.SLOWEST), 1e-6);
    assertThrows(IllegalArgumentException.class, () -> p.repetitions(IB, 75));
  }

  @Test
  void theCsvKeepsEveryRepetition(@TempDir Path dir) throws Exception {
    ThreadingProfile p = ThreadingProfile.builder()
        .add(IB, 500, 775_700).add(IB, 500, 2_709_500).add(IB, 500, 1_000_000)
        .add(DB16, 500, 629_200).add(IB, 50, 1_406_000)
        .build();
    Path file = dir.resolve("profile.csv");
    p.write(file);
    assertEquals("""
        model,rps,rep,p99_us
        IB,50.0,0,1406.0
        IB,500.0,0,775.7
        IB,500.0,1,2709.5
        IB,500.0,2,1000.0
        DB16,500.0,0,629.2
        """, Files.readString(file));
    ThreadingProfile back = ThreadingProfile.read(file);
    assertEquals(p.models(), back.models());
    assertArrayEquals(new double[] {775_700, 2_709_500, 1_000_000}, back.repetitions(IB, 500), 1e-6);
    assertArrayEquals(new double[] {1_406_000}, back.repetitions(IB, 50), 1e-6);
    for (Curve c : Curve.values()) {
      assertEquals(p.predictNanos(IB, 300, c), back.predictNanos(IB, 300, c), 1e-6, c.name());
    }
  }

  @Test
  void aSingleRunProfileWithoutRepetitionsStillLoads(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("old.csv");
    Files.writeString(file, "model,rps,p99_us\nIB,50.0,1406.0\nIB,500.0,775.7\nDB16,50.0,629.2\n");
    ThreadingProfile p = ThreadingProfile.read(file);
    assertArrayEquals(new double[] {775_700}, p.repetitions(IB, 500), 1e-6);
    assertEquals(629_200, p.predictNanos(DB16, 50, Curve.FASTEST), 1e-6);
    assertEquals(629_200, p.predictNanos(DB16, 50, Curve.SLOWEST), 1e-6);
    Files.writeString(file, "model,rps,rep,p99_us\nIB,100,0,40\nIB,100,-1,2\n");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ThreadingProfile.read(file));
    assertTrue(e.getMessage().contains(":3:"), e.getMessage());
  }
}
