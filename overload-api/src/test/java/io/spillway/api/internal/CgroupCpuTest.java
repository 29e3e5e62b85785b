package io.spillway.api.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.internal.CgroupCpu.Quota;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Finding a process's CPU group and its limit, on copies of the files Linux keeps. */
class CgroupCpuTest {

  @TempDir
  Path root;

  private void file(String path, String text) throws IOException {
    Path p = root.resolve(path);
    Files.createDirectories(p.getParent());
    Files.writeString(p, text);
  }

  /** A v1 group's limit: {@code quotaMicros} ("-1": none) every 100 ms. */
  private void v1Limit(String dir, String quotaMicros) throws IOException {
    file(dir + "/cpu.cfs_quota_us", quotaMicros + "\n");
    file(dir + "/cpu.cfs_period_us", "100000\n");
  }

  @Test
  void v1WithCpuAndCpuacctMountedTogetherInsideAContainer() throws IOException {
    // Docker on cgroup v1 without a cgroup namespace: the mount's root is the container's group
    file("proc/self/cgroup", "12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n1:name=systemd:/docker/abc\n");
    file("proc/self/mountinfo",
        "30 25 0:26 / / rw,relatime - overlay overlay rw\n"
        + "41 36 0:35 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro,nosuid,nodev,noexec,relatime master:17 - cgroup cgroup rw,cpu,cpuacct\n");
    v1Limit("sys/fs/cgroup/cpu,cpuacct", "150000");
    file("sys/fs/cgroup/cpu,cpuacct/cpuacct.usage", "123456789\n");
    CgroupCpu g = CgroupCpu.locate(root).orElseThrow();
    assertEquals(new Quota(150_000_000L, 100_000_000L), g.quota());
    assertEquals(1.5, g.quota().cores());
    assertEquals(123_456_789L, g.usageNanos());
  }

  @Test
  void v1WithSeparateHierarchiesAndAnUnlimitedRoot() throws IOException {
    file("proc/self/cgroup", "2:cpuacct:/spw\n1:cpu:/spw\n0::/\n");
    file("proc/self/mountinfo",
        "40 30 0:40 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
        + "41 30 0:41 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
        + "42 30 0:42 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n");
    v1Limit("sys/fs/cgroup/cpu", "-1");
    v1Limit("sys/fs/cgroup/cpu/spw", "50000");
    file("sys/fs/cgroup/cpuacct/cpuacct.usage", "999999999999\n");
    file("sys/fs/cgroup/cpuacct/spw/cpuacct.usage", "2000\n");
    CgroupCpu g = CgroupCpu.locate(root).orElseThrow();
    assertEquals(0.5, g.quota().cores());
    assertEquals(2_000L, g.usageNanos(), "the limited group's usage, not the machine's");

    file("sys/fs/cgroup/cpu/spw/cpu.cfs_quota_us", "-1\n"); // the limit lifted
    assertNull(g.quota());
  }

  @Test
  void v1AccountingInAnotherPlaceCountsOnlyTheProcesssOwnGroup() throws IOException {
    // the accounting hierarchy holds the process elsewhere: only its own group's usage is known,
    // so a tighter limit on an ancestor, whose usage cannot be read, is not steered by
    file("proc/self/cgroup", "2:cpuacct:/acct\n1:cpu:/a/b\n");
    file("proc/self/mountinfo",
        "40 30 0:40 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"
        + "41 30 0:41 / /sys/fs/cgroup/cpuacct rw - cgroup cgroup rw,cpuacct\n");
    v1Limit("sys/fs/cgroup/cpu/a/b", "80000");
    v1Limit("sys/fs/cgroup/cpu/a", "20000");
    file("sys/fs/cgroup/cpuacct/acct/cpuacct.usage", "42\n");
    CgroupCpu g = CgroupCpu.locate(root).orElseThrow();
    assertEquals(0.8, g.quota().cores());
    assertEquals(42L, g.usageNanos());
  }

  @Test
  void v2InANamespaceWithAndWithoutALimit() throws IOException {
    file("proc/self/cgroup", "0::/\n");
    file("proc/self/mountinfo",
        "35 30 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw,nsdelegate\n");
    file("sys/fs/cgroup/cpu.max", "max 100000\n");
    file("sys/fs/cgroup/cpu.stat", "usage_usec 5000\nuser_usec 4000\nsystem_usec 1000\n"
        + "nr_periods 7\nnr_throttled 2\nthrottled_usec 300\n");
    CgroupCpu g = CgroupCpu.locate(root).orElseThrow();
    assertNull(g.quota(), "max: no limit");

    file("sys/fs/cgroup/cpu.max", "25000 50000\n");
    assertEquals(new Quota(25_000_000L, 50_000_000L), g.quota());
    assertEquals(5_000_000L, g.usageNanos());
  }

  @Test
  void v2TheTightestLimitOnTheWayUpBindsAndItsUsageCounts() throws IOException {
    file("proc/self/cgroup", "0::/kubepods/pod1/c1\n");
    file("proc/self/mountinfo", "35 30 0:30 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
    file("sys/fs/cgroup/kubepods/pod1/c1/cpu.max", "200000 100000\n"); // two cores
    file("sys/fs/cgroup/kubepods/pod1/c1/cpu.stat", "usage_usec 10\n");
    file("sys/fs/cgroup/kubepods/pod1/cpu.max", "50000 100000\n"); // half a core for the pod
    file("sys/fs/cgroup/kubepods/pod1/cpu.stat", "usage_usec 20\n");
    file("sys/fs/cgroup/kubepods/cpu.max", "max 100000\n");
    file("sys/fs/cgroup/kubepods/cpu.stat", "usage_usec 30\n");
    CgroupCpu g = CgroupCpu.locate(root).orElseThrow();
    assertEquals(0.5, g.quota().cores());
    assertEquals(20_000L, g.usageNanos());
  }

  @Test
  void noGroupFilesOrNoCpuControllerFindNothing() throws IOException {
    assertTrue(CgroupCpu.locate(root).isEmpty(), "no /proc");
    file("proc/self/cgroup", "3:memory:/x\n");
    file("proc/self/mountinfo", "40 30 0:40 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n");
    assertTrue(CgroupCpu.locate(root).isEmpty(), "no cpu controller");
  }

  @Test
  void mountinfoFieldsAreUnescapedAndPathsResolvedAgainstTheMountRoot() {
    assertEquals("/sys/fs/cgroup/a b", CgroupCpu.unescape("/sys/fs/cgroup/a\\040b"));
    assertEquals("/c1", CgroupCpu.relative("/docker/x/c1", "/docker/x"));
    assertEquals("/", CgroupCpu.relative("/docker/x", "/docker/x"));
    assertEquals("/", CgroupCpu.relative("/", "/docker/x"), "a namespace shows its root as /");
    assertEquals("/a", CgroupCpu.parent("/a/b"));
    assertEquals("/", CgroupCpu.parent("/a"));
    assertNull(CgroupCpu.parent("/"));
    String[] m = CgroupCpu.mount(List.of(
        "41 36 0:35 / /sys/fs/cgroup/cpu,cpuacct rw shared:1 master:2 - cgroup cgroup rw,cpu,cpuacct"),
        "cgroup", "cpuacct");
    assertEquals("/sys/fs/cgroup/cpu,cpuacct", m[1]);
    assertNull(CgroupCpu.mount(List.of("41 36 0:35 / /x rw - cgroup cgroup rw,cpuset"), "cgroup", "cpu"));
  }

  @Test
  void theCpusAProcessMayRunOnAreCountedFromItsStatus() throws IOException {
    assertEquals(-1, CgroupCpu.allowedCpus(root));
    file("proc/self/status", "Name:\tjava\nCpus_allowed:\t30f\nCpus_allowed_list:\t0-3,8,10-11\n");
    assertEquals(7, CgroupCpu.allowedCpus(root));
  }
}
