package io.spillway.harness.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.testing.VirtualClock;
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
 * never left stopped. The stall's timing runs on a {@link VirtualClock}; a {@code sleep} process
 * stands in for a services process, and its state is read from {@code /proc}. The kernel changes
 * that state after {@code kill} returns, when the process next runs, so the test reads it until it
 * changes (a bounded number of reads) and asserts nothing about how long that took.
 */
@EnabledOnOs(OS.LINUX)
class ServerStallTest {

  private static final long MS = 1_000_000;
  private final VirtualClock clock = new VirtualClock();
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

  /** Reads the state until it is {@code state} ({@code equal}) or is not ({@code !equal}). */
  private static boolean settles(Process p, char state, boolean equal) throws IOException {
    for (int i = 0; i < 1_000_000; i++) {
      if ((state(p) == state) == equal) {
        return true;
      }
      Thread.onSpinWait();
    }
    return false;
  }

  @Test
  void theServicesAreStoppedAtTheStartAndContinuedAfterTheLength() throws Exception {
    Process p = sleeper();
    try (ServerStall stall = ServerStall.start(List.of(p.pid()),
        new CallGraph.Stall(100 * MS, 50 * MS), clock)) {
      clock.advance(99 * MS);
      assertNotEquals('T', state(p), "not yet");
      clock.advance(MS);
      assertTrue(settles(p, 'T', true), "stopped at the start");
      clock.advance(49 * MS);
      assertEquals('T', state(p), "still stopped");
      clock.advance(MS);
      assertTrue(settles(p, 'T', false), "continued after the length, before the run ends");
    }
  }

  @Test
  void closingDuringTheStallContinuesTheServices() throws Exception {
    Process p = sleeper();
    ServerStall stall = ServerStall.start(List.of(p.pid()), new CallGraph.Stall(0, 60_000 * MS),
        clock);
    clock.advance(0);
    assertTrue(settles(p, 'T', true), "stopped");
    stall.close();
    assertTrue(settles(p, 'T', false), "continued");
    assertTrue(p.isAlive());
    clock.advance(60_000 * MS);
    assertTrue(settles(p, 'T', false), "and not stopped again");
  }

  @Test
  void aRunThatEndsBeforeTheStallStopsNothing() throws Exception {
    Process p = sleeper();
    ServerStall stall = ServerStall.start(List.of(p.pid()), new CallGraph.Stall(60_000 * MS, MS),
        clock);
    stall.close();
    clock.advance(60_001 * MS);
    assertNotEquals('T', state(p), "not stopped (running or sleeping)");
  }

  @Test
  void noStallNoCountdown() {
    assertNull(ServerStall.start(List.of(1L), null, clock));
    assertEquals(0, clock.pendingTasks());
  }
}
