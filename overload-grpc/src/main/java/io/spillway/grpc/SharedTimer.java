package io.spillway.grpc;

import io.spillway.api.Scheduler;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;

/**
 * The default {@link Scheduler} when the application names none: one daemon thread for the whole
 * process, created on first use. Its tasks are short (expire and release a session's calls; tick a
 * gate's control loop). Thread-safe.
 */
final class SharedTimer {

  private SharedTimer() { }

  static Scheduler scheduler() {
    return Holder.SCHEDULER;
  }

  /** The same thread as an executor, for gRPC name resolvers that schedule their own work. */
  static ScheduledExecutorService executor() {
    return Holder.EXECUTOR;
  }

  private static final class Holder {
    static final Scheduler SCHEDULER;
    static final ScheduledExecutorService EXECUTOR;

    static {
      ScheduledThreadPoolExecutor executor = new ScheduledThreadPoolExecutor(1, task -> {
        Thread thread = new Thread(task, "spillway-grpc-timer");
        thread.setDaemon(true);
        return thread;
      });
      executor.setRemoveOnCancelPolicy(true);
      SCHEDULER = Scheduler.of(executor);
      EXECUTOR = java.util.concurrent.Executors.unconfigurableScheduledExecutorService(executor);
    }
  }
}
