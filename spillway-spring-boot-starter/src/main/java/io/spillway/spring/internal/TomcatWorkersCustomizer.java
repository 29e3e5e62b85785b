package io.spillway.spring.internal;

import io.spillway.api.Ticker;
import io.spillway.asqm.CarrierDispatcher;
import io.spillway.spring.ServerQueueDelay;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import org.apache.coyote.AbstractProtocol;
import org.apache.coyote.ProtocolHandler;
import org.apache.tomcat.util.threads.TaskQueue;
import org.apache.tomcat.util.threads.TaskThreadFactory;
import org.apache.tomcat.util.threads.ThreadPoolExecutor;
import org.springframework.boot.tomcat.ConfigurableTomcatWebServerFactory;
import org.springframework.boot.web.server.WebServerFactoryCustomizer;

/**
 * Makes Tomcat's request workers a measured queueing stage. Runs after Spring Boot's own
 * customizers, so it sees the executor they chose:
 *
 * <ul>
 *   <li>platform threads (the default): a pool built as Tomcat builds its own (its {@code
 *       TaskQueue} bounded by the protocol's max queue size, min spare and max threads, 60 s
 *       keep-alive) behind a {@link MeasuredExecutor};
 *   <li>virtual threads ({@code spring.threads.virtual.enabled=true}): a {@link CarrierDispatcher},
 *       whose carrier queue counts every mount of a request's virtual thread, including after a
 *       lock or I/O wait; where the JVM does not allow a custom scheduler (it needs {@code
 *       --add-opens java.base/java.lang=ALL-UNNAMED}) the dispatcher says why, it is closed, and
 *       Boot's virtual-thread executor is kept behind a {@link MeasuredExecutor} instead, which
 *       sees the first mount only. Either way a connection's asynchronous I/O continuations
 *       (HTTP/2's frame reads and writes) run on a platform pool of Tomcat's own shape, measured as
 *       {@code tomcat-connection-io}, not behind the requests they feed ({@link TomcatTaskRouter}),
 *       and each request's wait from Tomcat's first sight of it to the application is a stage too,
 *       {@code tomcat-arrival} ({@link TomcatArrivalValve}): it holds the queue inside an HTTP/2
 *       connection, which no executor sees.
 * </ul>
 *
 * <p>Thread-safe; the executors it creates are shut down with the application context.
 */
public final class TomcatWorkersCustomizer extends ServerWorkers
    implements WebServerFactoryCustomizer<ConfigurableTomcatWebServerFactory> {

  private volatile MeasuredExecutor measured;
  private volatile MeasuredExecutor connectionIo;
  private volatile TomcatArrivalValve arrival;

  private final int maxThreads;
  private final int minSpareThreads;

  /**
   * @param maxThreads {@code server.tomcat.threads.max}: the pool is built here, before Tomcat
   *     would read that property into its own
   * @param minSpareThreads {@code server.tomcat.threads.min-spare}
   */
  public TomcatWorkersCustomizer(ServerQueueDelay delay, Ticker ticker, boolean virtualThreads,
      int carriers, int maxThreads, int minSpareThreads) {
    super(delay, ticker, virtualThreads, carriers);
    this.maxThreads = maxThreads;
    this.minSpareThreads = minSpareThreads;
  }

  /** The measured executor in front of Tomcat's workers, or {@code null} (carrier route). */
  public MeasuredExecutor measured() {
    return measured;
  }

  /**
   * The measured platform pool that runs connections' I/O continuations on the virtual-thread
   * route, or {@code null} (platform route, or not customized).
   */
  public MeasuredExecutor connectionIo() {
    return connectionIo;
  }

  /** The arrival stage on the virtual-thread route, or {@code null} (platform route). */
  public TomcatArrivalValve arrival() {
    return arrival;
  }

  @Override
  public void customize(ConfigurableTomcatWebServerFactory factory) {
    customizing();
    if (virtualThreads) {
      TomcatArrivalValve arrival = new TomcatArrivalValve(ticker);
      this.arrival = arrival;
      factory.addEngineValves(arrival);
      delay.addMeasured("tomcat-arrival", arrival);
    }
    factory.addProtocolHandlerCustomizers(this::customizeProtocol);
  }

  private void customizeProtocol(ProtocolHandler protocol) {
    Executor current = protocol.getExecutor();
    if (virtualThreads) {
      Executor requests = null;
      Carriers carriers = measuredCarriers("tomcat");
      if (carriers.dispatcher() != null) {
        requests = carriers.dispatcher();
      } else if (current != null) {
        MeasuredExecutor measured = new MeasuredExecutor(current, ticker, false);
        this.measured = measured;
        firstMountOnly("tomcat", "Tomcat", measured, carriers.whyNot());
        requests = measured;
      }
      if (requests != null) {
        // unbounded: a refused continuation would fail its connection, not one request
        MeasuredExecutor connections = platformPool(protocol, "-conn-", false);
        this.connectionIo = connections;
        delay.addMeasured("tomcat-connection-io", connections.queueDelay());
        protocol.setExecutor(new TomcatTaskRouter(requests, connections));
        route(route() + "; connections' I/O on platform threads, measured");
        return;
      }
    }
    MeasuredExecutor measured = platformPool(protocol, "-exec-", true);
    this.measured = measured;
    protocol.setExecutor(measured);
    delay.addMeasured("tomcat-workers", measured.queueDelay());
    route("platform pool of " + maxThreads + " threads, measured");
  }

  /**
   * A platform pool built as Tomcat builds its own (its {@code TaskQueue}, which adds threads up
   * to the maximum before it queues, bounded by the protocol's max queue size; min spare and max
   * threads; 60 s keep-alive), measured, and closed with the application context.
   *
   * @param bounded whether the queue is bounded by the protocol's max queue size
   */
  private MeasuredExecutor platformPool(ProtocolHandler protocol, String suffix, boolean bounded) {
    int max = maxThreads;
    int minSpare = minSpareThreads;
    String name = protocol instanceof AbstractProtocol<?> p ? p.getName().replace("\"", "") : "http";
    // server.tomcat.threads.max-queue-capacity, which Boot sets on the protocol before this runs:
    // Tomcat's own pool bounds its queue by it, and so must the one built in its place
    TaskQueue queue = bounded && protocol instanceof AbstractProtocol<?> p
        ? new TaskQueue(p.getMaxQueueSize()) : new TaskQueue();
    ThreadPoolExecutor pool = new ThreadPoolExecutor(Math.min(minSpare, max), max, 60,
        TimeUnit.SECONDS, queue, new TaskThreadFactory(name + suffix, true, Thread.NORM_PRIORITY));
    queue.setParent(pool);
    MeasuredExecutor measured = new MeasuredExecutor(pool, ticker, true);
    own(measured);
    return measured;
  }
}
