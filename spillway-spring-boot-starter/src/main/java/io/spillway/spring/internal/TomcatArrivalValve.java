package io.spillway.spring.internal;

import io.spillway.api.QueueDelaySignal;
import io.spillway.api.Ticker;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.ServletException;
import java.io.IOException;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.catalina.connector.Request;
import org.apache.catalina.connector.Response;
import org.apache.catalina.valves.ValveBase;

/**
 * Tomcat's wait before a request reaches the application, as a queueing stage: each request's
 * time from Tomcat's first sight of it to the engine's first valve, averaged.
 *
 * <p><b>Why.</b> Over HTTP/2 Tomcat runs at most {@code maxConcurrentStreamExecution} streams of a
 * connection at once (20 unless set) and queues the others inside the connection, where no
 * executor sees them. With virtual threads those that run wait their turn in the carriers' FIFO,
 * which does not time-slice, so the connection's queue drains only as fast as whole requests
 * finish: the measured stages read a few milliseconds while requests wait tens before the filter
 * (docs/results/spring.md, "Virtual threads"). Tomcat stamps a stream's request when it parses its
 * headers ({@code org.apache.coyote.Request#getStartTimeNanos}, {@link System#nanoTime}); the time
 * from that stamp to this valve is the request's sojourn in every queue before the application,
 * the connection's included. As CoDel measures the sojourn of departing packets (Nichols and
 * Jacobson 2012), the stage reports an exponentially weighted mean of the sojourns (1/8 per
 * request). Every request passes the valve before the gate decides on it, refused or not, so the
 * mean follows the load down as well as up while requests arrive; once none has arrived for
 * {@link #STALE_NANOS} it reads zero, and the next one starts it afresh, so a burst's waits do not
 * refuse the first requests after it. Over HTTP/1.1 Tomcat stamps the request as its input buffer
 * parses the request line, on the request's own thread, so the stage holds little there.
 *
 * <p>Cost: one compare-and-set and one clock read per request, beside the one the gate makes when
 * it decides: some tens of nanoseconds, against the 28–33 µs a refusal costs Tomcat on virtual
 * threads (docs/results/spring.md). Tomcat's stamp is {@link System#nanoTime}; with the system
 * ticker the valve reads that clock once, with another (tests) it reads both.
 *
 * <p>Thread-safe.
 */
public final class TomcatArrivalValve extends ValveBase implements QueueDelaySignal {

  static final int WEIGHT_SHIFT = 3;
  /** A mean with no arrival this recent reads zero. */
  static final long STALE_NANOS = 20_000_000;

  private final Ticker ticker;
  private final boolean tomcatsClock;
  private final AtomicLong mean = new AtomicLong();
  private volatile long newestAt;
  private volatile boolean sampled;

  /** @param ticker the gate's clock, against which the stage is read */
  public TomcatArrivalValve(Ticker ticker) {
    super(true);
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    this.tomcatsClock = ticker == Ticker.system();
  }

  @Override
  public void invoke(Request request, Response response) throws IOException, ServletException {
    long start = request.getCoyoteRequest().getStartTimeNanos();
    // an asynchronous re-dispatch carries the request's first stamp: not a wait to enter
    if (start > 0 && request.getDispatcherType() == DispatcherType.REQUEST) {
      long now = ticker.read();
      record(Math.max(0, (tomcatsClock ? now : System.nanoTime()) - start), now);
    }
    getNext().invoke(request, response);
  }

  /** Folds one request's wait, seen at {@code nowNanos} (the gate's clock), into the mean. */
  void record(long waitedNanos, long nowNanos) {
    boolean fresh = sampled && nowNanos - newestAt <= STALE_NANOS;
    long m;
    long next;
    do {
      m = mean.get();
      next = fresh ? m + ((waitedNanos - m) >> WEIGHT_SHIFT) : waitedNanos;
    } while (!mean.compareAndSet(m, next));
    newestAt = nowNanos;
    if (!sampled) {
      sampled = true;
    }
  }

  @Override
  public long queueingDelayNanos(long nowNanos) {
    if (!sampled || nowNanos - newestAt > STALE_NANOS) {
      return 0;
    }
    return mean.get();
  }
}
