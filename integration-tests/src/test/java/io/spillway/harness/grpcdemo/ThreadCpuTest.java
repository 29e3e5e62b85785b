package io.spillway.harness.grpcdemo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A JVM's CPU split by thread from a process's /proc directory. */
class ThreadCpuTest {

  @TempDir
  Path proc;

  /** A stat line as the kernel writes it: utime and stime are fields 14 and 15. */
  private static String stat(int tid, String name, long utime, long stime) {
    return tid + " (" + name + ") S 1 1 1 0 -1 4194368 100 0 0 0 " + utime + " " + stime
        + " 0 0 20 0 30 0 1234 0 0\n";
  }

  private void task(int tid, String name, long utime, long stime) throws IOException {
    Path dir = Files.createDirectories(proc.resolve("task").resolve(Integer.toString(tid)));
    Files.writeString(dir.resolve("stat"), stat(tid, name, utime, stime));
  }

  @Test
  void splitsCompilersAndCollectorFromTheRest() throws IOException {
    Files.writeString(proc.resolve("stat"), stat(7, "java", 300, 100));
    task(7, "java", 2, 1);
    task(8, "C2 CompilerThre", 50, 5);
    task(9, "C1 CompilerThre", 10, 0);
    task(10, "GC Thread#0", 20, 4);
    task(11, "VM Thread", 3, 3);
    task(12, "http-nio-8080-e", 200, 90);
    // A thread whose name holds parentheses and spaces: the name ends at the last ')'.
    task(13, "a (b) c", 1, 1);

    assertArrayEquals(new long[] {650, 300, 4000}, ThreadCpu.read(proc));
  }

  @Test
  void sumsTheThreadsWhoseNamesStartWithAPrefix() throws IOException {
    task(7, "java", 2, 1);
    task(8, "grpc-default-wo", 30, 10);
    task(9, "grpc-default-wo", 5, 5);
    task(10, "grpc-nio-worker", 1, 0);
    task(11, "grpc-default-bo", 100, 0);
    task(12, "ForkJoinPool-1-", 400, 20);

    assertEquals(510, ThreadCpu.threadsMillis(proc, "grpc-default-wo", "grpc-nio-worker"));
    assertEquals(-1, ThreadCpu.threadsMillis(proc.resolve("missing"), "grpc-"));
  }

  @Test
  void describesTheDifferenceBesideTheQuota() {
    assertEquals("CPU 1000 ms of the 1500 ms quota: compilers 300, GC and VM 50, the rest 650",
        ThreadCpu.describe(new long[] {100, 50, 2000}, new long[] {400, 100, 3000}, 1500));
  }

  @Test
  void aProcessThatIsGoneReadsAsUnknown() {
    long[] none = ThreadCpu.read(proc.resolve("missing"));

    assertArrayEquals(new long[] {-1, -1, -1}, none);
    assertEquals("thread CPU not read", ThreadCpu.describe(none, none, 100));
  }
}
