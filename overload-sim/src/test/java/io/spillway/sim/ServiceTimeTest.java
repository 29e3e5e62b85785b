package io.spillway.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The service-time distributions: each has the mean it is given and the p99 it states. */
class ServiceTimeTest {

  private static final long SEED = Long.getLong("spillway.test.seed", 42);

  private static long[] draw(ServiceTime t, int n) {
    System.out.println("ServiceTimeTest seed " + SEED + " (set -Dspillway.test.seed to repeat)");
    SplittableRandom random = new SplittableRandom(SEED);
    long[] v = new long[n];
    for (int i = 0; i < n; i++) {
      v[i] = t.sample(random);
    }
    Arrays.sort(v);
    return v;
  }

  @Test
  void everyShapeHasItsMeanAndItsP99() {
    for (String kind : new String[] {"exp", "const", "bimodal", "lognormal"}) {
      ServiceTime t = ServiceTime.parse(kind, 10_000);
      long[] v = draw(t, 400_000);
      double mean = Arrays.stream(v).average().orElseThrow();
      // The lognormal's mean converges slowly (its variance is e^{σ²} − 1 ≈ 8.5 times the squared mean).
      assertEquals(10_000, mean, kind.equals("lognormal") ? 400 : 100, kind + " mean");
      double p99 = v[(int) (v.length * 0.99)];
      assertEquals(t.p99Nanos(), p99, t.p99Nanos() * 0.03 + 1, kind + " p99");
    }
  }

  @Test
  void theLognormalIsHeavyTailed() {
    ServiceTime t = ServiceTime.parse("lognormal", 10_000);
    assertEquals(106_000, t.p99Nanos(), 1_000, "p99 about 10.6 x the mean");
    long[] v = draw(t, 400_000);
    assertTrue(v[v.length / 2] < 4_000, "the median is well below the mean: " + v[v.length / 2]);
    assertTrue(v[(int) (v.length * 0.9999)] > 500_000, "one in 10,000 over 50 x the mean");
  }

  @Test
  void unknownShapesNameTheKnownOnes() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> ServiceTime.parse("pareto", 10_000));
    assertTrue(e.getMessage().contains("lognormal"), e.getMessage());
  }
}
