package io.spillway.asqm;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Threshold;
import jdk.jfr.Timespan;

/**
 * A request waited for a {@link BudgetedLock}; the event's duration is the wait. Only contended
 * acquisitions are offered, whichever form waited ({@code lock}, {@code lockInterruptibly}, a timed
 * {@code tryLock}, the budgeted forms; a wait that gave up is not), and only those above the
 * threshold (default 1 ms) are recorded, so an uncontended lock costs nothing and a busy one does
 * not flood the recording. Refusals are
 * {@link BudgetedLockAbortEvent}s.
 */
@Name("io.spillway.BudgetedLockWait")
@Label("Spillway Budgeted Lock Wait")
@Category({"Spillway"})
@Description("A request waited for a BudgetedLock")
@StackTrace(false)
@Threshold("1 ms")
final class BudgetedLockWaitEvent extends Event {

  @Label("Lock")
  String lockName;

  @Label("Remaining Budget")
  @Description("The request's budget once it had the lock; Long.MAX_VALUE without one")
  @Timespan(Timespan.NANOSECONDS)
  long remainingBudget;
}
