package io.spillway.spring;

import io.spillway.api.QueueDelaySignal;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The application's queueing delay, assembled as its web server comes up: the stages the starter
 * measures itself (Tomcat's or Jetty's worker queue or their virtual threads' carrier queue,
 * Reactor Netty's event loops, a container's CPU limit) combined by their maximum, plus any {@link QueueDelaySignal} beans the application
 * declares (a stage of its own, such as a downstream pool), added.
 *
 * <p>Why the maximum for the measured stages: on a server of one core or a few, the event loops
 * and the workers share the CPU, so a request waiting in a loop and one waiting for a worker wait
 * for the same CPU at the same time; adding them would count that wait twice (the same reasoning
 * as overload-grpc's {@code SpillwayGrpcServer.Builder#install}). Breakwater's signal is the sum
 * over stages a request crosses one after the other (breakwater-osdi20 §3.1, §4), which is what
 * application stages are.
 *
 * <p>Thread-safe: stages are added at start-up and read on every decision without locks.
 */
public final class ServerQueueDelay {

  private final List<QueueDelaySignal> measured = new CopyOnWriteArrayList<>();
  private final List<QueueDelaySignal> added = new CopyOnWriteArrayList<>();
  /** Every stage by name, in the order added: for the Actuator endpoint. */
  private final List<Named> named = new CopyOnWriteArrayList<>();
  private final QueueDelaySignal signal = this::read;

  private record Named(String name, QueueDelaySignal stage) { }

  /** Adds a stage the starter measures, with a name for the Actuator endpoint. */
  public void addMeasured(String name, QueueDelaySignal stage) {
    measured.add(stage);
    named.add(new Named(name, stage));
  }

  /** Adds an application stage. */
  public void addStage(String name, QueueDelaySignal stage) {
    added.add(stage);
    named.add(new Named(name, stage));
  }

  /** The stages, by name, in the order they were added. */
  public List<String> stageNames() {
    return named.stream().map(Named::name).toList();
  }

  /**
   * Each stage's reading at {@code now}, by name, in the order they were added: which stage a
   * combined delay comes from. For the Actuator endpoint, not for decisions (it allocates).
   */
  public Map<String, Long> readings(long now) {
    Map<String, Long> byName = new LinkedHashMap<>();
    for (Named n : named) {
      byName.merge(n.name(), n.stage().queueingDelayNanos(now), Long::sum);
    }
    return byName;
  }

  /** The combined signal. */
  public QueueDelaySignal signal() {
    return signal;
  }

  private long read(long now) {
    long max = 0;
    for (QueueDelaySignal s : measured) {
      max = Math.max(max, s.queueingDelayNanos(now));
    }
    long total = max;
    for (QueueDelaySignal s : added) {
      total += s.queueingDelayNanos(now);
    }
    return total;
  }
}
