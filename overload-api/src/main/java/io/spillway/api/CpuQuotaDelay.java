package io.spillway.api;

import io.spillway.api.internal.CgroupCpu;
import io.spillway.api.internal.CgroupCpu.Quota;
import java.lang.System.Logger.Level;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A CPU quota as a queueing-delay stage: how near the process is to the freeze the kernel
 * imposes once its quota is spent, read as a share of that freeze, for a process in a Linux
 * control group with a CPU bandwidth limit (a container's CPU limit: Kubernetes {@code
 * resources.limits.cpu}, Docker {@code --cpus}).
 *
 * <p><b>Why a stage of its own.</b> The kernel gives such a group {@code quota} Q of CPU time in
 * every {@code period} P (100 ms by default) and stops every one of its threads once that is
 * spent, until the period ends. A server whose load exceeds its quota therefore runs for part of
 * each period and stands still for the rest: half a core's quota on a core runs 50 ms and stops
 * 50 ms. While it stands still nothing in the process runs, so no queue it keeps is stamped; the
 * calls that arrive wait in the kernel's socket buffers, and the process reads them afterwards as
 * if they had just come. Breakwater's signal is the delay requests spend waiting
 * (breakwater-osdi20 §3.1), and that wait is unseen by any stage inside the process. Nor can a
 * concurrency limit prevent it: a single call at a time already uses a whole core, above a
 * fractional quota. What keeps a server out of the freeze is keeping its use under the quota,
 * which the gates can do only by refusing at a rate, as AQM does while the delay it reads stays
 * above its threshold (breakwater-osdi20 §3.2.3).
 *
 * <p><b>The signal.</b> Every sample reads the group's cumulative CPU usage (the counter the
 * quota is charged against) and the usage U over the last period, a sliding window: if U stays
 * under the quota in every window of one period's length, it does in each of the kernel's own
 * periods whatever their phase. The stage aims at the quota less a tenth ({@value
 * #HEADROOM_DIVISOR}: the work already admitted when a sample shows the excess, and the samples'
 * spacing) and reports the share of that tenth spent, times the freeze that spending the whole
 * quota at full speed brings, F = P − Q/n (n the CPUs the process may run on):
 *
 * <pre>
 *   delay = max(0, U − (Q − Q/10)) / (Q/10) · (P − Q/n)
 * </pre>
 *
 * <p>At the aim it reads zero; at the quota, F: 50 ms for half a core on one CPU. Gates read it as
 * they read a queue's delay: above the target their limits shrink, above the AQM threshold they
 * refuse, and as the window slides past the excess the delay falls back to zero. The scale is the
 * freeze because that is the wait the stage stands for: a service whose AQM threshold lies below
 * it (an SLO the freeze would break) is held at the aim, and one whose SLO absorbs the freeze
 * (a threshold above F) reads the stage below its threshold and keeps its whole quota. The excess
 * as time at the quota's rate would not do: a throttled group cannot use more than its quota, so
 * that reads about P/10 at most, at the AQM threshold of an 11.7 ms SLO (9.4 ms), and a Spring
 * service with that SLO froze in 44–53 of 60 periods with it (docs/results/spring.md, "A
 * container's CPU limit").
 *
 * <p><b>Why a rate and not the kernel's schedule.</b> Admitting everything until nine tenths of
 * the period's quota are spent and refusing everything until the refill would keep a busy
 * server's lower cost per call, but not the freeze away: the calls already admitted and the
 * refusals of the rest of the period (each costs the quota too, tens of microseconds on gRPC)
 * spend more than the tenth kept, the more the higher the demand (docs/results/grpc.md, "A
 * container's CPU limit"). Steering the usage over every window counts the refusals' cost as it
 * comes.
 *
 * <p><b>Cost.</b> A sample reads one small file kept open (a few microseconds); the signal takes
 * one at most every millisecond (or a 128th of the period if longer), driven by the reads, with
 * no thread of its own; other reads return the last value. Where no group or no quota is found,
 * or the quota is no less than the CPUs the process may run on (so that it cannot be spent before
 * its period ends), {@link #detect} returns empty and the server pays nothing.
 *
 * <p>Thread-safe: one reader at a time samples (the others return the last value).
 */
public final class CpuQuotaDelay implements QueueDelaySignal {

  private static final System.Logger LOG = System.getLogger(CpuQuotaDelay.class.getName());
  /** The stage aims at the quota less this fraction of it. */
  static final int HEADROOM_DIVISOR = 10;
  static final long MIN_SAMPLE_NANOS = 1_000_000;
  /** The quota is read again this often, so a changed limit is followed. */
  static final long QUOTA_REFRESH_NANOS = 1_000_000_000;
  /** Samples kept: two periods' worth at the spacing below. */
  static final int SAMPLES = 256;

  /** The group's files, or a test's numbers. */
  interface Group {
    /** The limit that binds, or {@code null} where none is set. */
    Quota quota();

    /** The cumulative CPU usage the limit is charged against, or -1 if it cannot be read. */
    long usageNanos();
  }

  private final Group group;
  /** The CPUs the process may run on: the quota is spent at most this fast. */
  private final int cpus;
  private final AtomicBoolean sampling = new AtomicBoolean();
  private final long[] times = new long[SAMPLES];
  private final long[] usages = new long[SAMPLES];
  /** Index of the newest sample, and how many are held. */
  private int newest = -1;
  private int held;
  /** Written by the sampler, read by every caller. */
  private volatile Quota quota;
  private long quotaReadAt;
  private volatile boolean sampledOnce;
  private volatile long lastSampleAt;
  private volatile long delay;

  CpuQuotaDelay(Group group, Quota initial, int cpus, long nowNanos) {
    this.group = Objects.requireNonNull(group, "group");
    if (cpus < 1) {
      throw new IllegalArgumentException("cpus: at least 1, got " + cpus);
    }
    this.cpus = cpus;
    this.quota = initial;
    this.quotaReadAt = nowNanos;
  }

  /**
   * The stage for this process's control group, or empty where the process has no CPU quota
   * below the CPUs it may run on (or it cannot be read): then no stage is needed. The group is
   * the process's, so every server in it shares one stage, found and logged at the first call.
   * Empty too for any clock but {@link Ticker#system()}: the usage the stage reads is the
   * machine's, measured against time as the machine keeps it, and against a virtual clock (tests,
   * the simulator) the two would not agree.
   *
   * @param ticker the clock the signal is read with
   */
  public static Optional<CpuQuotaDelay> detect(Ticker ticker) {
    Objects.requireNonNull(ticker, "ticker");
    return ticker == Ticker.system() ? ProcessStage.STAGE : Optional.empty();
  }

  /** The process's stage, found when first asked for (the JVM's lazy holder idiom). */
  private static final class ProcessStage {
    static final Optional<CpuQuotaDelay> STAGE = detect(Ticker.system(), Path.of("/"));
  }

  /** As {@link #detect(Ticker)}, with {@code /proc} and {@code /sys} read under {@code root}. */
  static Optional<CpuQuotaDelay> detect(Ticker ticker, Path root) {
    Objects.requireNonNull(ticker, "ticker");
    if (ticker != Ticker.system()) {
      return Optional.empty();
    }
    Optional<CgroupCpu> cgroup = CgroupCpu.locate(root);
    if (cgroup.isEmpty()) {
      return Optional.empty();
    }
    CgroupCpu g = cgroup.get();
    Quota q = g.quota();
    if (q == null || g.usageNanos() < 0) {
      return Optional.empty();
    }
    int allowed = CgroupCpu.allowedCpus(root);
    int cpus = allowed > 0 ? allowed : Runtime.getRuntime().availableProcessors();
    if (q.cores() >= cpus) {
      LOG.log(Level.INFO, String.format(Locale.ROOT, "Spillway does not watch this process's CPU "
          + "quota: %.2f cores, no fewer than the %d CPUs it may run on", q.cores(), cpus));
      return Optional.empty();
    }
    LOG.log(Level.INFO, String.format(Locale.ROOT, "Spillway keeps this process's CPU use under its "
        + "control group's quota: %.2f cores (%d ms every %d ms)", q.cores(),
        q.quotaNanos() / 1_000_000, q.periodNanos() / 1_000_000));
    return Optional.of(new CpuQuotaDelay(new Group() {
      @Override
      public Quota quota() {
        return g.quota();
      }

      @Override
      public long usageNanos() {
        return g.usageNanos();
      }
    }, q, cpus, ticker.read()));
  }

  @Override
  public long queueingDelayNanos(long nowNanos) {
    Quota q = quota;
    long every = q == null ? MIN_SAMPLE_NANOS : Math.max(MIN_SAMPLE_NANOS, q.periodNanos() / 128);
    if ((!sampledOnce || nowNanos - lastSampleAt >= every) && sampling.compareAndSet(false, true)) {
      try {
        sample(nowNanos);
      } finally {
        sampling.set(false);
      }
    }
    return delay;
  }

  /** The quota the stage steers by now, in cores, or 0 while none is set. */
  public double quotaCores() {
    Quota q = quota;
    return q == null ? 0 : q.cores();
  }

  /** Takes one sample; called by one thread at a time. */
  private void sample(long now) {
    if (now - quotaReadAt >= QUOTA_REFRESH_NANOS) {
      quota = group.quota();
      quotaReadAt = now;
    }
    lastSampleAt = now;
    sampledOnce = true;
    Quota q = quota;
    long u = q == null ? -1 : group.usageNanos();
    if (u < 0) {
      delay = 0;
      return;
    }
    if (held > 0 && u < usages[newest]) {
      held = 0; // the counter went back: a new group; start over
    }
    newest = (newest + 1) % SAMPLES;
    times[newest] = now;
    usages[newest] = u;
    held = Math.min(held + 1, SAMPLES);
    long used = usedInLastPeriod(q.periodNanos());
    delay = used < 0 ? 0 : delayNanos(used, q.quotaNanos(), q.periodNanos(), cpus);
  }

  /**
   * The usage over the last {@code period} before the newest sample, interpolated between the
   * two samples around its start; scaled up from the oldest sample while fewer than a period's
   * samples are held; -1 while the samples span less than one spacing.
   */
  private long usedInLastPeriod(long period) {
    long now = times[newest];
    long u = usages[newest];
    long start = now - period;
    int later = newest;
    for (int k = 1; k < held; k++) {
      int i = Math.floorMod(newest - k, SAMPLES);
      if (times[i] - start <= 0) {
        long span = times[later] - times[i];
        long at = usages[i] + (span <= 0 ? 0
            : Math.round((double) (usages[later] - usages[i]) * (start - times[i]) / span));
        return u - at;
      }
      later = i;
    }
    int oldest = Math.floorMod(newest - (held - 1), SAMPLES);
    long span = now - times[oldest];
    if (held < 2 || span < MIN_SAMPLE_NANOS) {
      return -1;
    }
    return Math.round((double) (u - usages[oldest]) * period / span);
  }

  /**
   * The delay for {@code usedNanos} of CPU in the last period under a quota of {@code quotaNanos}
   * every {@code periodNanos}, spent at most {@code cpus} times as fast as time passes: the share
   * of the headroom spent times the freeze a whole quota spent at full speed brings (class
   * comment).
   */
  static long delayNanos(long usedNanos, long quotaNanos, long periodNanos, int cpus) {
    long headroom = quotaNanos / HEADROOM_DIVISOR;
    long excess = usedNanos - (quotaNanos - headroom);
    long freeze = periodNanos - quotaNanos / cpus;
    if (excess <= 0 || freeze <= 0 || headroom <= 0) {
      return 0;
    }
    return Math.round((double) excess / headroom * freeze);
  }
}
