package io.spillway.harness.grpcdemo;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.function.BiConsumer;

/**
 * The CPU a JVM process has used, split between its compiler threads, its garbage collector's
 * and VM threads, and the rest, read from Linux's {@code /proc/PID/task/TID/stat} (clock ticks of
 * 10 ms). Under a CPU limit every thread of the process draws on the same quota, so a level's
 * throttling can come from work no admission decision controls.
 */
final class ThreadCpu {

  /** {compilers, GC and VM, the whole process} in milliseconds; all -1 where not readable. */
  static long[] read(long pid) {
    return read(Path.of("/proc", Long.toString(pid)));
  }

  /**
   * The same from a process's {@code /proc} directory. Threads are told apart by the names the JVM
   * gives them, as the kernel keeps them (15 characters).
   */
  static long[] read(Path proc) {
    long[] compilersAndVm = new long[2];
    long total;
    try {
      total = ticks(Files.readString(proc.resolve("stat"), StandardCharsets.US_ASCII));
      eachThread(proc, (name, stat) -> {
        if (name.startsWith("C1 Compiler") || name.startsWith("C2 Compiler")) {
          compilersAndVm[0] += ticks(stat);
        } else if (name.startsWith("GC Thread") || name.startsWith("VM Thread")
            || name.startsWith("G1 ") || name.startsWith("VM Periodic")) {
          compilersAndVm[1] += ticks(stat);
        }
      });
    } catch (IOException | RuntimeException e) {
      return new long[] {-1, -1, -1};
    }
    return new long[] {compilersAndVm[0] * 10, compilersAndVm[1] * 10, total * 10};
  }

  /**
   * The CPU of the threads of the process at {@code proc} whose names (as the kernel keeps them,
   * 15 characters) start with one of {@code prefixes}, in milliseconds; -1 where not readable.
   */
  static long threadsMillis(Path proc, String... prefixes) {
    long[] sum = new long[1];
    try {
      eachThread(proc, (name, stat) -> {
        for (String prefix : prefixes) {
          if (name.startsWith(prefix)) {
            sum[0] += ticks(stat);
            break;
          }
        }
      });
    } catch (IOException | RuntimeException e) {
      return -1;
    }
    return sum[0] * 10;
  }

  /**
   * Hands {@code each} the name (as the kernel keeps it) and the stat line of every thread of the
   * process at {@code proc}; a thread that ends meanwhile is skipped.
   */
  private static void eachThread(Path proc, BiConsumer<String, String> each) throws IOException {
    try (DirectoryStream<Path> tasks = Files.newDirectoryStream(proc.resolve("task"))) {
      for (Path task : tasks) {
        String stat;
        try {
          stat = Files.readString(task.resolve("stat"), StandardCharsets.US_ASCII);
        } catch (IOException gone) {
          continue; // the thread ended meanwhile
        }
        each.accept(stat.substring(stat.indexOf('(') + 1, stat.lastIndexOf(')')), stat);
      }
    }
  }

  /** utime + stime of one stat line: fields 14 and 15, counted after the parenthesized name. */
  static long ticks(String stat) {
    String[] f = stat.substring(stat.lastIndexOf(')') + 2).trim().split(" ");
    return Long.parseLong(f[11]) + Long.parseLong(f[12]);
  }

  /** The CPU between two readings, beside the quota of the same time, {@code quotaMillis}. */
  static String describe(long[] before, long[] after, long quotaMillis) {
    if (before[2] < 0 || after[2] < 0) {
      return "thread CPU not read";
    }
    long c = after[0] - before[0];
    long v = after[1] - before[1];
    long t = after[2] - before[2];
    return String.format(Locale.ROOT, "CPU %d ms of the %d ms quota: compilers %d, GC and VM %d, "
        + "the rest %d", t, quotaMillis, c, v, t - c - v);
  }

  private ThreadCpu() { }
}
