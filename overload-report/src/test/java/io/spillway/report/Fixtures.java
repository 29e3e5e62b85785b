package io.spillway.report;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Test inputs. {@code breakwater-synthetic.json} is the simulator's steady-run output as committed
 * under docs/results; {@code breakwater-spike-trimmed.json} is its demand-spike output cut to the
 * windows from 900 ms to 2300 ms (three phases: 0.5×, 0.9×, 1.4×), convergence rows kept whole.
 */
final class Fixtures {

  static final String STEADY = "breakwater-synthetic.json";
  static final String SPIKE = "breakwater-spike-trimmed.json";

  private Fixtures() { }

  /** Copies a fixture to {@code dir/results.json} and returns that path. */
  static Path results(String fixture, Path dir) {
    Path target = dir.resolve(ReportWriter.RESULTS_FILE);
    try (InputStream in = Fixtures.class.getResourceAsStream(fixture)) {
      if (in == null) {
        throw new IllegalStateException("missing test resource " + fixture);
      }
      Files.createDirectories(dir);
      Files.copy(in, target);
      return target;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Writes {@code json} to {@code dir/results.json} and returns that path. */
  static Path results(Path dir, String json) {
    try {
      Files.createDirectories(dir);
      return Files.writeString(dir.resolve(ReportWriter.RESULTS_FILE), json);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** A minimal steady record; {@code extra} is spliced in before the closing brace. */
  static String record(String scheme, double demand, double goodput, double p99, String extra) {
    return String.format(java.util.Locale.ROOT,
        "{\"scheme\": \"%s\", \"demand\": %s, \"capacity_rps\": 1000, \"offered_rps\": %s, "
            + "\"throughput_rps\": %s, \"goodput_rps\": %s, \"p50_us\": 10, \"p99_us\": %s, "
            + "\"slo_us\": 100, \"drop_rate\": 0.1, \"reject_delay_us\": 5, "
            + "\"expired_rate\": 0, \"messages_per_request\": 2%s}",
        scheme, demand, demand * 1000, goodput, goodput, p99, extra);
  }
}
