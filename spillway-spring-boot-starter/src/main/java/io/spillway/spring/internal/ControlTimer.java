package io.spillway.spring.internal;

import io.spillway.api.Cancellable;
import io.spillway.api.Scheduler;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import org.springframework.beans.factory.DisposableBean;

/**
 * The gates' control loops: one daemon timer thread for every endpoint's gate, stopped with the
 * application context. Thread-safe.
 */
public final class ControlTimer implements Scheduler, DisposableBean {

  private final ScheduledThreadPoolExecutor timer;
  private final Scheduler scheduler;

  public ControlTimer() {
    timer = new ScheduledThreadPoolExecutor(1, r -> {
      Thread t = new Thread(r, "spillway-control");
      t.setDaemon(true);
      return t;
    });
    timer.setRemoveOnCancelPolicy(true);
    scheduler = Scheduler.of(timer);
  }

  @Override
  public Cancellable schedule(Runnable task, long delayNanos) {
    return scheduler.schedule(task, delayNanos);
  }

  @Override
  public void destroy() {
    timer.shutdownNow();
  }
}
