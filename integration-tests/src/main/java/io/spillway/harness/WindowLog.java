package io.spillway.harness;

import io.spillway.sim.Recorder;
import io.spillway.sim.Tally;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Locale;

/**
 * {@code windows.csv} beside a harness run's results.json: one line per measured window (the
 * scenario's {@code window_ms}) of every scheme and level, with the window's completions, p99 and
 * maximum latency, and the longest gap between two turns of the load generator's loop in it. A
 * steady level's p99 is one number over thousands of requests; this file says whether a miss was
 * the controller's (every window a little over) or a stall's (a few windows far over), and whose
 * stall (a generator gap of milliseconds puts it on the generator's side).
 *
 * <p>Not thread-safe: the harness's main thread appends between levels.
 */
final class WindowLog {

  static final String FILE = "windows.csv";

  private final Path file;

  WindowLog(Path dir) throws IOException {
    Files.createDirectories(dir);
    this.file = dir.resolve(FILE);
    Files.writeString(file, "scheme,demand,window,start_ms,completed,p99_us,max_us,generator_gap_us\n",
        StandardCharsets.UTF_8);
  }

  /** A gap array sized for a run of {@code runNanos} in the recorder's windows. */
  static long[] gapsFor(long runNanos, long windowNanos) {
    return new long[(int) (runNanos / windowNanos) + 2];
  }

  /** Appends the windows of {@code recorder} that start at or after {@code fromNanos}. */
  void append(String scheme, Recorder recorder, long fromNanos, long[] loopGaps) throws IOException {
    StringBuilder lines = new StringBuilder();
    long width = recorder.windowNanos();
    for (int w = (int) (fromNanos / width); w < recorder.windowCount(); w++) {
      Tally t = recorder.window(w);
      long start = w * width;
      boolean any = t.latency.getTotalCount() > 0;
      lines.append(String.format(Locale.ROOT, "%s,%.2f,%d,%.0f,%d,%.1f,%.1f,%.1f%n", scheme,
          recorder.demandAt(start), w, start / 1e6, t.completed,
          any ? t.latency.getValueAtPercentile(99) / 1e3 : 0.0, any ? t.latency.getMaxValue() / 1e3 : 0.0,
          w < loopGaps.length ? loopGaps[w] / 1e3 : 0.0));
    }
    Files.writeString(file, lines, StandardCharsets.UTF_8, StandardOpenOption.APPEND);
  }
}
