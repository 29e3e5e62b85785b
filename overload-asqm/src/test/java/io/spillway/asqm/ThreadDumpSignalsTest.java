package io.spillway.asqm;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Waits for a result, not for a lock, are left out of the lock ranking. */
class ThreadDumpSignalsTest {

  /**
   * A thread joining a fork-join task ({@code ForkJoinPool.submit(...).join()}, {@code invoke},
   * {@code get}) parks on the task, a future: the dump of JDK 25, taken of a virtual thread doing
   * so, names the JDK's task adapter. Counted, it ranks a handler awaiting its parallel work as a
   * contended lock.
   */
  @Test
  void aThreadJoiningAForkJoinTaskIsNotQueueingForALock() {
    String dump = "#24 \"fjjoin\" virtual WAITING 2026-12-02T13:39:53.466151786Z\n"
        + "    at java.base/java.lang.VirtualThread.park(VirtualThread.java:742)\n"
        + "    - parking to wait for <java.util.concurrent.ForkJoinTask$AdaptedInterruptibleRunnable@732c2a62>\n"
        + "    at java.base/java.lang.System$1.parkVirtualThread(System.java:2285)\n"
        + "    at java.base/java.util.concurrent.locks.LockSupport.park(LockSupport.java:221)\n"
        + "    at java.base/java.util.concurrent.ForkJoinTask.awaitDone(ForkJoinTask.java:466)\n"
        + "    at java.base/java.util.concurrent.ForkJoinTask.join(ForkJoinTask.java:662)\n"
        + "    at com.example.Search.fanOut(Search.java:30)\n"
        + "\n";
    assertEquals(List.of(), ThreadDumpLockWaits.parse(dump, false));
  }
}
