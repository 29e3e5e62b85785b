package io.spillway.spring.internal;

import io.spillway.api.Ticker;
import io.spillway.asqm.CarrierDispatcher;
import io.spillway.spring.ServerQueueDelay;
import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.SynchronousQueue;
import org.eclipse.jetty.util.BlockingArrayQueue;
import org.eclipse.jetty.util.VirtualThreads;
import org.eclipse.jetty.util.thread.QueuedThreadPool;
import org.eclipse.jetty.util.thread.ThreadPool;
import org.eclipse.jetty.util.thread.VirtualThreadPool;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.jetty.autoconfigure.JettyServerProperties;
import org.springframework.boot.jetty.JettyWebServerFactory;
import org.springframework.boot.web.server.WebServerFactoryCustomizer;
import org.springframework.core.env.Environment;

/**
 * Makes Jetty's request workers a measured queueing stage, for Spring MVC and WebFlux alike (both
 * run their handlers on Jetty's pool). Runs after Spring Boot's own customizers, so it sees the
 * thread pool they chose:
 *
 * <ul>
 *   <li>platform threads (the default): a {@link MeasuredQueuedThreadPool} built as Boot builds
 *       Jetty's pool ({@code server.jetty.threads.max}, {@code min}, {@code idle-timeout}, {@code
 *       max-queue-capacity}; 200, 8, 60 s and Jetty's unbounded queue unless set), registered as
 *       {@code jetty-workers}. Jobs Jetty gives a reserved thread ({@code tryExecute}) start at
 *       once and are not stamped: they have no queueing delay;
 *   <li>virtual threads ({@code spring.threads.virtual.enabled=true}): Jetty's platform pool for
 *       its acceptors and selectors, with a {@link CarrierDispatcher} as the pool's virtual-threads
 *       executor, so each request runs on a virtual thread on measured carriers, registered as
 *       {@code jetty-carriers}; the carrier queue counts every mount, including after a lock or
 *       I/O wait. The selectors stay on platform threads because a virtual thread blocked in a
 *       selector would hold one of the carriers (only the JDK's own scheduler compensates for
 *       that). Requests are then not bounded by {@code server.jetty.threads.max}, as they are
 *       not on Tomcat's virtual threads. Where the JVM does not allow a custom scheduler (it
 *       needs {@code --add-opens java.base/java.lang=ALL-UNNAMED}) the dispatcher says why, it is
 *       closed, and Boot's {@link VirtualThreadPool} is kept with a {@link MeasuredExecutor} as
 *       its executor, registered as {@code jetty-virtual-threads}, which sees the first mount
 *       only (and not the wait for one of the pool's {@code max} permits, taken after it). Most
 *       jobs it times are Jetty's producer hand-offs (its execution strategy runs each request on
 *       the thread that read it and hands production to a new one), whose wait stands for the
 *       requests' while they queue for a carrier too; clients that resend each refused request
 *       at once keep hand-offs waiting that no request waits with (docs/results/spring.md,
 *       "Jetty").
 * </ul>
 *
 * <p>A pool the application set itself (of another class than Jetty's {@link QueuedThreadPool})
 * is left alone and not measured.
 *
 * <p>Thread-safe; the dispatcher it creates is closed with the application context, the pool is
 * stopped with the server.
 */
public final class JettyWorkersCustomizer extends ServerWorkers
    implements WebServerFactoryCustomizer<JettyWebServerFactory> {

  /**
   * Jetty's pool settings as Boot reads them ({@code server.jetty.threads.*}, with Boot's
   * defaults).
   *
   * @param maxQueueCapacity {@code null}: Jetty's unbounded queue; 0: a hand-off queue
   */
  public record Threads(int max, int min, int idleTimeoutMillis, Integer maxQueueCapacity) {

    /** Binds {@code server.jetty.*} as Boot does and applies the defaults Boot's pool applies. */
    public static Threads from(Environment environment) {
      JettyServerProperties.Threads t = Binder.get(environment)
          .bindOrCreate("server.jetty", JettyServerProperties.class).getThreads();
      Duration idle = t.getIdleTimeout();
      return new Threads(t.getMax() > 0 ? t.getMax() : 200, t.getMin() > 0 ? t.getMin() : 8,
          idle != null ? (int) idle.toMillis() : 60_000, t.getMaxQueueCapacity());
    }

    BlockingQueue<Runnable> queue() {
      if (maxQueueCapacity == null) {
        return null;
      }
      return maxQueueCapacity == 0 ? new SynchronousQueue<>()
          : new BlockingArrayQueue<>(maxQueueCapacity);
    }
  }

  private final Threads threads;
  private volatile MeasuredQueuedThreadPool pool;

  /**
   * @param threads the pool's settings: it is built here, in place of the one Boot built from the
   *     same properties
   */
  public JettyWorkersCustomizer(ServerQueueDelay delay, Ticker ticker, boolean virtualThreads,
      int carriers, Threads threads) {
    super(delay, ticker, virtualThreads, carriers);
    this.threads = threads;
  }

  /** The measured pool of Jetty's workers, or {@code null} (virtual threads, or not customized). */
  public MeasuredQueuedThreadPool measured() {
    return pool;
  }

  @Override
  public void customize(JettyWebServerFactory factory) {
    customizing();
    ThreadPool current = factory.getThreadPool();
    if (virtualThreads) {
      customizeVirtual(factory, current);
      return;
    }
    if (current != null && current.getClass() != QueuedThreadPool.class) {
      route("application's " + current.getClass().getSimpleName() + ", not measured");
      return;
    }
    MeasuredQueuedThreadPool measured = new MeasuredQueuedThreadPool(threads.max(),
        Math.min(threads.min(), threads.max()), threads.idleTimeoutMillis(), threads.queue(),
        ticker);
    this.pool = measured;
    factory.setThreadPool(measured);
    delay.addMeasured("jetty-workers", measured.queueDelay());
    route("platform pool of " + threads.max() + " threads, measured");
  }

  private void customizeVirtual(JettyWebServerFactory factory, ThreadPool current) {
    Carriers carriers = measuredCarriers("jetty");
    if (carriers.dispatcher() != null) {
      QueuedThreadPool platform = new QueuedThreadPool(threads.max(),
          Math.min(threads.min(), threads.max()), threads.idleTimeoutMillis(), threads.queue());
      platform.setVirtualThreadsExecutor(carriers.dispatcher());
      factory.setThreadPool(platform);
      return;
    }
    if (current instanceof VirtualThreadPool virtual) {
      String name = virtual.getName();
      MeasuredExecutor measured = new MeasuredExecutor(name == null || name.isBlank()
          ? VirtualThreads.getDefaultVirtualThreadsExecutor()
          : VirtualThreads.getNamedVirtualThreadsExecutor(name), ticker, false);
      virtual.setVirtualThreadsExecutor(measured);
      firstMountOnly("jetty", "Jetty", measured, carriers.whyNot());
      return;
    }
    route("virtual threads, not measured (" + carriers.whyNot() + ")");
  }
}
