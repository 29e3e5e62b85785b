package io.spillway.baselines;

import io.spillway.api.OverloadMetrics;
import io.spillway.api.Outcome;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.ServerPermit;
import io.spillway.api.Status;
import java.util.Arrays;

/**
 * DAGOR's server (SoCC 2018 §4; breakwater-osdi20 §5.1): requests whose priority is above the
 * admission level are rejected as soon as their header is decoded ({@link Status#REJECTED_LIMIT});
 * the level moves by {@link DagorPolicy} once per window of 1 ms or 2,000 requests; every response
 * and reject carries the current level ({@link ResponseMetadata#threshold(int)}) so that clients
 * shed locally what the server would reject.
 *
 * <p>Queueing time: DAGOR averages the time the window's requests spent queued. Spillway's signal
 * is the age of the oldest waiting item summed over the server's stages, read as each request
 * arrives; the window's average of those readings stands for the average queueing time. Windows
 * are closed by arriving requests (a window with no request has nothing to average), so the gate
 * needs no timer.
 *
 * <p>A request without a priority (0, from a driver that does not carry the field) is treated as
 * priority 1: it is never rejected, so a transport that loses the field degrades DAGOR to
 * client-side shedding rather than to dropping everything. It is left out of the histogram (its
 * real priority is unknown); a window with no prioritised request moves the level as if priorities
 * were uniform, which is how clients draw them ({@link DagorPolicy#uniform}).
 *
 * <p>Thread-safe: the window's counters and the level are guarded by the gate's monitor, held for
 * O(1) work per request and O(P) once per window; the level is also published in a volatile for
 * completions.
 */
final class DagorServerGate implements ServerGate {

  private final DagorConfig config;
  private final QueueDelaySignal queueDelay;
  private final OverloadMetrics metrics;
  private final long[] histogram;
  private final long[] uniform;

  private boolean windowOpen;
  private long windowStart;
  private long windowRequests;
  private long prioritisedRequests;
  private long windowQueueingNanos;
  private volatile int level;

  DagorServerGate(DagorConfig config, ServerEnvironment environment) {
    this.config = config;
    this.queueDelay = environment.queueDelay();
    this.metrics = environment.metrics();
    this.histogram = new long[config.maxPriority() + 1];
    this.uniform = DagorPolicy.uniform(config.maxPriority());
    this.level = config.maxPriority(); // admit everything until overload is seen
  }

  @Override
  public ServerPermit admit(RequestMetadata request, long nowNanos) {
    boolean prioritised = request.priority() > 0;
    int priority = Math.min(Math.max(request.priority(), 1), config.maxPriority());
    long delay = queueDelay.queueingDelayNanos(nowNanos);
    int current;
    synchronized (this) {
      if (!windowOpen) {
        windowOpen = true;
        windowStart = nowNanos;
      }
      if (prioritised) {
        histogram[priority]++;
        prioritisedRequests++;
      }
      windowRequests++;
      windowQueueingNanos += delay;
      if (windowRequests >= config.windowRequests() || nowNanos - windowStart >= config.periodNanos()) {
        closeWindow(nowNanos);
      }
      current = level;
    }
    Status decision = priority <= current ? Status.OK : Status.REJECTED_LIMIT;
    metrics.onAdmission(decision);
    return new Permit(decision);
  }

  /** Caller holds the monitor. */
  private void closeWindow(long nowNanos) {
    boolean overloaded = DagorPolicy.overloaded(windowQueueingNanos, windowRequests,
        config.queueingThresholdNanos());
    long[] counts = prioritisedRequests > 0 ? histogram : uniform;
    level = DagorPolicy.nextLevel(counts, level, overloaded, config.alpha(), config.beta());
    Arrays.fill(histogram, 0);
    prioritisedRequests = 0;
    windowRequests = 0;
    windowQueueingNanos = 0;
    windowStart = nowNanos;
  }

  @Override
  public void deregister(long sessionId, long nowNanos) { }

  /** The current admission level: priorities up to it are admitted. */
  int level() {
    return level;
  }

  private final class Permit extends MeteredPermit {
    Permit(Status status) {
      super(status, metrics);
    }

    @Override
    protected void onComplete(Outcome outcome, long nowNanos, ResponseMetadata response) {
      response.threshold(level);
      super.onComplete(outcome, nowNanos, response);
    }
  }
}
