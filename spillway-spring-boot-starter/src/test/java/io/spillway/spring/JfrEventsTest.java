package io.spillway.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.BudgetExceededException;
import io.spillway.api.ControlChannel;
import io.spillway.api.RequestBudget;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.testing.VirtualClock;
import io.spillway.asqm.BudgetedLock;
import io.spillway.credit.Spillway;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A JFR recording of a gate at work contains its admission and budget-abort events. */
class JfrEventsTest {

  @Test
  void aRecordingContainsAdmissionsAndBudgetAborts(@TempDir Path dir) throws Exception {
    VirtualClock clock = new VirtualClock();
    AtomicLong delay = new AtomicLong();
    GateStats stats = new GateStats("default");
    ServerGate g = Spillway.forSlo(Duration.ofMillis(10)).newServerGate(new ServerEnvironment(
        clock, clock, now -> delay.get(), ControlChannel.DISCARD, stats, 2));
    g.start();
    SpillwayHttpGate gate = new SpillwayHttpGate(clock, now -> delay.get(),
        new SpillwayHttpGate.Endpoint("default", "/**", true, g, 10_000_000, 10_000_000, stats,
            false),
        List.of(), List.of(), SpillwayProperties.NoBudget.TARGET, true, 1);
    Path file = dir.resolve("spillway.jfr");
    try (Recording recording = new Recording()) {
      recording.enable("io.spillway.Admission");
      recording.enable("io.spillway.BudgetAbort");
      recording.start();
      SpillwayHttpGate.Admission ok = gate.admit(gate.endpointFor("/x"), Map.<String, String>of()::get, null);
      ok.end(200, null);
      SpillwayHttpGate.Admission aborted = gate.admit(gate.endpointFor("/x"), Map.<String, String>of()::get, null);
      aborted.end(503, new BudgetExceededException(7_000_000, 1_000_000));
      delay.set(Duration.ofSeconds(1).toNanos());
      SpillwayHttpGate.Admission shed = gate.admit(gate.endpointFor("/x"), Map.<String, String>of()::get, null);
      assertFalse(shed.isAdmitted());
      recording.stop();
      recording.dump(file);
    }
    List<RecordedEvent> events = RecordingFile.readAllEvents(file);
    List<RecordedEvent> admissions = events.stream()
        .filter(e -> e.getEventType().getName().equals("io.spillway.Admission")).toList();
    List<RecordedEvent> aborts = events.stream()
        .filter(e -> e.getEventType().getName().equals("io.spillway.BudgetAbort")).toList();
    assertEquals(3, admissions.size(), admissions.toString());
    assertEquals(List.of("ok", "ok", "aqm"),
        admissions.stream().map(e -> e.getString("decision")).toList());
    assertEquals(1, aborts.size());
    assertEquals("default", aborts.get(0).getString("endpoint"));
    assertEquals(7_000_000, aborts.get(0).getDuration("queueingDelay").toNanos());
    assertEquals(1, stats.budgetAborts());
  }

  @Test
  void budgetedLockWaitsAndRefusalsNameTheLock(@TempDir Path dir) throws Exception {
    VirtualClock clock = new VirtualClock();
    BudgetedLock lock = new BudgetedLock("inventory", clock);
    Path file = dir.resolve("locks.jfr");
    try (Recording recording = new Recording()) {
      recording.enable("io.spillway.BudgetedLockWait").withThreshold(Duration.ZERO);
      recording.enable("io.spillway.BudgetedLockAbort");
      recording.start();
      CountDownLatch held = new CountDownLatch(1);
      CountDownLatch release = new CountDownLatch(1);
      Thread holder = Thread.ofPlatform().start(() -> {
        lock.lock();
        held.countDown();
        try {
          release.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        } finally {
          lock.unlock();
        }
      });
      assertTrue(held.await(30, TimeUnit.SECONDS));
      Thread waiter = Thread.ofPlatform().start(() -> {
        lock.lock();
        lock.unlock();
      });
      StarterMvcTest.waitUntil(() -> lock.waiters() == 1);
      clock.advance(Duration.ofMillis(10).toNanos()); // the waiter has waited 10 ms
      Throwable refused = ScopedValue.where(RequestBudget.CURRENT, RequestBudget.of(1_000_000))
          .call(() -> {
            try (BudgetedLock.Held h = lock.acquireWithinBudget()) {
              return null;
            } catch (BudgetExceededException e) {
              return e;
            }
          });
      assertTrue(refused instanceof BudgetExceededException, "refused: " + refused);
      release.countDown();
      holder.join();
      waiter.join();
      recording.stop();
      recording.dump(file);
    }
    List<RecordedEvent> events = RecordingFile.readAllEvents(file);
    List<RecordedEvent> waits = events.stream()
        .filter(e -> e.getEventType().getName().equals("io.spillway.BudgetedLockWait")).toList();
    List<RecordedEvent> aborts = events.stream()
        .filter(e -> e.getEventType().getName().equals("io.spillway.BudgetedLockAbort")).toList();
    assertEquals(1, waits.size(), waits.toString());
    assertEquals("inventory", waits.get(0).getString("lockName"));
    assertEquals(1, aborts.size(), aborts.toString());
    assertEquals("inventory", aborts.get(0).getString("lockName"));
    assertEquals(1_000_000, aborts.get(0).getDuration("remainingBudget").toNanos());
    assertTrue(aborts.get(0).getDuration("expectedWait").toNanos() >= 10_000_000);
  }
}
