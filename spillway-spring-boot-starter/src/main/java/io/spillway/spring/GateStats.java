package io.spillway.spring;

import io.spillway.api.Outcome;
import io.spillway.api.OverloadMetrics;
import io.spillway.api.Status;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/**
 * What one endpoint's gate has done: decisions by status, completions by outcome, and the last
 * credit-pool, concurrency-limit and price reports. It is the {@link OverloadMetrics} the gate reports to, and what the
 * Micrometer binder and the Actuator endpoint read: counting costs one {@link LongAdder}
 * increment, no allocation, and readers see the counters without a registry in between.
 *
 * <p>Thread-safe.
 */
public final class GateStats implements OverloadMetrics {

  private static final Status[] STATUSES = Status.values();
  private static final Outcome[] OUTCOMES = Outcome.values();

  private final String endpoint;
  private final LongAdder[] decisions = adders(STATUSES.length);
  private final LongAdder[] completions = adders(OUTCOMES.length);
  private final LongAdder controlMessages = new LongAdder();
  private volatile long poolTotal;
  private volatile long poolIssued;
  private volatile int sessions;
  private volatile long price;
  private volatile long limit;
  private volatile long limitWaiting;

  /** @param endpoint the low-cardinality name meters and events carry */
  public GateStats(String endpoint) {
    this.endpoint = endpoint;
  }

  private static LongAdder[] adders(int n) {
    LongAdder[] a = new LongAdder[n];
    for (int i = 0; i < n; i++) {
      a[i] = new LongAdder();
    }
    return a;
  }

  /** The endpoint's name. */
  public String endpoint() {
    return endpoint;
  }

  @Override
  public void onAdmission(Status decision) {
    decisions[decision.ordinal()].increment();
  }

  @Override
  public void onCompletion(Outcome outcome) {
    completions[outcome.ordinal()].increment();
  }

  @Override
  public void onCreditPool(long total, long issued, int sessions) {
    this.poolTotal = total;
    this.poolIssued = issued;
    this.sessions = sessions;
  }

  @Override
  public void onControlMessage() {
    controlMessages.increment();
  }

  @Override
  public void onConcurrencyLimit(long limit, long counted) {
    this.limit = limit;
    this.limitWaiting = counted;
  }

  @Override
  public void onPrice(long localPrice) {
    this.price = localPrice;
  }

  /** Requests decided on with {@code status} ({@link Status#OK}: admitted). */
  public long decisions(Status status) {
    return decisions[status.ordinal()].sum();
  }

  /** Requests admitted. */
  public long admitted() {
    return decisions(Status.OK);
  }

  /** Permits that ended with {@code outcome}. */
  public long completions(Outcome outcome) {
    return completions[outcome.ordinal()].sum();
  }

  /** Admitted requests that aborted because their budget ran out (ASQM). */
  public long budgetAborts() {
    return completions(Outcome.ABORTED);
  }

  /** The credit pool's target size at the last report (0 for schemes without credits). */
  public long creditPool() {
    return poolTotal;
  }

  /** Credits issued at the last report. */
  public long creditsIssued() {
    return poolIssued;
  }

  /** Sessions registered at the last report. */
  public int sessions() {
    return sessions;
  }

  /** The plain clients' concurrency limit at the last report (0 for schemes without one). */
  public long concurrencyLimit() {
    return limit;
  }

  /** Admitted requests that limit counted (not yet started) at the last report. */
  public long limitWaiting() {
    return limitWaiting;
  }

  /** The price the gate last set for itself (0 for schemes without prices). */
  public long price() {
    return price;
  }

  /** Explicit control messages sent. */
  public long controlMessages() {
    return controlMessages.sum();
  }

  /** A snapshot for the Actuator endpoint. */
  public Map<String, Object> snapshot() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("admitted", admitted());
    Map<String, Long> rejected = new LinkedHashMap<>();
    for (Status s : STATUSES) {
      if (s.isRejection()) {
        long n = decisions(s);
        if (n > 0) {
          rejected.put(reason(s), n);
        }
      }
    }
    m.put("rejected", rejected);
    Map<String, Long> ended = new LinkedHashMap<>();
    for (Outcome o : OUTCOMES) {
      ended.put(o.name().toLowerCase(java.util.Locale.ROOT), completions(o));
    }
    m.put("completed", ended);
    m.put("budgetAborts", budgetAborts());
    m.put("creditPool", poolTotal);
    m.put("creditsIssued", poolIssued);
    m.put("sessions", sessions);
    m.put("concurrencyLimit", limit);
    m.put("limitWaiting", limitWaiting);
    m.put("price", price);
    return m;
  }

  /** The low-cardinality tag value of a rejection. */
  public static String reason(Status s) {
    return switch (s) {
      case OK -> "none";
      case REJECTED_AQM -> "aqm";
      case REJECTED_NO_CREDIT -> "no_credit";
      case REJECTED_PRICE -> "price";
      case REJECTED_BUDGET -> "budget";
      case REJECTED_LIMIT -> "limit";
      case EXPIRED -> "expired";
      case TIMED_OUT -> "timed_out";
      case FAILED -> "failed";
    };
  }
}
