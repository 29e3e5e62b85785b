package io.spillway.asqm;

import com.sun.management.HotSpotDiagnosticMXBean;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import javax.management.MBeanServerConnection;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

/**
 * Takes thread dumps of a JVM at intervals and feeds them to {@link ThreadDumpLockWaits}: the
 * sampling half of {@link ContendedLockFinder}, for the virtual threads JFR does not see.
 *
 * <p>A dump visits every thread, so its cost grows with the number of threads (tens of
 * milliseconds for a few thousand). The sampler keeps its own share of a core near a tenth: from
 * the second dump on it waits at least nine times the last dump's duration before the next one
 * (the first, which loads the dumper's classes, would hold off sampling for a second), and never
 * less than the interval asked for. Each sample is weighted by the time since the one before, so
 * the spacing does not bias the estimate.
 *
 * <p>Thread-safe: {@link #stop} may be called from any thread; sampling runs on one daemon
 * platform thread of its own.
 */
final class LockWaitSampler {

  /** Where dumps come from: this JVM, or another one on this machine. */
  interface DumpSource extends AutoCloseable {
    /** One thread dump in the JDK's plain-text format. */
    String dump() throws IOException;

    @Override
    default void close() throws IOException { }
  }

  private final DumpSource source;
  private final long intervalNanos;
  private final boolean virtualOnly;
  private final ThreadDumpLockWaits waits = new ThreadDumpLockWaits();
  private volatile boolean stopping;
  private volatile IOException failure;
  private Thread thread;

  LockWaitSampler(DumpSource source, Duration interval, boolean virtualOnly) {
    if (interval.isNegative() || interval.isZero()) {
      throw new IllegalArgumentException("interval must be positive: " + interval);
    }
    this.source = source;
    this.intervalNanos = interval.toNanos();
    this.virtualOnly = virtualOnly;
  }

  /** Starts sampling on a daemon thread. */
  synchronized LockWaitSampler start() {
    if (thread != null) {
      throw new IllegalStateException("already started");
    }
    thread = Thread.ofPlatform().daemon().name("spillway-lock-sampler").start(this::run);
    return this;
  }

  /**
   * Stops sampling, waits for the sampler thread, and ranks what it saw.
   *
   * @throws IOException if a dump failed (the first failure; sampling stopped there)
   */
  List<ContendedLockFinder.LockContention> stop() throws IOException {
    Thread t;
    synchronized (this) {
      t = thread;
    }
    stopping = true;
    if (t != null) {
      // Not interrupt(): a dump being read when it came would fail (an interrupted file read
      // closes its channel); the sampler checks the flag between dumps.
      LockSupport.unpark(t);
      boolean interrupted = false;
      while (t.isAlive()) {
        try {
          t.join();
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
    if (failure != null) {
      throw failure;
    }
    return waits.ranked();
  }

  private void run() {
    long previous = System.nanoTime() - intervalNanos;
    while (!stopping) {
      long start = System.nanoTime();
      String dump;
      try {
        dump = source.dump();
        waits.add(dump, start - previous, virtualOnly);
      } catch (IOException e) {
        if (!stopping) {
          failure = e;
        }
        return;
      } catch (RuntimeException e) {
        // Not caused by stopping (only an I/O read can be): a source or a dump that cannot be
        // read. Reported by stop(), rather than ending the thread with a ranking that looks whole.
        failure = new IOException("a thread dump could not be read: " + e, e);
        return;
      }
      long took = System.nanoTime() - start;
      previous = start;
      long pause = waits.samples() == 1 ? intervalNanos : Math.max(intervalNanos, 9 * took);
      long until = System.nanoTime() + pause;
      for (long left = pause; left > 0 && !stopping; left = until - System.nanoTime()) {
        LockSupport.parkNanos(this, left);
      }
    }
  }

  /** Dumps of this JVM, through its {@code HotSpotDiagnosticMXBean}. */
  static DumpSource thisJvm() throws IOException {
    return new FileDumps(ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class), null);
  }

  /**
   * Dumps of another JVM on this machine, found by its process id: the Attach API starts its local
   * management agent, and its {@code HotSpotDiagnosticMXBean} writes each dump to a file here.
   * The target must run as the same user and not disable attach
   * ({@code -XX:+DisableAttachMechanism}).
   */
  static DumpSource process(long pid) throws IOException {
    String address;
    try {
      com.sun.tools.attach.VirtualMachine vm = com.sun.tools.attach.VirtualMachine.attach(Long.toString(pid));
      try {
        address = vm.startLocalManagementAgent();
      } finally {
        vm.detach();
      }
    } catch (com.sun.tools.attach.AttachNotSupportedException e) {
      throw new IOException("cannot attach to process " + pid + ": " + e.getMessage(), e);
    } catch (NoClassDefFoundError e) {
      throw new IOException("the jdk.attach module is not resolved; on the module path add "
          + "--add-modules jdk.attach,java.management.rmi", e);
    }
    JMXConnector connector = JMXConnectorFactory.connect(new JMXServiceURL(address));
    MBeanServerConnection connection = connector.getMBeanServerConnection();
    HotSpotDiagnosticMXBean bean = ManagementFactory.newPlatformMXBeanProxy(connection,
        "com.sun.management:type=HotSpotDiagnostic", HotSpotDiagnosticMXBean.class);
    return new FileDumps(bean, connector);
  }

  /**
   * {@code dumpThreads} writes to a file that must not exist yet; each dump gets a fresh name in a
   * private directory, is read, and deleted.
   */
  static final class FileDumps implements DumpSource {
    private final HotSpotDiagnosticMXBean bean;
    private final JMXConnector connector;
    private final Path dir;
    private long next;

    FileDumps(HotSpotDiagnosticMXBean bean, JMXConnector connector) throws IOException {
      this.bean = bean;
      this.connector = connector;
      this.dir = Files.createTempDirectory("spillway-lock-sampler");
    }

    @Override
    public String dump() throws IOException {
      Path file = dir.resolve("dump-" + (next++) + ".txt").toAbsolutePath();
      String dump;
      try {
        bean.dumpThreads(file.toString(), HotSpotDiagnosticMXBean.ThreadDumpFormat.TEXT_PLAIN);
        dump = Files.readString(file, StandardCharsets.UTF_8);
      } catch (IOException | RuntimeException failure) {
        deleteAfter(failure, file);
        throw failure;
      }
      Files.deleteIfExists(file);
      return dump;
    }

    @Override
    public void close() throws IOException {
      try {
        if (connector != null) {
          connector.close();
        }
      } catch (IOException | RuntimeException failure) {
        deleteAfter(failure, dir);
        throw failure;
      }
      Files.deleteIfExists(dir);
    }

    /** Deletes {@code path} after {@code failure}, which stays the one thrown (the cause). */
    private static void deleteAfter(Exception failure, Path path) {
      try {
        Files.deleteIfExists(path);
      } catch (IOException | RuntimeException e) {
        failure.addSuppressed(e);
      }
    }
  }
}
