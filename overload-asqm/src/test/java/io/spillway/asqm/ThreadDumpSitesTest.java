package io.spillway.asqm;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.junit.jupiter.api.Test;

/** A wait is labelled with the application frame that waited, past Spillway's own wrappers. */
class ThreadDumpSitesTest {

  /**
   * A request waiting for a pool's permit parks inside {@link BudgetedSemaphore}, as it parks inside
   * {@link BudgetedLock}: the site is the application's frame that asked, so two pools (or two
   * callers of one) are told apart. The frames are those of a JDK 25 dump of a virtual thread
   * waiting in {@code acquireWithinBudget()}.
   */
  @Test
  void aWaitForAPermitIsLabelledWithTheCallerNotTheSemaphore() {
    String dump = "#30 \"\" virtual WAITING 2026-12-02T13:46:31.43Z\n"
        + "    at java.base/java.lang.VirtualThread.park(VirtualThread.java:742)\n"
        + "    - parking to wait for <io.spillway.asqm.BudgetedSemaphore$Sync@149e0f5d>\n"
        + "    at java.base/java.lang.System$1.parkVirtualThread(System.java:2285)\n"
        + "    at java.base/java.util.concurrent.locks.LockSupport.park(LockSupport.java:221)\n"
        + "    at java.base/java.util.concurrent.locks.AbstractQueuedSynchronizer.acquire(AbstractQueuedSynchronizer.java:790)\n"
        + "    at java.base/java.util.concurrent.locks.AbstractQueuedSynchronizer.acquireShared(AbstractQueuedSynchronizer.java:1119)\n"
        + "    at io.spillway.asqm.BudgetedSemaphore.acquireQueued(BudgetedSemaphore.java:329)\n"
        + "    at io.spillway.asqm.BudgetedSemaphore.acquireWithinBudget(BudgetedSemaphore.java:145)\n"
        + "    at com.example.Dao.find(Dao.java:21)\n"
        + "    at java.base/java.lang.VirtualThread.run(VirtualThread.java:460)\n"
        + "\n";
    List<ThreadDumpLockWaits.LockWait> waits = ThreadDumpLockWaits.parse(dump, false);
    assertEquals(1, waits.size(), "" + waits);
    assertEquals("com.example.Dao.find:21", waits.get(0).site());
  }
}
