package io.spillway.baselines;

import io.spillway.api.AbstractServerPermit;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.Outcome;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.Status;

/**
 * A permit for the baselines' server gates, which hold no per-request state: completing it only
 * reports the outcome (and, in subclasses, writes a piggybacked field). Exactly-once completion comes
 * from {@link AbstractServerPermit}.
 *
 * <p>Thread-safe.
 */
class MeteredPermit extends AbstractServerPermit {

  private final OverloadMetrics metrics;

  MeteredPermit(Status status, OverloadMetrics metrics) {
    super(status);
    this.metrics = metrics;
  }

  @Override
  protected void onComplete(Outcome outcome, long nowNanos, ResponseMetadata response) {
    metrics.onCompletion(outcome);
  }
}
