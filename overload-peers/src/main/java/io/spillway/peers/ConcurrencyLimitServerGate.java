package io.spillway.peers;

import com.netflix.concurrency.limits.Limit;
import io.spillway.api.AbstractServerPermit;
import io.spillway.api.Outcome;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.ServerPermit;
import io.spillway.api.Status;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A Netflix concurrency-limits {@link Limit} enforced at a server's admission point, the way the
 * library's {@code SimpleLimiter} and gRPC {@code ConcurrencyLimitServerInterceptor} use it: a
 * request is admitted while fewer than {@code limit} requests are in flight on the server (queued
 * or running), otherwise it gets a fast {@link Status#REJECTED_LIMIT} reject; each admitted
 * request's completion feeds the limit one sample.
 *
 * <p>The enforcement is Spillway's own thin copy of the library's {@code AbstractLimiter} rather
 * than the limiter itself, for two reasons: the limiter reads its clock at acquire and at
 * completion, while Spillway hands the gate the caller's time (so the sample is exactly admission
 * to completion, the latency the gRPC interceptor measures); and {@code VegasLimit} throws on a
 * zero RTT, which a virtual clock can produce, so the RTT is clamped to at least 1 ns.
 *
 * <p>Completion maps to the library's listener calls: {@link Outcome#SUCCESS} is {@code onSuccess}
 * (a sample, no drop); {@link Outcome#DROPPED}, {@link Outcome#TIMED_OUT} and {@link
 * Outcome#ABORTED} are {@code onDropped} (a sample with {@code didDrop}); {@link Outcome#FAILED} is
 * {@code onIgnore} (the slot is returned, no sample: an error says nothing about load).
 *
 * <p>Thread-safe: the in-flight count is a CAS loop against the limit's volatile value, and the
 * limit's {@code onSample} is synchronized by the library. There is no periodic work.
 */
final class ConcurrencyLimitServerGate implements ServerGate {

  private final Limit limit;
  private final OverloadMetrics metrics;
  private final AtomicInteger inFlight = new AtomicInteger();

  ConcurrencyLimitServerGate(NetflixLimitConfig config, ServerEnvironment environment) {
    this.limit = config.newLimit();
    this.metrics = environment.metrics();
  }

  @Override
  public ServerPermit admit(RequestMetadata request, long nowNanos) {
    int current;
    do {
      current = inFlight.get();
      if (current >= limit.getLimit()) {
        metrics.onAdmission(Status.REJECTED_LIMIT);
        return new RejectedPermit(metrics);
      }
    } while (!inFlight.compareAndSet(current, current + 1));
    metrics.onAdmission(Status.OK);
    return new LimitPermit(nowNanos, current + 1);
  }

  @Override
  public void deregister(long sessionId, long nowNanos) { }

  /** The limit's current value. */
  int limit() {
    return limit.getLimit();
  }

  /** Requests admitted and not yet completed. */
  int inFlight() {
    return inFlight.get();
  }

  /** An admitted request: holds one in-flight slot and the sample's start. */
  private final class LimitPermit extends AbstractServerPermit {
    private final long startNanos;
    private final int inFlightAtStart;

    LimitPermit(long startNanos, int inFlightAtStart) {
      super(Status.OK);
      this.startNanos = startNanos;
      this.inFlightAtStart = inFlightAtStart;
    }

    @Override
    protected void onComplete(Outcome outcome, long nowNanos, ResponseMetadata response) {
      inFlight.decrementAndGet();
      long rtt = Math.max(1, nowNanos - startNanos);
      switch (outcome) {
        case SUCCESS -> limit.onSample(startNanos, rtt, inFlightAtStart, false);
        case DROPPED, TIMED_OUT, ABORTED -> limit.onSample(startNanos, rtt, inFlightAtStart, true);
        case FAILED -> { } // onIgnore
      }
      metrics.onCompletion(outcome);
    }
  }

  /** A request turned away at admission: it never held a slot, and feeds no sample. */
  private static final class RejectedPermit extends AbstractServerPermit {
    private final OverloadMetrics metrics;

    RejectedPermit(OverloadMetrics metrics) {
      super(Status.REJECTED_LIMIT);
      this.metrics = metrics;
    }

    @Override
    protected void onComplete(Outcome outcome, long nowNanos, ResponseMetadata response) {
      metrics.onCompletion(outcome);
    }
  }
}
