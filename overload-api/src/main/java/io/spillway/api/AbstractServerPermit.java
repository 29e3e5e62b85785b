package io.spillway.api;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * Base class that makes completion exactly-once (a CAS on a state word), so implementations only
 * write what completion means for their scheme.
 *
 * <p>Thread-safe.
 */
public abstract class AbstractServerPermit implements ServerPermit {

  private static final VarHandle COMPLETED;

  static {
    try {
      COMPLETED = MethodHandles.lookup()
          .findVarHandle(AbstractServerPermit.class, "completed", int.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private final Status status;
  @SuppressWarnings("unused") // accessed through COMPLETED
  private volatile int completed;

  /** A permit with the given decision. */
  protected AbstractServerPermit(Status status) {
    if (status == null) {
      throw new NullPointerException("status");
    }
    this.status = status;
  }

  @Override
  public final boolean isAdmitted() {
    return status == Status.OK;
  }

  @Override
  public final Status status() {
    return status;
  }

  @Override
  public final boolean isCompleted() {
    return completed != 0;
  }

  @Override
  public final void complete(Outcome outcome, long nowNanos, ResponseMetadata response) {
    if (outcome == null || response == null) {
      // Checked before the state moves: a call that fails here leaves the permit open, so the
      // caller can still complete it and the scheme's accounting (credits, pending) is not lost.
      throw new NullPointerException(outcome == null ? "outcome" : "response");
    }
    if (status != Status.OK && outcome != Outcome.DROPPED) {
      throw new IllegalArgumentException(
          "a request rejected with " + status + " can only end as DROPPED, not " + outcome);
    }
    if (!COMPLETED.compareAndSet(this, 0, 1)) {
      throw new IllegalStateException("permit already completed: " + this);
    }
    response.status(outcome == Outcome.SUCCESS ? Status.OK : rejectionFor(outcome));
    onComplete(outcome, nowNanos, response);
  }

  private Status rejectionFor(Outcome outcome) {
    return switch (outcome) {
      case DROPPED -> status == Status.OK ? Status.REJECTED_AQM : status;
      case ABORTED -> Status.REJECTED_BUDGET;
      case TIMED_OUT -> Status.TIMED_OUT;
      case FAILED -> Status.FAILED;
      case SUCCESS -> Status.OK;
    };
  }

  /**
   * Called once, after the state has moved to completed. Implementations return the request's
   * credit (or concurrency slot) and write their piggybacked fields into {@code response}; the
   * status is already set.
   */
  protected abstract void onComplete(Outcome outcome, long nowNanos, ResponseMetadata response);
}
