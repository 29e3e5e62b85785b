package io.spillway.api;

import java.util.Objects;

/**
 * What a server gate is given by whoever hosts it: time, a scheduler for its control loop, the
 * server's queueing-delay signal, a channel for explicit control messages, metrics, and the number
 * of requests the server runs in parallel (its cores or worker threads).
 *
 * @param ticker the clock the gate reads when it is not handed a time
 * @param scheduler runs the gate's control loop
 * @param queueDelay the server's total queueing delay (sum of its stages)
 * @param control explicit messages to clients
 * @param metrics where the gate reports; {@link OverloadMetrics#NONE} for nothing
 * @param parallelism requests the server executes at once, at least 1
 * @param reportsStarts whether the host calls {@link ServerPermit#started} as each admitted
 *     request's handler gets it; a gate that limits the requests waiting to run learns from those
 *     calls how fast its queue drains, and one whose host makes none counts requests until they
 *     complete
 */
public record ServerEnvironment(Ticker ticker, Scheduler scheduler, QueueDelaySignal queueDelay,
    ControlChannel control, OverloadMetrics metrics, int parallelism, boolean reportsStarts) {

  /** A host that does not report when handlers start ({@code reportsStarts} false). */
  public ServerEnvironment(Ticker ticker, Scheduler scheduler, QueueDelaySignal queueDelay,
      ControlChannel control, OverloadMetrics metrics, int parallelism) {
    this(ticker, scheduler, queueDelay, control, metrics, parallelism, false);
  }

  public ServerEnvironment {
    Objects.requireNonNull(ticker, "ticker");
    Objects.requireNonNull(scheduler, "scheduler");
    Objects.requireNonNull(queueDelay, "queueDelay");
    Objects.requireNonNull(control, "control");
    Objects.requireNonNull(metrics, "metrics");
    if (parallelism < 1) {
      throw new IllegalArgumentException("parallelism must be at least 1: " + parallelism);
    }
  }
}
