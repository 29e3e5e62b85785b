package io.spillway.baselines;

import io.spillway.api.OverloadMetrics;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.ServerPermit;
import io.spillway.api.Status;

/**
 * CoDel at a server's admission point: every request's header is checked against {@link
 * CoDelPolicy} with the server's queueing delay at that instant, and a dropped request gets a fast
 * {@link Status#REJECTED_AQM} reject (breakwater-osdi20 §2.2: "RPC servers are typically required
 * to report on success and on failure", which is the cost that makes AQM alone lose goodput).
 *
 * <p>Thread-safe: the policy's state machine is guarded by its monitor, held for a few arithmetic
 * operations per request. There is no periodic work.
 */
final class CoDelServerGate implements ServerGate {

  private final CoDelPolicy policy;
  private final QueueDelaySignal queueDelay;
  private final OverloadMetrics metrics;

  CoDelServerGate(CoDelConfig config, ServerEnvironment environment) {
    this.policy = new CoDelPolicy(config.targetNanos(), config.intervalNanos());
    this.queueDelay = environment.queueDelay();
    this.metrics = environment.metrics();
  }

  @Override
  public ServerPermit admit(RequestMetadata request, long nowNanos) {
    long delay = queueDelay.queueingDelayNanos(nowNanos);
    boolean drop;
    synchronized (policy) {
      drop = policy.shouldDrop(delay, nowNanos);
    }
    Status decision = drop ? Status.REJECTED_AQM : Status.OK;
    metrics.onAdmission(decision);
    return new MeteredPermit(decision, metrics);
  }

  @Override
  public void deregister(long sessionId, long nowNanos) { }
}
