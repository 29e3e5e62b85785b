package io.spillway.asqm;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Throttle;
import jdk.jfr.Timespan;

/**
 * A {@link BudgetedLock} refused a request before it waited, because the lock's queue would have
 * outlasted the request's budget (Protego's ASQM, protego-nsdi23 §3.2). Throttled by JFR to
 * 200 a second by default, so a lock shedding a flood does not flood the recording.
 */
@Name("io.spillway.BudgetedLockAbort")
@Label("Spillway Budgeted Lock Abort")
@Category({"Spillway"})
@Description("A BudgetedLock refused a request: the wait would have exceeded its budget")
@StackTrace(false)
@Throttle("200/s")
final class BudgetedLockAbortEvent extends Event {

  @Label("Lock")
  String lockName;

  @Label("Expected Wait")
  @Timespan(Timespan.NANOSECONDS)
  long expectedWait;

  @Label("Remaining Budget")
  @Timespan(Timespan.NANOSECONDS)
  long remainingBudget;
}
