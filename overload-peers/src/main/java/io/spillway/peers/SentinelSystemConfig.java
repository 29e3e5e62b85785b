package io.spillway.peers;

/**
 * The thresholds of the one Sentinel {@code SystemRule} (sentinel-core 1.8.9) that {@link
 * SentinelSystemProtection} loads: Sentinel's system adaptive protection, with the system-load
 * trigger and, optionally, the CPU-usage one. {@link #OFF} ({@code -1}, Sentinel's own "not set")
 * leaves a trigger out.
 *
 * <p>{@link #defaults()} is what Sentinel's documentation advises for protecting a service without
 * per-workload numbers (its "Adaptive System Protection" page,
 * https://github.com/alibaba/Sentinel/wiki/Adaptive-System-Protection, and the Chinese page it
 * translates, https://sentinelguard.io/zh-cn/docs/system-adaptive-protection.html):
 *
 * <ul>
 *   <li><b>highestSystemLoad = 2.5 × cores</b>, the reference value those pages give for the load
 *       trigger ("CPU cores * 2.5"), with the cores this JVM may run on ({@link
 *       Runtime#availableProcessors()}, which honours a CPU affinity mask or a container's quota).
 *       Load is the adaptive mode the pages present: exceeding it only arms the check; what is then
 *       refused is decided by the BBR-style estimate of capacity (see {@link
 *       SentinelSystemProtection}).
 *   <li><b>highestCpuUsage off.</b> The pages describe the CPU-usage trigger as a plain threshold
 *       in [0, 1] that refuses every inbound request while it is exceeded ("relatively sensitive")
 *       and give no reference value; it is available through {@link #withHighestCpuUsage}.
 *   <li>No inbound QPS, average RT or concurrency threshold: each is a per-workload number.
 * </ul>
 *
 * <p>Immutable and thread-safe.
 *
 * @param highestSystemLoad the load1 above which the BBR check applies, at least 0, or {@link #OFF}
 * @param highestCpuUsage the CPU usage in [0, 1] above which every inbound request is refused, or
 *     {@link #OFF}
 */
public record SentinelSystemConfig(double highestSystemLoad, double highestCpuUsage) {

  /** Sentinel's value for a threshold that is not set. */
  public static final double OFF = -1;

  /** The load1 per core that Sentinel's documentation gives as the reference threshold. */
  public static final double LOAD_PER_CORE = 2.5;

  public SentinelSystemConfig {
    if (!(highestSystemLoad == OFF || highestSystemLoad >= 0 && Double.isFinite(highestSystemLoad))) {
      throw new IllegalArgumentException("highest system load must be at least 0, or -1 for off: "
          + highestSystemLoad);
    }
    if (!(highestCpuUsage == OFF || highestCpuUsage >= 0 && highestCpuUsage <= 1)) {
      throw new IllegalArgumentException("highest CPU usage must be in [0, 1], or -1 for off: "
          + highestCpuUsage);
    }
    if (highestSystemLoad == OFF && highestCpuUsage == OFF) {
      throw new IllegalArgumentException("set the system load or the CPU usage threshold (or both)");
    }
  }

  /** The documented defaults for the cores this JVM may run on: load 2.5 × cores, CPU usage off. */
  public static SentinelSystemConfig defaults() {
    return forCores(Runtime.getRuntime().availableProcessors());
  }

  /** The documented defaults for a server with {@code cores} cores. */
  public static SentinelSystemConfig forCores(int cores) {
    if (cores < 1) {
      throw new IllegalArgumentException("cores must be at least 1: " + cores);
    }
    return new SentinelSystemConfig(LOAD_PER_CORE * cores, OFF);
  }

  /** These thresholds with another load trigger ({@link #OFF} for none). */
  public SentinelSystemConfig withHighestSystemLoad(double load) {
    return new SentinelSystemConfig(load, highestCpuUsage);
  }

  /** These thresholds with another CPU-usage trigger ({@link #OFF} for none). */
  public SentinelSystemConfig withHighestCpuUsage(double usage) {
    return new SentinelSystemConfig(highestSystemLoad, usage);
  }
}
