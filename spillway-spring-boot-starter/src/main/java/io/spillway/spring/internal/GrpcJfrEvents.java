package io.spillway.spring.internal;

import io.grpc.Metadata;
import io.spillway.api.BudgetExceededException;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.RequestMetadata;
import io.spillway.api.Status;
import io.spillway.api.Ticker;
import io.spillway.grpc.SpillwayMetadata;
import io.spillway.spring.GateStats;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The starter's JFR events for the gRPC servers it protects: {@link AdmissionEvent} for every call
 * Spillway refuses and one admitted call in {@code spillway.jfr.admitted-sample-every}, and {@link
 * BudgetAbortEvent} for an admitted call a budget aborted, as the HTTP gate emits them (endpoint
 * {@code grpc}).
 *
 * <p>{@link GrpcCallOutcomes}, installed outside Spillway's own interceptor, hands it each call's
 * close, from which it reads the call's decision: the {@code spillway-status} trailer Spillway
 * writes on every call it answers, and for an abort the {@link BudgetExceededException} the status
 * carries on the server. An admitted call is reported when it closes, not when it was admitted; a
 * refusal closes as it is decided. The queueing delay is the server's at that moment; the budget
 * is the one the call's header carried ({@code Long.MAX_VALUE} without one: a budget Spillway
 * derived from a deadline is not in the call's headers).
 *
 * <p>Thread-safe. While no recording enables the events a call costs a counter increment and one
 * trailer read at close; the headers are parsed only for an event that is recorded.
 */
final class GrpcJfrEvents {

  private final Ticker ticker;
  private final QueueDelaySignal queueDelay;
  private final int admittedSampleEvery;
  private final AtomicLong admitted = new AtomicLong();

  GrpcJfrEvents(Ticker ticker, QueueDelaySignal queueDelay, int admittedSampleEvery) {
    this.ticker = ticker;
    this.queueDelay = queueDelay;
    this.admittedSampleEvery = admittedSampleEvery;
  }

  /** Reports the call that closes with {@code status} and {@code trailers}, if Spillway answered it. */
  void report(io.grpc.Status status, Metadata trailers, Metadata headers) {
    String code = trailers.get(SpillwayMetadata.STATUS);
    if (code == null) {
      return; // not a call Spillway answered (the control service, another interceptor's close)
    }
    Status decision;
    try {
      decision = Status.fromCode(Integer.parseInt(code));
    } catch (IllegalArgumentException malformed) {
      return;
    }
    if (status.getCause() instanceof BudgetExceededException abort) {
      BudgetAbortEvent e = new BudgetAbortEvent();
      if (e.isEnabled()) {
        e.endpoint = "grpc";
        e.queueingDelay = abort.queueingDelayNanos();
        e.remainingBudget = abort.remainingBudgetNanos();
        e.commit();
      }
      admission(Status.OK, headers, 0); // it was admitted
      return;
    }
    if (decision.isShed()) {
      admission(decision, headers, 1);
    } else {
      admission(Status.OK, headers, 0);
    }
  }

  /** {@code sampledOneIn} 1 for a refusal, 0 for an admitted call (sampled here). */
  private void admission(Status decision, Metadata headers, int sampledOneIn) {
    int oneIn = sampledOneIn;
    if (oneIn == 0) {
      if (admitted.incrementAndGet() % admittedSampleEvery != 0) {
        return;
      }
      oneIn = admittedSampleEvery;
    }
    AdmissionEvent e = new AdmissionEvent();
    if (e.isEnabled()) {
      e.endpoint = "grpc";
      e.decision = decision == Status.OK ? "ok" : GateStats.reason(decision);
      e.queueingDelay = queueDelay.queueingDelayNanos(ticker.read());
      // the header's budget, read as Spillway reads it, only for an event that is recorded
      RequestMetadata request = new RequestMetadata();
      SpillwayMetadata.readRequest(headers, request);
      e.budget = request.budgetNanos();
      e.sampledOneIn = oneIn;
      e.commit();
    }
  }
}
