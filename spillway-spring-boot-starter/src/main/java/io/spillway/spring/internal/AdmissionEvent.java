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
 * One admission decision. Rejections are offered every time and throttled by JFR itself (at most
 * {@value #THROTTLE} by default, a recording's settings may change it), so a server shedding
 * thousands of requests a second does not flood the recording; admitted requests are offered one
 * in {@code spillway.jfr.admitted-sample-every}.
 */
@Name("io.spillway.Admission")
@Label("Spillway Admission")
@Category({"Spillway"})
@Description("A Spillway gate decided on a request")
@StackTrace(false)
@Throttle(AdmissionEvent.THROTTLE)
public final class AdmissionEvent extends Event {
  static final String THROTTLE = "200/s";

  @Label("Endpoint")
  public String endpoint;

  @Label("Decision")
  @Description("ok, or the reason of the rejection (aqm, limit, no_credit, price, budget)")
  public String decision;

  @Label("Queueing Delay")
  @Timespan(Timespan.NANOSECONDS)
  public long queueingDelay;

  @Label("Budget")
  @Description("The request's queueing budget; Long.MAX_VALUE when it has none")
  @Timespan(Timespan.NANOSECONDS)
  public long budget;

  @Label("Sampled One In")
  @Description("1 for every rejection; the sampling period for admitted requests")
  public int sampledOneIn;
}
