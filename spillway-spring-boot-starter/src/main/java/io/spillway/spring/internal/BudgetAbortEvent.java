package io.spillway.spring.internal;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Throttle;
import jdk.jfr.Timespan;

/**
 * An admitted request aborted because a queue inside its handler would have outlasted its budget
 * (Protego's ASQM, protego-nsdi23 §3.2): the request was answered with a fast reject.
 */
@Name("io.spillway.BudgetAbort")
@Label("Spillway Budget Abort")
@Category({"Spillway"})
@Description("A request gave up because a queue in its handler would exceed its budget")
@StackTrace(false)
@Throttle("200/s")
public final class BudgetAbortEvent extends Event {

  @Label("Endpoint")
  public String endpoint;

  @Label("Queueing Delay")
  @Description("The delay of the queue that turned the request away")
  @Timespan(Timespan.NANOSECONDS)
  public long queueingDelay;

  @Label("Remaining Budget")
  @Timespan(Timespan.NANOSECONDS)
  public long remainingBudget;
}
