package io.spillway.asqm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.asqm.BudgetedLockTest.Worker;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@link BudgetedLock}'s JFR wait event, recorded in this JVM with no threshold. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class BudgetedLockWaitEventTest {

  final AtomicLong now = new AtomicLong(Long.MAX_VALUE - 100);

  /**
   * {@code io.spillway.BudgetedLockWait} is offered for every contended acquisition, so a recording
   * names the lock whatever form the request waited in: {@code lock()}, and also {@code
   * lockInterruptibly()} and a timed {@code tryLock}.
   */
  @Test
  void everyContendedAcquisitionFormIsOfferedAsALockWaitEvent() throws Exception {
    BudgetedLock lock = new BudgetedLock("wait-event", now::get);
    Path file = Files.createTempFile("budgeted-lock-wait", ".jfr");
    try (Recording recording = new Recording()) {
      recording.enable("io.spillway.BudgetedLockWait").withThreshold(Duration.ZERO);
      recording.start();
      lock.lock();
      Worker<Void> plain = new Worker<>(() -> {
        lock.lock();
        lock.unlock();
        return null;
      });
      Worker<Void> interruptibly = new Worker<>(() -> {
        lock.lockInterruptibly();
        lock.unlock();
        return null;
      });
      Worker<Boolean> timed = new Worker<>(() -> {
        boolean acquired = lock.tryLock(1, TimeUnit.HOURS);
        if (acquired) {
          lock.unlock();
        }
        return acquired;
      });
      Await.until(() -> lock.hasQueuedThread(plain.thread)
          && lock.hasQueuedThread(interruptibly.thread) && lock.hasQueuedThread(timed.thread));
      lock.unlock();
      plain.join();
      interruptibly.join();
      assertTrue(timed.join());
      recording.stop();
      recording.dump(file);
      List<RecordedEvent> waits = RecordingFile.readAllEvents(file).stream()
          .filter(e -> e.getEventType().getName().equals("io.spillway.BudgetedLockWait"))
          .filter(e -> "wait-event".equals(e.getString("lockName")))
          .toList();
      assertEquals(3, waits.size(), "one wait event per contended acquisition: " + waits);
    } finally {
      Files.deleteIfExists(file);
    }
  }
}
