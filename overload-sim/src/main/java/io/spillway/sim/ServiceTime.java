package io.spillway.sim;

import java.util.SplittableRandom;

/**
 * A service-time distribution with a given mean, as breakwater-osdi20 §5.2 uses them:
 * exponential, constant, and bimodal (80 % of requests take mean/4, 20 % take 4 × mean, so the
 * mean is 0.8·m/4 + 0.2·4m = m).
 *
 * @param kind the distribution
 * @param meanNanos the mean service time
 */
public record ServiceTime(Kind kind, long meanNanos) {

  /** The shapes of distribution. */
  public enum Kind { EXP, CONST, BIMODAL }

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
      default -> throw Scenario.invalid("service",
          "expected exp, const or bimodal, got '" + name + "'");
    };
  }

  /** The distribution's 99th percentile: exponential m·ln 100, constant m, bimodal 4m. */
  public long p99Nanos() {
    return switch (kind) {
      case EXP -> Math.round(meanNanos * Math.log(100));
      case CONST -> meanNanos;
      case BIMODAL -> meanNanos * 4;
    };
  }

  /** Draws one service time in nanoseconds, at least 1. */
  public long sample(SplittableRandom random) {
    long v = switch (kind) {
      case EXP -> Math.round(-Math.log(1.0 - random.nextDouble()) * meanNanos);
      case CONST -> meanNanos;
      case BIMODAL -> random.nextDouble() < 0.8 ? meanNanos / 4 : meanNanos * 4;
    };
    return Math.max(1, v);
  }

  @Override
  public String toString() {
    return kind.name().toLowerCase(java.util.Locale.ROOT) + "(" + meanNanos / 1000.0 + "us)";
  }
}
