package io.spillway.sim;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * The one-page summary of a {@code sweep}: a row per variant, scheme and demand level, written as
 * summary.md and summary.csv beside the variants' own directories (each with its results.json,
 * plots and report.md).
 */
final class SweepSummary {

  /** One result of one variant. */
  record Row(String variant, ResultRecord result) { }

  private SweepSummary() { }

  static String label(Map<String, String> variant) {
    return variant.entrySet().stream().map(e -> e.getKey() + "=" + e.getValue())
        .collect(Collectors.joining(", "));
  }

  /** A directory name for the variant: its values joined, safe for any file system. */
  static String directory(Map<String, String> variant) {
    String name = variant.entrySet().stream()
        .map(e -> e.getKey().replaceAll(".*\\.", "") + "-" + e.getValue())
        .collect(Collectors.joining("_"));
    return name.replaceAll("[^A-Za-z0-9._-]", "_");
  }

  static void write(Scenario scenario, List<Row> rows, Path out) throws IOException {
    Files.createDirectories(out);
    StringBuilder md = new StringBuilder();
    md.append("# ").append(scenario.name()).append(": sweep summary\n\n");
    if (!scenario.description().isBlank()) {
      md.append(scenario.description()).append("\n\n");
    }
    md.append("Swept: `").append(scenario.get("sweep")).append("`. Each variant's table, results.json ")
        .append("and plots are in its own directory.\n\n");
    boolean replicas = scenario.replicas() > 1 || scenario.get("sweep").contains("replicas");
    md.append("| variant | scheme | demand | goodput (rps) | goodput / cap | p99 (µs) | SLO (µs) | drop % | expired % | msgs/req |")
        .append(replicas ? " retried % | reject p99 (µs) |\n" : "\n");
    md.append("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        .append(replicas ? " ---: | ---: |\n" : "\n");
    StringBuilder csv = new StringBuilder(
        "variant,scheme,demand,capacity_rps,throughput_rps,goodput_rps,p50_us,p99_us,slo_us,drop_rate,expired_rate,messages_per_request\n");
    for (Row row : rows) {
      ResultRecord r = row.result();
      md.append(String.format(Locale.ROOT, "| %s | %s | %.2f | %,.0f | %.3f | %.1f | %.0f | %.2f | %.2f | %.2f |",
          row.variant(), r.scheme(), r.demand(), r.goodputRps(), r.goodputRps() / r.capacityRps(),
          r.p99Micros(), r.sloMicros(), 100 * r.dropRate(), 100 * r.expiredRate(), r.messagesPerRequest()));
      md.append(replicas ? String.format(Locale.ROOT, " %.2f | %.1f |%n", 100 * r.retryRate(),
          r.rejectDelayP99Micros()) : System.lineSeparator());
      csv.append(String.format(Locale.ROOT, "\"%s\",%s,%.3f,%.0f,%.0f,%.0f,%.1f,%.1f,%.0f,%.5f,%.5f,%.3f%n",
          row.variant(), r.scheme(), r.demand(), r.capacityRps(), r.throughputRps(), r.goodputRps(),
          r.p50Micros(), r.p99Micros(), r.sloMicros(), r.dropRate(), r.expiredRate(), r.messagesPerRequest()));
    }
    Files.writeString(out.resolve("summary.md"), md);
    Files.writeString(out.resolve("summary.csv"), csv);
  }
}
