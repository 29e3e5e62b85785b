package io.spillway.sim;

import java.util.ArrayList;
import java.util.List;
import org.HdrHistogram.Histogram;

/**
 * A call-graph run's results in fixed windows of simulated time, per interface and per service.
 * A request is counted in the window in which it ends (its response or reject reaches the client,
 * or it is shed in the client queue); offered requests in the window in which they are issued.
 *
 * <p>Not thread-safe; one per run.
 */
final class GraphRecorder {

  /** One interface in one window: the end-to-end view from the clients. */
  static final class InterfaceTally {
    long offered;
    long sent;
    long completed;
    long good;
    /** Refused or expired in the client's queue: never reached the graph. */
    long shedClient;
    /** Rejected at the interface's root service (or by the root's own sessions to its callees). */
    long shedFront;
    /** Rejected deeper in the graph; the whole request failed. */
    long shedInner;
    /** Compute (node service time) spent on the requests that ended here. */
    long computeNanos;
    /** The part of {@link #computeNanos} spent on requests that then failed. */
    long wastedNanos;
    final Histogram latency = new Histogram(3);

    void add(InterfaceTally o) {
      offered += o.offered;
      sent += o.sent;
      completed += o.completed;
      good += o.good;
      shedClient += o.shedClient;
      shedFront += o.shedFront;
      shedInner += o.shedInner;
      computeNanos += o.computeNanos;
      wastedNanos += o.wastedNanos;
      latency.add(o.latency);
    }

    /** Requests that ended (served, or shed anywhere). */
    long ended() {
      return completed + shedClient + shedFront + shedInner;
    }

    double percentileMicros(double percentile) {
      return latency.getTotalCount() == 0 ? 0 : latency.getValueAtPercentile(percentile) / 1000.0;
    }
  }

  /** One service in one window: the per-hop view. */
  static final class ServiceTally {
    /** Requests whose header this service parsed. */
    long received;
    /** Of those, rejected by its server gate. */
    long dropped;
    /** Sub-requests this service shed itself: refused or expired in its session to a callee. */
    long shedOutbound;
    /** Core time spent (parsing, computing, sending). */
    long busyNanos;

    void add(ServiceTally o) {
      received += o.received;
      dropped += o.dropped;
      shedOutbound += o.shedOutbound;
      busyNanos += o.busyNanos;
    }
  }

  /** Every interface and service in one window. */
  static final class Window {
    final InterfaceTally[] interfaces;
    final ServiceTally[] services;

    Window(int interfaces, int services) {
      this.interfaces = new InterfaceTally[interfaces];
      for (int i = 0; i < interfaces; i++) {
        this.interfaces[i] = new InterfaceTally();
      }
      this.services = new ServiceTally[services];
      for (int s = 0; s < services; s++) {
        this.services[s] = new ServiceTally();
      }
    }

    void add(Window o) {
      for (int i = 0; i < interfaces.length; i++) {
        interfaces[i].add(o.interfaces[i]);
      }
      for (int s = 0; s < services.length; s++) {
        services[s].add(o.services[s]);
      }
    }
  }

  private final long windowNanos;
  private final int interfaceCount;
  private final int serviceCount;
  private final List<Window> windows = new ArrayList<>();
  private final List<List<double[]>> demandChanges = new ArrayList<>();

  GraphRecorder(long windowNanos, int interfaces, int services) {
    if (windowNanos <= 0) {
      throw new IllegalArgumentException("window must be positive: " + windowNanos);
    }
    this.windowNanos = windowNanos;
    this.interfaceCount = interfaces;
    this.serviceCount = services;
    for (int i = 0; i < interfaces; i++) {
      demandChanges.add(new ArrayList<>());
    }
  }

  /** The window containing {@code nowNanos} (simulated time since the run began). */
  Window at(long nowNanos) {
    int index = (int) (nowNanos / windowNanos);
    while (windows.size() <= index) {
      windows.add(new Window(interfaceCount, serviceCount));
    }
    return windows.get(index);
  }

  void demandChanged(int iface, long nowNanos, double level) {
    demandChanges.get(iface).add(new double[] {nowNanos, level});
  }

  /** The demand level of {@code iface} in force at {@code nowNanos}. */
  double demandAt(int iface, long nowNanos) {
    double level = 0;
    for (double[] change : demandChanges.get(iface)) {
      if (change[0] <= nowNanos) {
        level = change[1];
      }
    }
    return level;
  }

  long windowNanos() {
    return windowNanos;
  }

  /**
   * Interface {@code iface}'s windows and demand as the socket graph harness records an interface,
   * one {@link Recorder} of {@link Tally}s, for its own results.json: a response is received and
   * completed, a reject from any hop received and dropped, a request shed in its client's queue
   * expired. Reject delays and messages are not counted here.
   */
  Recorder interfaceRecorder(int iface) {
    Recorder r = new Recorder(windowNanos);
    for (double[] change : demandChanges.get(iface)) {
      r.demandChanged((long) change[0], change[1]);
    }
    for (int w = 0; w < windows.size(); w++) {
      InterfaceTally from = windows.get(w).interfaces[iface];
      Tally to = r.at(w * windowNanos);
      to.offered = from.offered;
      to.sent = from.sent;
      to.completed = from.completed;
      to.good = from.good;
      to.expired = from.shedClient;
      to.dropped = from.shedFront + from.shedInner;
      to.received = from.completed + to.dropped;
      to.latency.add(from.latency);
    }
    return r;
  }

  /** The sum of the windows that start at or after {@code fromNanos} and end by {@code toNanos}. */
  Window sum(long fromNanos, long toNanos) {
    Window total = new Window(interfaceCount, serviceCount);
    for (int i = 0; i < windows.size(); i++) {
      long start = i * windowNanos;
      if (start >= fromNanos && start + windowNanos <= toNanos) {
        total.add(windows.get(i));
      }
    }
    return total;
  }
}
