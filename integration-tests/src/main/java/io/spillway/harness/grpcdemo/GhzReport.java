package io.spillway.harness.grpcdemo;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.io.InputStream;
import java.time.OffsetDateTime;
import java.time.temporal.ChronoUnit;
import java.util.Arrays;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.HdrHistogram.Histogram;

/**
 * One ghz run's JSON report ({@code ghz -O json}) read as the Spring demo reads its other
 * generators: from the {@code details} array, one entry a call with its end time ({@code
 * timestamp}, RFC 3339), {@code latency} (nanoseconds) and gRPC {@code status} ({@code OK}, {@code
 * ResourceExhausted}, ...). ghz records the time a call ended, so a call's start is its timestamp
 * less its latency; the calls that started in the measured window (the window's offset from the
 * first call's start, so a level's first seconds warm up as the other rows' do) are counted.
 *
 * <p>ghz measures latency from when a worker starts the call, not from when its pacer scheduled
 * it: a run that falls behind its rate does not show the delay in latency. What it does show is
 * the rate the calls started at, and how far behind a constant rate's schedule the last of them
 * started ({@link Result#maxLagNanos}).
 */
final class GhzReport {

  /** Refusals: Spillway's gRPC refusal, and the code a server shedding by closing streams sends. */
  private static final String RESOURCE_EXHAUSTED = "ResourceExhausted";
  private static final String UNAVAILABLE = "Unavailable";

  private GhzReport() { }

  /**
   * What the calls that started in {@code [first + warm, first + warm + measure)} saw; latencies
   * in nanoseconds, rates per second.
   *
   * @param started      calls that started in the window
   * @param ok           of them, answered {@code OK}
   * @param good         of those, within the SLO
   * @param rejects      refused ({@code RESOURCE_EXHAUSTED} or {@code UNAVAILABLE})
   * @param errors       everything else (a deadline that passed, a cancelled call)
   * @param byStatus     every status seen in the window and its count
   * @param byReason     of the refusals, Spillway's reason for each as its status description
   *                     gives it ({@code SpillwayMetadata.describeReject}), in {@link
   *                     io.spillway.api.Status} order, e.g. {@code aqm=3 limit=20}
   * @param okLatency    latencies of the {@code OK} calls
   * @param rejectLatency latencies of the refused calls: from a call's start to its refusal
   * @param maxLagNanos  how far the latest-started call of the window started after a constant
   *                     {@code rate}'s schedule from the run's first call (0 when no rate given)
   */
  record Result(long started, long ok, long good, long rejects, long errors,
      Map<String, Long> byStatus, String byReason, Histogram okLatency, Histogram rejectLatency,
      double measureSeconds, long maxLagNanos) {

    double startedRps() {
      return started / measureSeconds;
    }

    double throughputRps() {
      return ok / measureSeconds;
    }

    double goodputRps() {
      return good / measureSeconds;
    }

    /** The statuses in the window, e.g. {@code OK=100 ResourceExhausted=20}. */
    String statuses() {
      StringBuilder b = new StringBuilder();
      byStatus.forEach((k, v) -> b.append(b.isEmpty() ? "" : " ").append(k).append('=').append(v));
      return b.toString();
    }
  }

  /**
   * Reads {@code json} (a whole ghz report). {@code rate} is the {@code --rps} ghz was given, or 0
   * for none; {@code sloNanos} the SLO an {@code OK} call is good within.
   */
  static Result read(InputStream json, double warmSeconds, double measureSeconds, long sloNanos,
      double rate) throws IOException {
    long[] starts = new long[1024];
    long[] latencies = new long[1024];
    String[] statuses = new String[1024];
    String[] errorTexts = new String[1024];
    int n = 0;
    OffsetDateTime origin = null;
    try (JsonParser p = new JsonFactory().createParser(json)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        throw new IOException("not a ghz JSON report: no object");
      }
      boolean sawDetails = false;
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String field = p.currentName();
        p.nextToken();
        if (!field.equals("details")) {
          p.skipChildren();
          continue;
        }
        sawDetails = true;
        if (p.currentToken() == JsonToken.VALUE_NULL) {
          continue; // a run with no call: ghz writes null
        }
        if (p.currentToken() != JsonToken.START_ARRAY) {
          throw new IOException("ghz details is not an array");
        }
        while (p.nextToken() == JsonToken.START_OBJECT) {
          String timestamp = null;
          long latency = -1;
          String status = "";
          String error = "";
          while (p.nextToken() == JsonToken.FIELD_NAME) {
            String key = p.currentName();
            p.nextToken();
            switch (key) {
              case "timestamp" -> timestamp = p.getText();
              case "latency" -> latency = p.getLongValue();
              case "status" -> status = p.getText();
              case "error" -> error = p.getText();
              default -> p.skipChildren();
            }
          }
          if (timestamp == null || latency < 0) {
            throw new IOException("a ghz detail without timestamp or latency");
          }
          OffsetDateTime end = OffsetDateTime.parse(timestamp);
          if (origin == null) {
            origin = end;
          }
          if (n == starts.length) {
            starts = Arrays.copyOf(starts, 2 * n);
            latencies = Arrays.copyOf(latencies, 2 * n);
            statuses = Arrays.copyOf(statuses, 2 * n);
            errorTexts = Arrays.copyOf(errorTexts, 2 * n);
          }
          errorTexts[n] = error;
          starts[n] = ChronoUnit.NANOS.between(origin, end) - latency;
          latencies[n] = latency;
          // a call that failed without a gRPC status (ghz leaves status empty) is an error
          statuses[n] = status.isEmpty() ? (error.isEmpty() ? "none" : "error") : status;
          n++;
        }
      }
      if (!sawDetails) {
        throw new IOException("not a ghz JSON report: no details (was it run with -O json?)");
      }
    }
    Histogram okLatency = new Histogram(3_600_000_000_000L, 3);
    Histogram rejectLatency = new Histogram(3_600_000_000_000L, 3);
    Map<String, Long> byStatus = new TreeMap<>();
    long[] byReason = new long[io.spillway.api.Status.values().length];
    if (n == 0) {
      return new Result(0, 0, 0, 0, 0, byStatus, "", okLatency, rejectLatency, measureSeconds, 0);
    }
    long first = Long.MAX_VALUE;
    for (int i = 0; i < n; i++) {
      first = Math.min(first, starts[i]);
    }
    long from = first + Math.round(warmSeconds * 1e9);
    long to = from + Math.round(measureSeconds * 1e9);
    long started = 0;
    long ok = 0;
    long good = 0;
    long rejects = 0;
    long errors = 0;
    for (int i = 0; i < n; i++) {
      if (starts[i] < from || starts[i] >= to) {
        continue;
      }
      started++;
      String status = statuses[i];
      byStatus.merge(status, 1L, Long::sum);
      if (status.equals("OK")) {
        ok++;
        okLatency.recordValue(Math.max(1, latencies[i]));
        if (latencies[i] <= sloNanos) {
          good++;
        }
      } else if (status.equals(RESOURCE_EXHAUSTED) || status.equals(UNAVAILABLE)) {
        rejects++;
        rejectLatency.recordValue(Math.max(1, latencies[i]));
        io.spillway.api.Status reason = reason(errorTexts[i]);
        if (reason != null) {
          byReason[reason.code()]++;
        }
      } else {
        errors++;
      }
    }
    long maxLag = 0;
    if (rate > 0) {
      long[] sorted = Arrays.copyOf(starts, n);
      Arrays.sort(sorted);
      double interval = 1e9 / rate;
      for (int i = 0; i < n; i++) {
        if (sorted[i] >= to) {
          break;
        }
        maxLag = Math.max(maxLag, sorted[i] - first - Math.round(i * interval));
      }
    }
    StringBuilder reasons = new StringBuilder();
    for (io.spillway.api.Status st : io.spillway.api.Status.values()) {
      if (byReason[st.code()] > 0) {
        reasons.append(reasons.isEmpty() ? "" : " ").append(label(st)).append('=')
            .append(byReason[st.code()]);
      }
    }
    return new Result(started, ok, good, rejects, errors, byStatus, reasons.toString(), okLatency,
        rejectLatency, measureSeconds, maxLag);
  }

  /** The reasons' words in a refusal's description, as {@code describeReject} writes them. */
  private static final Pattern REASON = Pattern.compile("spillway: rejected \\(\"?([a-z ]+)");

  /** Spillway's reason in a refusal's error text, or {@code null} if the text gives none. */
  static io.spillway.api.Status reason(String error) {
    Matcher m = REASON.matcher(error == null ? "" : error);
    if (!m.find()) {
      return null;
    }
    for (io.spillway.api.Status st : io.spillway.api.Status.values()) {
      if (label(st).equals(m.group(1).strip().replace(' ', '_'))) {
        return st;
      }
    }
    return null;
  }

  /** A status as the harnesses' tables name it: {@code aqm}, {@code no_credit}, {@code limit}. */
  static String label(io.spillway.api.Status st) {
    return st.name().toLowerCase(Locale.ROOT).replace("rejected_", "");
  }

  /**
   * A short account for a row's note: offered against started, ghz's lag behind its rate, the
   * statuses, and Spillway's reasons for the refusals where their descriptions give them.
   */
  static String describe(Result r, double rate) {
    return String.format(Locale.ROOT, "ghz started %.0f/s of %.0f/s; %s behind its schedule "
        + "at most; %s%s", r.startedRps(), rate, millis(r.maxLagNanos()), r.statuses(),
        r.byReason().isEmpty() ? "" : "; refused for " + r.byReason());
  }

  private static String millis(long nanos) {
    return String.format(Locale.ROOT, "%.1f ms", nanos / 1e6);
  }
}
