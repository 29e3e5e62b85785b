package io.spillway.api;

import java.util.Objects;

/**
 * What a client gate is given: the session it speaks for, the SLO its requests must meet
 * (end-to-end, client queueing included), and metrics.
 *
 * @param sessionId the session's id, unique per server
 * @param sloNanos the end-to-end latency objective; requests that cannot meet it expire
 * @param metrics where the gate reports
 */
public record ClientEnvironment(long sessionId, long sloNanos, OverloadMetrics metrics) {

  public ClientEnvironment {
    if (sloNanos <= 0) {
      throw new IllegalArgumentException("SLO must be positive: " + sloNanos);
    }
    Objects.requireNonNull(metrics, "metrics");
  }
}
