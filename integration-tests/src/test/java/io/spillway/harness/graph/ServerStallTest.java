package io.spillway.harness.graph;

import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.sim.CallGraph;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;

/**
 * {@code graph.stall_ms} in the harness: the services processes are stopped, then continued, and
 * never left stopped. A {@code sleep} process stands in for a services process; its state is read
 * from {@code /proc}. Waits are bounded, and nothing is asserted about how long anything took.
 */
@EnabledOnOs(OS.LINUX)
class ServerStallTest {

  private static final long MS = 1_000_000;
  private Process sleeper;

  private Process sleeper() throws IOException {
    sleeper = new ProcessBuilder("sleep", "60").start();
    return sleeper;
  }

  @AfterEach
  void killSleeper() throws Exception {
    if (sleeper != null) {
      new ProcessBuilder("/bin/kill", "-CONT", Long.toString(sleeper.pid())).start().waitFor();
      sleeper.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
    }
  }

  /** The process's state letter from {@code /proc/PID/stat}: T when stopped. */
  private static char state(Process p) throws IOException {
    String stat = Files.readString(Path.of("/proc/" + p.pid() + "/stat"));
    return stat.charAt(stat.lastIndexOf(')') + 2);
  }

  private static boolean becomes(Process p, char wanted) throws Exception {
    for (int i = 0; i < 2_000; i++) { // at most 20 s
      if (state(p) == wanted) {
        return true;
      }
      Thread.sleep(10);
    }
    return false;
  }

  private static boolean leaves(Process p, char state) throws Exception {
    for (int i = 0; i < 2_000; i++) { // at most 20 s
      if (state(p) != state) {
        return true;
      }
      Thread.sleep(10);
    }
    return false;
  }

  @Test
  void theServicesAreStoppedThenContinued() throws Exception {
    Process p = sleeper();
    ServerStall stall = ServerStall.start(List.of(p.pid()), new CallGraph.Stall(0, 60_000 * MS));
    assertTrue(becomes(p, 'T'), "stopped");
    stall.close(); // ends the stall early
    assertTrue(leaves(p, 'T'), "continued");
    assertTrue(p.isAlive());
  }

  @Test
  void aStallThatEndsOnItsOwnContinuesTheServices() throws Exception {
    Process p = sleeper();
    try (ServerStall stall = ServerStall.start(List.of(p.pid()), new CallGraph.Stall(0, 1_000 * MS))) {
      assertTrue(becomes(p, 'T'), "stopped");
      assertTrue(leaves(p, 'T'), "continued after its length, before the run ends");
    }
  }

  @Test
  void aRunThatEndsBeforeTheStallStopsNothing() throws Exception {
    Process p = sleeper();
    ServerStall stall = ServerStall.start(List.of(p.pid()), new CallGraph.Stall(60_000 * MS, MS));
    stall.close();
    assertNotEquals('T', state(p), "not stopped (running or sleeping)");
  }

  @Test
  void noStallNoThread() {
    assertNull(ServerStall.start(List.of(1L), null));
  }
}
