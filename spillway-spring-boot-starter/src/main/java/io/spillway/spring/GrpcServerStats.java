package io.spillway.spring;

import java.util.List;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

/**
 * What the gRPC servers the starter protects have done, for the meters: their gate's {@link
 * GateStats} (credit pool, limit, price; the totals the Actuator endpoint shows), the same
 * counters per method, and their queueing delay.
 *
 * <p>Per method: one {@link GateStats} per full gRPC method name ({@code package.Service/Method},
 * its {@link GateStats#endpoint()}), made the first time a call to the method is counted and kept
 * for good, so counting a call is a map lookup of a string gRPC already holds and {@code LongAdder}
 * increments. The names are bounded by the methods the servers serve: gRPC answers a call to any
 * other method {@code UNIMPLEMENTED} before an interceptor sees it. A server whose fallback
 * registry serves whatever name a client sends would let clients choose the names, so past
 * {@link #MAX_METHODS} methods the rest are counted under {@link #UNKNOWN_METHOD}.
 *
 * <p>Thread-safe.
 */
public final class GrpcServerStats {

  /** The method tag of calls counted past {@link #MAX_METHODS}. */
  public static final String UNKNOWN_METHOD = "unknown";

  /** Methods counted under their own name; generous for one application's services. */
  public static final int MAX_METHODS = 256;

  private final GateStats gate;
  private final LongSupplier queueDelayNanos;
  private final ConcurrentHashMap<String, GateStats> methods = new ConcurrentHashMap<>();
  /** In the order they were made; guarded by {@code this} for writes. */
  private final List<GateStats> made = new CopyOnWriteArrayList<>();
  private final List<Consumer<GateStats>> listeners = new CopyOnWriteArrayList<>();
  private volatile GateStats unknown;

  /**
   * @param gate the servers' gate counters ({@link GateStats#endpoint()}: the endpoint tag)
   * @param queueDelayNanos the servers' queueing delay now, as their gates read it
   */
  public GrpcServerStats(GateStats gate, LongSupplier queueDelayNanos) {
    this.gate = Objects.requireNonNull(gate, "gate");
    this.queueDelayNanos = Objects.requireNonNull(queueDelayNanos, "queueDelayNanos");
  }

  /** The servers' gate counters. */
  public GateStats gate() {
    return gate;
  }

  /** The endpoint's name, the servers' gate's. */
  public String endpoint() {
    return gate.endpoint();
  }

  /** The servers' queueing delay now, in nanoseconds. */
  public long queueDelayNanos() {
    return queueDelayNanos.getAsLong();
  }

  /**
   * The counters of the method {@code fullMethodName}, made on its first call (past {@link
   * #MAX_METHODS} methods, the shared {@link #UNKNOWN_METHOD} counters).
   */
  public GateStats method(String fullMethodName) {
    GateStats m = methods.get(fullMethodName);
    return m != null ? m : firstSight(fullMethodName);
  }

  private GateStats firstSight(String fullMethodName) {
    GateStats m;
    synchronized (this) {
      m = methods.get(fullMethodName);
      if (m != null) {
        return m;
      }
      if (methods.size() >= MAX_METHODS) {
        if (unknown != null) {
          return unknown;
        }
        m = unknown = new GateStats(UNKNOWN_METHOD);
      } else {
        m = new GateStats(fullMethodName);
        methods.put(fullMethodName, m);
      }
      made.add(m);
    }
    for (Consumer<GateStats> l : listeners) {
      l.accept(m); // once per method, off the lock: a registry may take its time
    }
    return m;
  }

  /** The methods counted so far, in the order of their first calls. */
  public List<GateStats> methods() {
    return List.copyOf(made);
  }

  /**
   * Calls {@code action} with each method counted so far and, from now on, each new one as its
   * first call is counted (on that call's thread). A method made while this runs may be given
   * twice: {@code action} must be idempotent, as registering a meter is.
   */
  public void forEachMethod(Consumer<GateStats> action) {
    Objects.requireNonNull(action, "action");
    listeners.add(action);
    for (GateStats m : made) { // a snapshot
      action.accept(m);
    }
  }
}
