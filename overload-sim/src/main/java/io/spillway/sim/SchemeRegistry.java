package io.spillway.sim;

import io.spillway.api.NoControl;
import io.spillway.api.OverloadScheme;
import io.spillway.credit.Breakwater;
import io.spillway.credit.BreakwaterConfig;
import java.util.List;
import java.util.function.Function;

/**
 * The schemes an experiment can name, each built from the scenario's parameters. Adding a scheme
 * is one entry here; the simulator and, later, the harness drive them all through the same
 * {@link OverloadScheme} interface.
 */
public final class SchemeRegistry {

  private record Entry(String name, Function<Scenario, OverloadScheme> factory) { }

  private static final List<Entry> ENTRIES = List.of(
      new Entry("none", s -> NoControl.INSTANCE),
      new Entry("breakwater", s -> Breakwater.of(breakwaterConfig(s))),
      new Entry("breakwater-credit", s -> Breakwater.creditsOnly(breakwaterConfig(s))),
      new Entry("breakwater-credit-spec", s -> Breakwater.creditsWithSpeculation(breakwaterConfig(s))));

  private SchemeRegistry() { }

  /** Every scheme name, in the order reports list them. */
  public static List<String> names() {
    return ENTRIES.stream().map(Entry::name).toList();
  }

  /**
   * The scheme called {@code name}, configured from {@code scenario}.
   *
   * @throws IllegalArgumentException naming the known schemes if {@code name} is not one
   */
  public static OverloadScheme create(String name, Scenario scenario) {
    for (Entry entry : ENTRIES) {
      if (entry.name().equals(name)) {
        return entry.factory().apply(scenario);
      }
    }
    throw new IllegalArgumentException("unknown scheme '" + name + "'; known schemes: "
        + String.join(", ", names()));
  }

  /** Breakwater's paper defaults for the scenario's SLO and RTT, with any breakwater.* keys applied. */
  static BreakwaterConfig breakwaterConfig(Scenario s) {
    BreakwaterConfig.Builder b = BreakwaterConfig.forSlo(s.sloNanos(), s.rttNanos()).toBuilder();
    if (s.isSet("breakwater.alpha")) {
      b.alpha(s.doubleValue("breakwater.alpha"));
    }
    if (s.isSet("breakwater.beta")) {
      b.beta(s.doubleValue("breakwater.beta"));
    }
    if (s.isSet("breakwater.target_us")) {
      b.targetDelayNanos(s.nanos("breakwater.target_us", 1_000));
    }
    if (s.isSet("breakwater.drop_us")) {
      b.dropThresholdNanos(s.nanos("breakwater.drop_us", 1_000));
    }
    if (s.isSet("breakwater.period_us")) {
      b.controlPeriodNanos(s.nanos("breakwater.period_us", 1_000));
    }
    if (s.isSet("breakwater.client_timeout_us")) {
      b.clientQueueTimeoutNanos(s.nanos("breakwater.client_timeout_us", 1_000));
    }
    if (s.isSet("breakwater.per_session_cap")) {
      b.perSessionCap(s.intValue("breakwater.per_session_cap"));
    }
    try {
      return b.build();
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("breakwater parameters: " + e.getMessage(), e);
    }
  }
}
