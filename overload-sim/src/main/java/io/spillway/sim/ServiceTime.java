package io.spillway.sim;

import java.util.SplittableRandom;

/**
 * A service-time distribution with a given mean, as breakwater-osdi20 §5.2 uses them:
 * exponential, constant, and bimodal (80 % of requests take mean/4, 20 % take 4 × mean, so the
 * mean is 0.8·m/4 + 0.2·4m = m); and a heavy-tailed lognormal beyond the paper's three (σ =
 * {@value #LOGNORMAL_SIGMA}: the p99 is about 10.6 × the mean and one request in 10,000 takes over
 * 50 × it), the shape of services whose few slow requests dominate the tail.
 *
 * @param kind the distribution
 * @param meanNanos the mean service time
 */
public record ServiceTime(Kind kind, long meanNanos) {

  /** The shapes of distribution. */
  public enum Kind { EXP, CONST, BIMODAL, LOGNORMAL }

  /** The lognormal's σ (the standard deviation of the logarithm of a service time). */
  public static final double LOGNORMAL_SIGMA = 1.5;

  /** The standard normal's 99th percentile. */
  private static final double Z99 = 2.3263478740408408;

  public ServiceTime {
    if (meanNanos <= 0) {
      throw new IllegalArgumentException("mean service time must be positive: " + meanNanos);
    }
  }

  static ServiceTime parse(String name, long meanNanos) {
    return switch (name.strip().toLowerCase(java.util.Locale.ROOT)) {
      case "exp", "exponential" -> new ServiceTime(Kind.EXP, meanNanos);
      case "const", "constant" -> new ServiceTime(Kind.CONST, meanNanos);
      case "bimodal" -> new ServiceTime(Kind.BIMODAL, meanNanos);
      case "lognormal" -> new ServiceTime(Kind.LOGNORMAL, meanNanos);
      default -> throw Scenario.invalid("service",
          "expected exp, const, bimodal or lognormal, got '" + name + "'");
    };
  }

  /**
   * The distribution's 99th percentile: exponential m·ln 100, constant m, bimodal 4m, lognormal
   * m·exp(σ·z₀.₉₉ − σ²/2).
   */
  public long p99Nanos() {
    return switch (kind) {
      case EXP -> Math.round(meanNanos * Math.log(100));
      case CONST -> meanNanos;
      case BIMODAL -> meanNanos * 4;
      case LOGNORMAL -> Math.round(meanNanos * Math.exp(LOGNORMAL_SIGMA * Z99
          - LOGNORMAL_SIGMA * LOGNORMAL_SIGMA / 2));
    };
  }

  /** Draws one service time in nanoseconds, at least 1. */
  public long sample(SplittableRandom random) {
    long v = switch (kind) {
      case EXP -> Math.round(-Math.log(1.0 - random.nextDouble()) * meanNanos);
      case CONST -> meanNanos;
      case BIMODAL -> random.nextDouble() < 0.8 ? meanNanos / 4 : meanNanos * 4;
      // exp(μ + σZ) with μ = ln m − σ²/2, so that the mean is m.
      case LOGNORMAL -> Math.round(meanNanos * Math.exp(LOGNORMAL_SIGMA * random.nextGaussian()
          - LOGNORMAL_SIGMA * LOGNORMAL_SIGMA / 2));
    };
    return Math.max(1, v);
  }

  @Override
  public String toString() {
    return kind.name().toLowerCase(java.util.Locale.ROOT) + "(" + meanNanos / 1000.0 + "us)";
  }
}
