package io.spillway.spring.internal;

import io.spillway.api.QueueDelaySignal;
import io.spillway.api.Ticker;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.System.Logger.Level;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The kernel's run queue as a queueing stage: how long admitted requests waited for a CPU while
 * they ran, read from Linux's per-thread scheduler statistics.
 *
 * <p>A servlet container runs each request on a thread of a large pool (Tomcat: 200). While fewer
 * requests are in flight than there are threads, the pool's queue stays empty, and the requests
 * that do run share the CPUs by time slices: the queue they wait in is the kernel's run queue,
 * which no executor sees. Breakwater's signal is the time requests spend waiting rather than being
 * served (breakwater-osdi20 §3.1); here that time is the second field of
 * {@code /proc/thread-self/schedstat}, the nanoseconds the thread has spent runnable but not running
 * (the kernel's {@code sched_info.run_delay}). The filter reads it before and after the handler on
 * the same platform thread; the difference is the request's wait for the CPU, however many time
 * slices it was cut into.
 *
 * <p>The stage reports an exponentially weighted mean of those waits (weight {@value #WEIGHT_SHIFT}
 * as a shift: 1/8 per sample), as a sojourn-time signal does (CoDel measures the sojourn of
 * departing packets, Nichols and Jacobson 2012). A wait is known only when its request ends, so a
 * gate that refuses everything while the mean is high would never see it fall: a mean whose newest
 * sample is older than {@link #STALE_NANOS} reads zero.
 *
 * <p>Cost: two reads of a procfs file and of the thread's CPU clock (about 1–2.5 µs and 0.6 µs
 * each on this project's test machine) on one admitted request in {@value #SAMPLE_EVERY}, chosen at
 * random, none on the others. Virtual threads
 * are not sampled: {@code thread-self} is their carrier, which may change while the request runs;
 * their carrier queue is measured by the carrier dispatcher instead.
 *
 * <p>Thread-safe.
 */
public final class RunQueueDelay implements QueueDelaySignal {

  private static final System.Logger LOG = System.getLogger(RunQueueDelay.class.getName());
  static final String PATH = "/proc/thread-self/schedstat";
  /** One admitted request in this many is sampled. */
  static final int SAMPLE_EVERY = 4;
  static final int WEIGHT_SHIFT = 3;
  /** A mean with no sample this recent reads zero. */
  static final long STALE_NANOS = 20_000_000;

  /**
   * The calling thread's totals: fills {@code into[0]} with its CPU time and {@code into[1]} with
   * its run-queue wait, in nanoseconds; false if they cannot be read.
   */
  interface Source {
    boolean read(long[] into);
  }

  /**
   * Per thread: [0] CPU time and [1] run-queue wait at {@link #begin}, then at {@link #end}; [2]
   * the CPU time of the sample {@link #end} ended last.
   */
  private static final ThreadLocal<long[]> MARKS = ThreadLocal.withInitial(() -> new long[3]);

  private final Ticker ticker;
  private final Source source;
  private final int sampleEvery;
  private final AtomicLong mean = new AtomicLong();
  private volatile long newestSampleAt;
  private volatile boolean sampled;

  RunQueueDelay(Ticker ticker, Source source, int sampleEvery) {
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    this.source = Objects.requireNonNull(source, "source");
    this.sampleEvery = sampleEvery;
  }

  /**
   * The stage on this JVM, or empty (with the reason logged once) where the kernel does not keep
   * per-thread run-queue waits readable.
   */
  public static Optional<RunQueueDelay> create(Ticker ticker) {
    String why = ProcSchedstat.unavailabilityCause();
    if (why != null) {
      LOG.log(Level.INFO, "Spillway does not measure the CPU run queue: " + why);
      return Optional.empty();
    }
    return Optional.of(new RunQueueDelay(ticker, new ProcSchedstat(), SAMPLE_EVERY));
  }

  /**
   * Starts a sample on the calling thread, if this request is to be sampled: reads its totals and
   * returns true. Call {@link #end} on the same thread if it did.
   */
  public boolean begin() {
    if (Thread.currentThread().isVirtual()
        || (sampleEvery > 1 && ThreadLocalRandom.current().nextInt(sampleEvery) != 0)) {
      return false;
    }
    return source.read(MARKS.get());
  }

  /**
   * Ends the sample {@link #begin} started on this thread: returns the request's wait for the CPU
   * since then, or -1 if it could not be read; {@link #cpuNanos} then tells its CPU time.
   */
  public long end() {
    long[] m = MARKS.get();
    long cpu = m[0];
    long wait = m[1];
    if (!source.read(m) || m[0] < cpu || m[1] < wait) {
      m[2] = -1;
      return -1;
    }
    m[2] = m[0] - cpu;
    record(m[1] - wait, ticker.read());
    return m[1] - wait;
  }

  /** The CPU time of the sample {@link #end} ended last on this thread, or -1. */
  public long cpuNanos() {
    return MARKS.get()[2];
  }

  /** Folds one request's run-queue wait, ended at {@code nowNanos}, into the mean. */
  void record(long waitedNanos, long nowNanos) {
    long m;
    long next;
    do {
      m = mean.get();
      next = sampled ? m + ((waitedNanos - m) >> WEIGHT_SHIFT) : waitedNanos;
    } while (!mean.compareAndSet(m, next));
    sampled = true;
    newestSampleAt = nowNanos;
  }

  @Override
  public long queueingDelayNanos(long nowNanos) {
    if (!sampled || nowNanos - newestSampleAt > STALE_NANOS) {
      return 0;
    }
    return mean.get();
  }

  /**
   * The run-queue wait from {@code /proc/thread-self/schedstat}, through a file kept open per
   * thread, and the CPU time from the JVM's thread CPU clock. Not schedstat's own CPU field: the
   * kernel brings a running thread's total up to date only at scheduler events (a tick, a switch),
   * so across a request of a few hundred microseconds it mostly does not move, while the CPU clock
   * asks the scheduler for the current total. The run-queue wait has no such lag: it grows when a
   * waiting thread is switched in, and a thread reading its own entry is running.
   */
  static final class ProcSchedstat implements Source {

    /** One per platform thread; a thread's file is closed by its cleaner once the thread is gone. */
    private static final ThreadLocal<Reader> READER = ThreadLocal.withInitial(Reader::new);
    private static final java.lang.management.ThreadMXBean THREADS =
        java.lang.management.ManagementFactory.getThreadMXBean();

    /** Why run-queue waits cannot be read here, or {@code null} if they can. */
    static String unavailabilityCause() {
      if (!System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT).contains("linux")) {
        return "not Linux";
      }
      if (!THREADS.isCurrentThreadCpuTimeSupported() || !THREADS.isThreadCpuTimeEnabled()) {
        return "the JVM does not measure thread CPU time";
      }
      try (RandomAccessFile f = new RandomAccessFile(PATH, "r")) {
        byte[] b = new byte[128];
        return parseField(b, f.read(b), 1) < 0 ? PATH + " has no run-queue field" : null;
      } catch (IOException | SecurityException e) {
        return PATH + " cannot be read (" + e + ")";
      }
    }

    @Override
    public boolean read(long[] into) {
      return READER.get().read(into);
    }

    private static final class Reader {
      private final byte[] buffer = new byte[128];
      private RandomAccessFile file;

      boolean read(long[] into) {
        try {
          if (file == null) {
            file = new RandomAccessFile(PATH, "r"); // this thread's own entry, from now on
          }
          file.seek(0);
          long wait = parseField(buffer, file.read(buffer), 1);
          long cpu = THREADS.getCurrentThreadCpuTime();
          if (cpu < 0 || wait < 0) {
            return false;
          }
          into[0] = cpu;
          into[1] = wait;
          return true;
        } catch (IOException e) {
          return false;
        }
      }
    }
  }

  /**
   * Field {@code index} (0: CPU time, 1: run-queue wait) of a schedstat line ({@code "cpu wait
   * slices"}), or -1 if {@code b[0..n)} holds no such decimal field.
   */
  static long parseField(byte[] b, int n, int index) {
    int i = 0;
    for (int f = 0; f < index; f++) {
      while (i < n && b[i] != ' ') {
        i++;
      }
      i++;
    }
    if (i >= n || b[i] < '0' || b[i] > '9') {
      return -1;
    }
    long v = 0;
    while (i < n && b[i] >= '0' && b[i] <= '9') {
      v = v * 10 + (b[i] - '0');
      i++;
    }
    return v;
  }
}
