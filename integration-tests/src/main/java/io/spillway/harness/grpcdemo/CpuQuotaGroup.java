package io.spillway.harness.grpcdemo;

import io.spillway.api.internal.CgroupCpu;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * A Linux control group with a CPU bandwidth limit, as a container runtime makes one for a CPU
 * limit (Docker {@code --cpus}, Kubernetes {@code resources.limits.cpu}): {@code cores} of CPU
 * time in every 100 ms period. The demo starts its server JVMs inside it
 * ({@link DemoServerProcess}). Needs root and a writable cgroup file system: v1's {@code cpu} and
 * {@code cpuacct} hierarchies, or v2 with the {@code cpu} controller enabled for children of the
 * root.
 */
final class CpuQuotaGroup {

  static final long PERIOD_MICROS = 100_000;
  private static final String NAME = "spillway-grpc-demo";

  private CpuQuotaGroup() { }

  /**
   * Creates (or reuses) the group with a quota of {@code cores}, returns the {@code cgroup.procs}
   * files a process writes its pid to, one per hierarchy.
   *
   * @throws IOException with what is missing, where the group cannot be made
   */
  static List<Path> create(double cores) throws IOException {
    if (!(cores > 0)) {
      throw new IllegalArgumentException("cpu_quota: cores above 0, or none; got " + cores);
    }
    long quota = Math.round(cores * PERIOD_MICROS);
    Path v1cpu = Path.of("/sys/fs/cgroup/cpu");
    Path v1acct = Path.of("/sys/fs/cgroup/cpuacct");
    Path v2 = Path.of("/sys/fs/cgroup/cgroup.controllers");
    List<Path> procs = new ArrayList<>();
    try {
      if (Files.isDirectory(v1cpu) && Files.exists(v1cpu.resolve("cpu.cfs_quota_us"))) {
        Path cpu = Files.createDirectories(v1cpu.resolve(NAME));
        write(cpu.resolve("cpu.cfs_period_us"), Long.toString(PERIOD_MICROS));
        write(cpu.resolve("cpu.cfs_quota_us"), Long.toString(quota));
        procs.add(cpu.resolve("cgroup.procs"));
        if (Files.isDirectory(v1acct) && !Files.isSameFile(v1acct, v1cpu)
            && !Files.exists(v1cpu.resolve("cpuacct.usage"))) {
          procs.add(Files.createDirectories(v1acct.resolve(NAME)).resolve("cgroup.procs"));
        }
      } else if (Files.exists(v2)) {
        Path root = v2.getParent();
        String enabled = Files.readString(root.resolve("cgroup.subtree_control"), StandardCharsets.US_ASCII);
        if (!List.of(enabled.trim().split("\\s+")).contains("cpu")) {
          write(root.resolve("cgroup.subtree_control"), "+cpu");
        }
        Path group = Files.createDirectories(root.resolve(NAME));
        write(group.resolve("cpu.max"), quota + " " + PERIOD_MICROS);
        procs.add(group.resolve("cgroup.procs"));
      } else {
        throw new IOException("no cgroup CPU controller under /sys/fs/cgroup");
      }
    } catch (IOException | SecurityException e) {
      throw new IOException(String.format(Locale.ROOT, "cpu_quota=%s needs a control group with a "
          + "CPU limit, which this user cannot make (%s); run as root on Linux", cores, e), e);
    }
    return procs;
  }

  /**
   * The words that start a command inside the groups whose {@code cgroup.procs} files are given,
   * before its first instruction: a shell that writes its pid to each and then runs the command
   * in its place. Empty for no groups.
   */
  static List<String> joinCommand(List<Path> procs) {
    if (procs.isEmpty()) {
      return List.of();
    }
    StringBuilder join = new StringBuilder();
    for (Path p : procs) {
      join.append("echo $$ > '").append(p).append("' && ");
    }
    return List.of("/bin/sh", "-c", join + "exec \"$@\"", "sh");
  }

  /**
   * The group's throttling counters: {periods, periods in which it was throttled, nanoseconds
   * throttled}, or {@code null} if they cannot be read.
   */
  static long[] throttling(List<Path> procs) {
    try {
      String stat = Files.readString(procs.get(0).resolveSibling("cpu.stat"), StandardCharsets.US_ASCII);
      long ns = CgroupCpu.statField(stat, "throttled_time");
      if (ns < 0) {
        long us = CgroupCpu.statField(stat, "throttled_usec");
        ns = us < 0 ? -1 : us * 1_000;
      }
      return new long[] {CgroupCpu.statField(stat, "nr_periods"), CgroupCpu.statField(stat, "nr_throttled"), ns};
    } catch (IOException | RuntimeException e) {
      return null;
    }
  }

  /** What the group was throttled between two readings of {@link #throttling}. */
  static String describe(long[] before, long[] after) {
    if (before == null || after == null) {
      return "throttling not read";
    }
    return String.format(Locale.ROOT, "throttled in %d of %d quota periods, %d ms in all",
        after[1] - before[1], after[0] - before[0], (after[2] - before[2]) / 1_000_000);
  }

  private static void write(Path file, String value) throws IOException {
    Files.writeString(file, value, StandardCharsets.US_ASCII);
  }
}
