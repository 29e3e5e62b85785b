package io.spillway.report;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The contents of one {@code results.json}, as written by the simulator ({@code
 * io.spillway.sim.Report}) and the real-socket harness. Unknown fields are ignored at every level,
 * so a writer may add fields without breaking older readers. Optional numbers that are absent or
 * null read as {@link Double#NaN} and are shown as a dash. The required numbers ({@code demand},
 * {@code goodput_rps}) and, when present, {@code t_ms} and {@code window_ms} must be finite; a
 * {@code null} entry in {@code records}, {@code convergence} or {@code phases} is refused.
 *
 * <p>Immutable and safe to share between threads.
 *
 * @param scenario every scenario key as text (name, description, slo_us, clients, schedule, ...)
 * @param capacityRps the capacity demand is relative to (highest throughput with no control)
 * @param capacityMeasured whether the capacity was measured in this run rather than given
 * @param records one row per scheme and demand level, or per scheme and time window
 * @param convergence one row per scheme and demand step, for scheduled runs; may be empty
 * @param phases one row per scheme and phase between demand steps, for scheduled runs, its
 *     percentiles over every response of the phase ({@code t_ms} and {@code window_ms} span the
 *     phase); empty when the file has none (steady runs, files written before phases existed)
 */
@JsonIgnoreProperties(ignoreUnknown = true)
record Results(Map<String, String> scenario, double capacityRps, boolean capacityMeasured,
    List<Row> records, List<Convergence> convergence, List<Row> phases) {

  Results {
    scenario = Collections.unmodifiableMap(new LinkedHashMap<>(scenario));
    records = List.copyOf(records);
    convergence = List.copyOf(convergence);
    phases = List.copyOf(phases);
  }

  @JsonCreator
  static Results of(
      @JsonProperty("scenario") Map<String, JsonNode> scenario,
      @JsonProperty("capacity_rps") Double capacityRps,
      @JsonProperty("capacity_measured") Boolean capacityMeasured,
      @JsonProperty(value = "records", required = true) List<Row> records,
      @JsonProperty("convergence") List<Convergence> convergence,
      @JsonProperty("phases") List<Row> phases) {
    Map<String, String> keys = new LinkedHashMap<>();
    if (scenario != null) {
      // The simulator writes every value as a string; a harness may write numbers.
      scenario.forEach((k, v) -> keys.put(k, v == null || v.isNull() ? ""
          : v.isValueNode() ? v.asText() : v.toString()));
    }
    return new Results(keys, orNaN(capacityRps), capacityMeasured != null && capacityMeasured,
        entries("records", records), entries("convergence", convergence),
        entries("phases", phases));
  }

  /**
   * The entries of a JSON array, which may be absent. A {@code null} entry is refused rather than
   * skipped: skipping it would drop a row from the report without a word.
   */
  private static <T> List<T> entries(String field, List<T> list) {
    if (list == null) {
      return List.of();
    }
    for (int i = 0; i < list.size(); i++) {
      if (list.get(i) == null) {
        throw new IllegalArgumentException(field + "[" + i + "] is null, expected an object");
      }
    }
    return list;
  }

  /**
   * {@code value} if it is a finite number. A required number that is null, NaN or infinite is
   * refused with the field's name: shown as a dash or drawn nowhere, it would silently drop the
   * row from the table's meaning and the charts.
   */
  static double required(String field, Double value) {
    if (value == null) {
      throw new IllegalArgumentException("\"" + field + "\" is null, expected a number");
    }
    if (!Double.isFinite(value)) {
      throw new IllegalArgumentException("\"" + field + "\" is " + value
          + ", expected a finite number");
    }
    return value;
  }

  /**
   * {@code value}, NaN when absent (or null), refused when NaN or infinite: for numbers whose
   * presence changes what a row is ({@code t_ms} makes it a time window).
   */
  static double finiteOrAbsent(String field, Double value) {
    return value == null ? Double.NaN : required(field, value);
  }

  /** The scenario's name, or {@code fallback} when the file has none. */
  String name(String fallback) {
    String n = scenario.get("name");
    return n == null || n.isBlank() ? fallback : n;
  }

  /** Rows without a time window: one per scheme and demand level. */
  List<Row> steadyRows() {
    return records.stream().filter(r -> !r.isWindow()).toList();
  }

  /** Rows with a time window ({@code t_ms}). */
  List<Row> windowRows() {
    return records.stream().filter(Row::isWindow).toList();
  }

  /** Scheme names in order of first appearance. */
  List<String> schemes() {
    return records.stream().map(Row::scheme).distinct().toList();
  }

  /**
   * The SLO in microseconds: from the scenario, else from the first record that has one, else
   * NaN.
   */
  double sloMicros() {
    double fromScenario = parseOrNaN(scenario.get("slo_us"));
    if (fromScenario > 0) {
      return fromScenario;
    }
    return records.stream().mapToDouble(Row::sloMicros).filter(v -> v > 0).findFirst()
        .orElse(Double.NaN);
  }

  static double parseOrNaN(String s) {
    if (s == null || s.isBlank()) {
      return Double.NaN;
    }
    try {
      return Double.parseDouble(s.trim());
    } catch (NumberFormatException e) {
      return Double.NaN;
    }
  }

  static double orNaN(Double d) {
    return d == null ? Double.NaN : d;
  }

  /**
   * One row of {@code records}. Latencies are end to end, client queueing included; rates are per
   * second. See DESIGN.md, "Measures".
   *
   * @param scheme the admission scheme's name
   * @param clients client sessions, or 0 when absent
   * @param demand offered load as a multiple of capacity
   * @param capacityRps the capacity demand is relative to
   * @param offeredRps requests issued by the clients
   * @param throughputRps successful responses
   * @param goodputRps successful responses within the SLO
   * @param p50Micros median latency
   * @param p99Micros 99th-percentile latency
   * @param sloMicros the SLO
   * @param dropRate server rejects ÷ requests received by the server
   * @param rejectDelayMicros mean time from a request leaving the client to its reject arriving
   * @param expiredRate requests expired in client queues ÷ requests issued
   * @param messagesPerRequest server messages in and out ÷ requests issued
   * @param windowStartMillis for time-series rows the window's start, else NaN
   * @param windowMillis for time-series rows the window's length, else NaN
   */
  @JsonIgnoreProperties(ignoreUnknown = true)
  record Row(String scheme, int clients, double demand, double capacityRps, double offeredRps,
      double throughputRps, double goodputRps, double p50Micros, double p99Micros,
      double sloMicros, double dropRate, double rejectDelayMicros, double expiredRate,
      double messagesPerRequest, double windowStartMillis, double windowMillis) {

    @JsonCreator
    static Row of(
        @JsonProperty(value = "scheme", required = true) String scheme,
        @JsonProperty("clients") Integer clients,
        @JsonProperty(value = "demand", required = true) Double demand,
        @JsonProperty("capacity_rps") Double capacityRps,
        @JsonProperty("offered_rps") Double offeredRps,
        @JsonProperty("throughput_rps") Double throughputRps,
        @JsonProperty(value = "goodput_rps", required = true) Double goodputRps,
        @JsonProperty("p50_us") Double p50Micros,
        @JsonProperty("p99_us") Double p99Micros,
        @JsonProperty("slo_us") Double sloMicros,
        @JsonProperty("drop_rate") Double dropRate,
        @JsonProperty("reject_delay_us") Double rejectDelayMicros,
        @JsonProperty("expired_rate") Double expiredRate,
        @JsonProperty("messages_per_request") Double messagesPerRequest,
        @JsonProperty("t_ms") Double windowStartMillis,
        @JsonProperty("window_ms") Double windowMillis) {
      if (scheme == null || scheme.isBlank()) {
        throw new IllegalArgumentException("a record has an empty \"scheme\"");
      }
      return new Row(scheme, clients == null ? 0 : clients, required("demand", demand),
          orNaN(capacityRps), orNaN(offeredRps), orNaN(throughputRps),
          required("goodput_rps", goodputRps), orNaN(p50Micros), orNaN(p99Micros),
          orNaN(sloMicros), orNaN(dropRate), orNaN(rejectDelayMicros), orNaN(expiredRate),
          orNaN(messagesPerRequest), finiteOrAbsent("t_ms", windowStartMillis),
          finiteOrAbsent("window_ms", windowMillis));
    }

    /**
     * Whether this row is one time window of a scheduled run. The simulator leaves {@code t_ms}
     * out of steady rows; a writer that serializes its in-memory rows as they are writes {@code
     * t_ms: -1, window_ms: 0} instead, which reads as steady too.
     */
    boolean isWindow() {
      return Double.isFinite(windowStartMillis) && windowStartMillis >= 0
          && !(windowMillis <= 0);
    }
  }

  /**
   * One row of {@code convergence}: how long goodput took to settle after a demand step
   * (DESIGN.md, "Measures": within 5 % of its converged value, 20 ms windows).
   *
   * @param scheme the admission scheme's name
   * @param fromDemand demand before the step, as a multiple of capacity
   * @param toDemand demand after the step
   * @param stepMillis when the step happened
   * @param convergedGoodputRps the goodput it settled at
   * @param convergenceMillis time from the step until goodput stayed within 5 %; negative when it
   *     never did
   */
  @JsonIgnoreProperties(ignoreUnknown = true)
  record Convergence(String scheme, double fromDemand, double toDemand, double stepMillis,
      double convergedGoodputRps, double convergenceMillis) {

    @JsonCreator
    static Convergence of(
        @JsonProperty(value = "scheme", required = true) String scheme,
        @JsonProperty("from_demand") Double fromDemand,
        @JsonProperty("to_demand") Double toDemand,
        @JsonProperty("step_ms") Double stepMillis,
        @JsonProperty("converged_goodput_rps") Double convergedGoodputRps,
        @JsonProperty("convergence_ms") Double convergenceMillis) {
      if (scheme == null || scheme.isBlank()) {
        throw new IllegalArgumentException("a convergence row has an empty \"scheme\"");
      }
      return new Convergence(scheme, orNaN(fromDemand), orNaN(toDemand), orNaN(stepMillis),
          orNaN(convergedGoodputRps), orNaN(convergenceMillis));
    }
  }
}
