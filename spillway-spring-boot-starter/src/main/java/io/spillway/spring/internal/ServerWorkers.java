package io.spillway.spring.internal;

import io.spillway.api.Ticker;
import io.spillway.asqm.CarrierDispatcher;
import io.spillway.spring.ServerQueueDelay;
import java.lang.System.Logger.Level;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.core.Ordered;

/**
 * A servlet container's request workers as the starter measures them: what Tomcat's and Jetty's
 * customizers share. Each container's customizer is one; the one whose factory was customized is
 * the container that runs (several may be on the class path, one of them starts). A customizer
 * runs after Spring Boot's own, so it sees the executor or pool they chose.
 *
 * <p>Thread-safe; what it creates is closed with the application context.
 */
public abstract class ServerWorkers implements Ordered, DisposableBean {

  private static final System.Logger LOG = System.getLogger(ServerWorkers.class.getName());

  /** Where the measured stage is registered. */
  protected final ServerQueueDelay delay;
  /** Stamps the tasks; the delay is read with the same clock. */
  protected final Ticker ticker;
  /** {@code spring.threads.virtual.enabled}. */
  protected final boolean virtualThreads;
  /** Carrier threads for the virtual-thread route. */
  protected final int carriers;
  private final List<AutoCloseable> owned = new CopyOnWriteArrayList<>();
  private volatile String route = "not customized";
  private volatile boolean customized;

  protected ServerWorkers(ServerQueueDelay delay, Ticker ticker, boolean virtualThreads,
      int carriers) {
    this.delay = delay;
    this.ticker = ticker;
    this.virtualThreads = virtualThreads;
    this.carriers = carriers;
  }

  /** After Boot's own customizers. */
  @Override
  public int getOrder() {
    return Ordered.LOWEST_PRECEDENCE;
  }

  /** How the workers are measured, for the Actuator endpoint. */
  public String route() {
    return route;
  }

  /** Whether this container's factory was customized, that is, whether it is the one running. */
  public boolean customized() {
    return customized;
  }

  /** Records that this container's factory is being customized. */
  protected void customizing() {
    customized = true;
  }

  /** Records how the workers are measured. */
  protected void route(String value) {
    route = value;
  }

  /** Closes {@code resource} with the application context. */
  protected void own(AutoCloseable resource) {
    owned.add(resource);
  }

  /**
   * The virtual-thread route's carriers: a {@link CarrierDispatcher} whose carrier queue counts
   * every mount of a request's virtual thread (after a lock or I/O wait too), registered as
   * {@code <container>-carriers}; or, where the JVM does not allow a custom scheduler (it needs
   * {@code --add-opens java.base/java.lang=ALL-UNNAMED}), none, with the reason (nothing started,
   * nothing logged: the caller says which fallback it takes).
   */
  protected Carriers measuredCarriers(String container) {
    String[] why = {"unknown"};
    CarrierDispatcher dispatcher = CarrierDispatcher.onVirtualThreads(carriers, ticker, r -> why[0] = r)
        .orElse(null);
    if (dispatcher == null) {
      return new Carriers(null, why[0]);
    }
    own(dispatcher);
    delay.addMeasured(container + "-carriers", dispatcher.queueDelay());
    route("virtual threads on " + dispatcher.carriers() + " measured carriers");
    return new Carriers(dispatcher, null);
  }

  /** The measured carriers, or {@code null} and why there are none. */
  protected record Carriers(CarrierDispatcher dispatcher, String whyNot) { }

  /** Registers {@code measured} as the first-mount stage of Boot's virtual threads. */
  protected void firstMountOnly(String container, String label, MeasuredExecutor measured,
      String why) {
    delay.addMeasured(container + "-virtual-threads", measured.queueDelay());
    route("virtual threads, first mount measured (" + why + ")");
    LOG.log(Level.INFO, "Spillway measures " + label + "'s virtual threads at their first mount"
        + " only: " + why);
  }

  @Override
  public void destroy() {
    for (AutoCloseable c : owned) {
      try {
        c.close();
      } catch (Exception e) {
        LOG.log(Level.WARNING, "closing " + c, e);
      }
    }
  }
}
