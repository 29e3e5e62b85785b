package io.spillway.api.internal;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;

/**
 * The CPU bandwidth limit of the control group this process runs in, and the group's CPU usage,
 * read from Linux's cgroup files (v2: {@code cpu.max}, {@code cpu.stat}; v1: {@code
 * cpu.cfs_quota_us}, {@code cpu.cfs_period_us}, {@code cpuacct.usage}).
 *
 * <p>The group is found as the JDK's own container support finds it: the process's line for the
 * controller in {@code /proc/self/cgroup}, resolved against the mount of that hierarchy in {@code
 * /proc/self/mountinfo} (whose root, inside a container without a cgroup namespace, is the
 * container's own group). Where the group and its ancestors up to that root carry limits, the
 * tightest (the least quota per period) binds, and its usage is the one that counts against it.
 *
 * <p>The quota is read again on each {@link #quota()} call, so a limit changed while the process
 * runs (a group it was moved into, a resized container) is followed.
 *
 * <p>Thread-safe.
 */
public final class CgroupCpu {

  /** A limit: {@code quotaNanos} of CPU time in every {@code periodNanos}. */
  public record Quota(long quotaNanos, long periodNanos) {
    /** The limit in cores: quota ÷ period. */
    public double cores() {
      return (double) quotaNanos / periodNanos;
    }
  }

  private final boolean v2;
  /** Candidate groups from the process's own up to the mount's root, each with its usage file. */
  private final List<Path> quotaDirs;
  private final List<Path> usageFiles;
  /** Index of the group whose limit {@link #quota()} found tightest last. */
  private volatile int bound;
  private final OpenFile usage = new OpenFile();

  private CgroupCpu(boolean v2, List<Path> quotaDirs, List<Path> usageFiles) {
    this.v2 = v2;
    this.quotaDirs = List.copyOf(quotaDirs);
    // null where a group's usage cannot be read (an ancestor outside the accounting hierarchy)
    this.usageFiles = Collections.unmodifiableList(new ArrayList<>(usageFiles));
  }

  /** The process's CPU group on this machine, or empty where none can be read. */
  public static Optional<CgroupCpu> locate() {
    return locate(Path.of("/"));
  }

  /**
   * As {@link #locate()}, with {@code /proc} and every mount point read under {@code root} (a
   * test's copy of the files).
   */
  public static Optional<CgroupCpu> locate(Path root) {
    try {
      List<String> groups = Files.readAllLines(root.resolve("proc/self/cgroup"), StandardCharsets.UTF_8);
      List<String> mounts = Files.readAllLines(root.resolve("proc/self/mountinfo"), StandardCharsets.UTF_8);
      String cpuPath = null;
      String cpuacctPath = null;
      String unifiedPath = null;
      for (String line : groups) {
        String[] f = line.split(":", 3);
        if (f.length < 3) {
          continue;
        }
        if (f[1].isEmpty() && f[0].equals("0")) {
          unifiedPath = f[2];
          continue;
        }
        for (String controller : f[1].split(",")) {
          if (controller.equals("cpu")) {
            cpuPath = f[2];
          } else if (controller.equals("cpuacct")) {
            cpuacctPath = f[2];
          }
        }
      }
      if (cpuPath != null) {
        String[] cpuMount = mount(mounts, "cgroup", "cpu");
        String[] acctMount = cpuacctPath == null ? null : mount(mounts, "cgroup", "cpuacct");
        if (cpuMount == null || acctMount == null) {
          return Optional.empty();
        }
        List<Path> quotaDirs = new ArrayList<>();
        List<Path> usage = new ArrayList<>();
        String rel = relative(cpuPath, cpuMount[0]);
        String acctRel = relative(cpuacctPath, acctMount[0]);
        for (String r = rel; r != null; r = parent(r)) {
          quotaDirs.add(under(root, cpuMount[1], r));
          // the same group in the accounting hierarchy, which is the same directory where the
          // two controllers are mounted together
          String a = acctRel.equals(rel) ? r : (r.equals(rel) ? acctRel : null);
          usage.add(a == null ? null : under(root, acctMount[1], a).resolve("cpuacct.usage"));
        }
        return Optional.of(new CgroupCpu(false, quotaDirs, usage));
      }
      if (unifiedPath != null) {
        String[] m = mount(mounts, "cgroup2", null);
        if (m == null) {
          return Optional.empty();
        }
        List<Path> quotaDirs = new ArrayList<>();
        List<Path> usage = new ArrayList<>();
        for (String r = relative(unifiedPath, m[0]); r != null; r = parent(r)) {
          Path dir = under(root, m[1], r);
          quotaDirs.add(dir);
          usage.add(dir.resolve("cpu.stat"));
        }
        return Optional.of(new CgroupCpu(true, quotaDirs, usage));
      }
      return Optional.empty();
    } catch (IOException | RuntimeException e) {
      return Optional.empty();
    }
  }

  /**
   * The CPUs this process may run on ({@code Cpus_allowed_list} in {@code /proc/self/status},
   * "0-3,8"), read under {@code root}, or -1 if it cannot be read.
   */
  public static int allowedCpus(Path root) {
    try {
      for (String line : Files.readAllLines(root.resolve("proc/self/status"), StandardCharsets.US_ASCII)) {
        if (line.startsWith("Cpus_allowed_list:")) {
          int n = 0;
          for (String range : line.substring(line.indexOf(':') + 1).trim().split(",")) {
            int dash = range.indexOf('-');
            n += dash < 0 ? 1
                : Integer.parseInt(range.substring(dash + 1)) - Integer.parseInt(range.substring(0, dash)) + 1;
          }
          return n;
        }
      }
      return -1;
    } catch (IOException | RuntimeException e) {
      return -1;
    }
  }

  /**
   * The tightest limit on the group and its ancestors whose usage can be read, or {@code null}
   * where none is set.
   */
  public Quota quota() {
    Quota best = null;
    for (int i = 0; i < quotaDirs.size(); i++) {
      if (usageFiles.get(i) == null) {
        continue;
      }
      Quota q = readQuota(quotaDirs.get(i));
      if (q != null && (best == null || q.cores() < best.cores())) {
        best = q;
        bound = i;
      }
    }
    return best;
  }

  /**
   * The CPU time the group whose limit binds (as {@link #quota()} last found it) has used since
   * it was created, in nanoseconds, or -1 if it cannot be read. The file is kept open and read
   * again from its start: opening a cgroup file costs tens of microseconds, a read a few.
   */
  public long usageNanos() {
    Path file = usageFiles.get(bound);
    if (file == null) {
      return -1;
    }
    String text = usage.read(file);
    if (text == null) {
      return -1;
    }
    try {
      if (!v2) {
        return Long.parseLong(text.trim());
      }
      long usec = statField(text, "usage_usec");
      return usec < 0 ? -1 : usec * 1_000;
    } catch (RuntimeException e) {
      return -1;
    }
  }

  /** One file kept open and read whole from its start on each call. Thread-safe. */
  private static final class OpenFile {
    private final byte[] buffer = new byte[1024];
    private RandomAccessFile file;
    private Path path;

    synchronized String read(Path p) {
      try {
        if (file == null || !p.equals(path)) {
          close();
          file = new RandomAccessFile(p.toFile(), "r");
          path = p;
        }
        file.seek(0);
        int n = file.read(buffer);
        return n <= 0 ? null : new String(buffer, 0, n, StandardCharsets.US_ASCII);
      } catch (IOException | RuntimeException e) {
        close();
        return null;
      }
    }

    private void close() {
      if (file != null) {
        try {
          file.close();
        } catch (IOException ignored) {
          // reopened on the next read
        }
        file = null;
      }
    }
  }

  private Quota readQuota(Path dir) {
    try {
      if (v2) {
        // "max 100000" (no limit) or "50000 100000", microseconds
        String[] f = Files.readString(dir.resolve("cpu.max"), StandardCharsets.US_ASCII).trim().split("\\s+");
        if (f.length != 2 || f[0].equals("max")) {
          return null;
        }
        return quota(Long.parseLong(f[0]), Long.parseLong(f[1]));
      }
      long quota = Long.parseLong(Files.readString(dir.resolve("cpu.cfs_quota_us"), StandardCharsets.US_ASCII).trim());
      long period = Long.parseLong(Files.readString(dir.resolve("cpu.cfs_period_us"), StandardCharsets.US_ASCII).trim());
      return quota(quota, period);
    } catch (IOException | RuntimeException e) {
      return null;
    }
  }

  private static Quota quota(long quotaMicros, long periodMicros) {
    if (quotaMicros <= 0 || periodMicros <= 0) {
      return null; // v1 writes -1 for no limit
    }
    return new Quota(quotaMicros * 1_000, periodMicros * 1_000);
  }

  /**
   * The value of {@code key} in a "key value" per line stat file ({@code cpu.stat}), or -1 if
   * absent.
   */
  public static long statField(String text, String key) {
    for (String line : text.split("\n")) {
      int sp = line.indexOf(' ');
      if (sp > 0 && line.substring(0, sp).equals(key)) {
        return Long.parseLong(line.substring(sp + 1).trim());
      }
    }
    return -1;
  }

  /**
   * The root and mount point ({@code [root, mountPoint]}) of the first mount of {@code fsType}
   * whose super options name {@code controller} (any, for {@code null}), or {@code null}.
   * A mountinfo line: {@code id parent dev root mountpoint options [optional...] - fstype source
   * superoptions}.
   */
  static String[] mount(List<String> mountinfo, String fsType, String controller) {
    for (String line : mountinfo) {
      String[] f = line.split(" ");
      int dash = -1;
      for (int i = 6; i < f.length; i++) {
        if (f[i].equals("-")) {
          dash = i;
          break;
        }
      }
      if (dash < 0 || dash + 1 >= f.length || !f[dash + 1].equals(fsType)) {
        continue;
      }
      if (controller != null) {
        String options = dash + 3 < f.length ? f[dash + 3] : "";
        if (!List.of(options.split(",")).contains(controller)) {
          continue;
        }
      }
      return new String[] {unescape(f[3]), unescape(f[4])};
    }
    return null;
  }

  /** Mountinfo escapes space, tab, newline and backslash as three octal digits. */
  static String unescape(String s) {
    if (s.indexOf('\\') < 0) {
      return s;
    }
    StringBuilder b = new StringBuilder(s.length());
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '\\' && i + 3 < s.length()) {
        try {
          b.append((char) Integer.parseInt(s.substring(i + 1, i + 4), 8));
          i += 3;
          continue;
        } catch (NumberFormatException notOctal) {
          // kept as it is
        }
      }
      b.append(c);
    }
    return b.toString();
  }

  /**
   * {@code path} (from /proc/self/cgroup) relative to the mount's root: the root itself where the
   * process sits in it or above it (a cgroup namespace shows the root as "/").
   */
  static String relative(String path, String mountRoot) {
    if (mountRoot.equals("/")) {
      return path;
    }
    if (path.equals(mountRoot)) {
      return "/";
    }
    if (path.startsWith(mountRoot + "/")) {
      return path.substring(mountRoot.length());
    }
    return "/";
  }

  /** The parent of a relative group path, or {@code null} above the mount's root. */
  static String parent(String rel) {
    if (rel.equals("/") || rel.isEmpty()) {
      return null;
    }
    int slash = rel.lastIndexOf('/');
    return slash <= 0 ? "/" : rel.substring(0, slash);
  }

  private static Path under(Path root, String mountPoint, String rel) {
    String m = mountPoint.startsWith("/") ? mountPoint.substring(1) : mountPoint;
    String r = rel.startsWith("/") ? rel.substring(1) : rel;
    Path p = root.resolve(m);
    return r.isEmpty() ? p : p.resolve(r);
  }
}
