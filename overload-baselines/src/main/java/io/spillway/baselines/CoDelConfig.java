package io.spillway.baselines;

/**
 * CoDel's two parameters (RFC 8289 §4.3, §4.4).
 *
 * <p>The RFC's defaults, 5 ms target and 100 ms interval, are for packet queues on the Internet;
 * breakwater-osdi20 §2.2 instead tunes CoDel's threshold "to achieve the highest goodput given an
 * SLO of 200 µs". {@link #forSlo} gives the values tuned that way in Spillway's simulator for the
 * synthetic workload of §5.2 (exponential 10 µs service, 10 µs RTT, 200 µs SLO), scaled with the
 * SLO: see scenarios/baselines-fig3.conf for the run.
 *
 * <p>Immutable and thread-safe.
 *
 * @param targetNanos the queueing delay CoDel steers to
 * @param intervalNanos how long delay must stay above target before dropping starts, and the base
 *     of the control law's drop spacing
 */
public record CoDelConfig(long targetNanos, long intervalNanos) {

  public CoDelConfig {
    if (targetNanos <= 0 || intervalNanos <= 0) {
      throw new IllegalArgumentException("CoDel target and interval must be positive: target="
          + targetNanos + " interval=" + intervalNanos);
    }
  }

  /**
   * The tuned defaults for a workload with the given SLO: target 15 % of the SLO, interval 5 % (30
   * µs and 10 µs for the 200 µs SLO). An interval this short makes CoDel nearly a threshold dropper:
   * at µs scale the sources are open-loop and do not back off, and a long interval lets a queue of
   * several SLOs build before the control law's drop rate catches up with the excess (Spillway's
   * sweep: 100 µs intervals leave under 2 % of capacity as goodput at 2× demand, 10 µs about 82 %).
   */
  public static CoDelConfig forSlo(long sloNanos) {
    if (sloNanos <= 0) {
      throw new IllegalArgumentException("SLO must be positive: " + sloNanos);
    }
    return new CoDelConfig(sloNanos * 3 / 20, sloNanos / 20);
  }

  /** These values with another target. */
  public CoDelConfig withTarget(long nanos) {
    return new CoDelConfig(nanos, intervalNanos);
  }

  /** These values with another interval. */
  public CoDelConfig withInterval(long nanos) {
    return new CoDelConfig(targetNanos, nanos);
  }

  @Override
  public String toString() {
    return "CoDelConfig[target=" + targetNanos / 1000.0 + "us, interval=" + intervalNanos / 1000.0 + "us]";
  }
}
