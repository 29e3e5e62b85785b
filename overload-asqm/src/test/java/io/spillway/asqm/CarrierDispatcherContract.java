package io.spillway.asqm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.Ticker;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What every {@link CarrierDispatcher} route must do, re-run per route (virtual threads on a
 * custom scheduler, platform fallback). Time is a fake ticker that starts near {@link
 * Long#MAX_VALUE} so stamps wrap during the tests; threads are coordinated with latches and
 * observed states, never sleeps.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
abstract class CarrierDispatcherContract {

  /** Fake time, readable from any thread. Starts 10 ns before wrapping. */
  final AtomicLong now = new AtomicLong(Long.MAX_VALUE - 10);
  final Ticker ticker = now::get;

  abstract CarrierDispatcher newDispatcher(int carriers, Ticker ticker);

  /** Occupies a carrier (a spinning virtual thread never yields it) until released. */
  static final class Spinner implements Runnable, AutoCloseable {
    final CountDownLatch started = new CountDownLatch(1);
    volatile boolean spin = true;

    /** Releases the carrier, also when an assertion failed first. */
    @Override
    public void close() {
      spin = false;
    }

    @Override
    public void run() {
      started.countDown();
      while (spin && !Thread.currentThread().isInterrupted()) { // an interrupted close ends it
        Thread.onSpinWait();
      }
    }
  }

  @Test
  void delayIsZeroWhenIdle() {
    try (CarrierDispatcher dispatcher = newDispatcher(2, ticker)) {
      assertEquals(0, dispatcher.queued());
      assertEquals(0, dispatcher.queueDelay().queueingDelayNanos(now.get()));
      CountDownLatch ran = new CountDownLatch(1);
      dispatcher.execute(ran::countDown);
      Await.await(ran);
      assertEquals(0, dispatcher.queueDelay().queueingDelayNanos(now.get() + 1_000));
    }
  }

  @Test
  void queuedTasksBehindABusyCarrierReportTheOldestStamp() {
    try (CarrierDispatcher dispatcher = newDispatcher(1, ticker);
        Spinner spinner = new Spinner()) {
      dispatcher.execute(spinner);
      Await.await(spinner.started);
      assertEquals(0, dispatcher.queued(), "the running spinner is not queued");
      assertEquals(0, dispatcher.queueDelay().queueingDelayNanos(now.get()));

      CountDownLatch done = new CountDownLatch(2);
      long first = now.addAndGet(3); // wraps past Long.MAX_VALUE soon after
      dispatcher.execute(done::countDown);
      long second = now.addAndGet(20);
      dispatcher.execute(done::countDown);
      assertEquals(2, dispatcher.queued());

      long later = now.addAndGet(500);
      assertTrue(later < first, "the fake clock wrapped");
      assertEquals(later - first, dispatcher.queueDelay().queueingDelayNanos(later));
      assertEquals(520, dispatcher.queueDelay().queueingDelayNanos(later));
      assertEquals(0, dispatcher.queueDelay().queueingDelayNanos(first - 1), "never negative");
      assertEquals(second - first, dispatcher.queueDelay().queueingDelayNanos(second));

      spinner.spin = false;
      Await.await(done);
      assertEquals(0, dispatcher.queued());
      assertEquals(0, dispatcher.queueDelay().queueingDelayNanos(now.addAndGet(1_000)));
    }
  }

  @Test
  void aLongQueueKeepsFifoOrderAndItsOldestStamp() {
    int tasks = 300; // more than the queue's initial capacity: it grows while queued
    List<Integer> order = new CopyOnWriteArrayList<>();
    CountDownLatch done = new CountDownLatch(tasks);
    try (CarrierDispatcher dispatcher = newDispatcher(1, ticker);
        Spinner spinner = new Spinner()) {
      dispatcher.execute(spinner);
      Await.await(spinner.started);
      long first = now.incrementAndGet();
      for (int i = 0; i < tasks; i++) {
        int id = i;
        dispatcher.execute(() -> {
          order.add(id);
          done.countDown();
        });
        now.incrementAndGet();
      }
      assertEquals(tasks, dispatcher.queued());
      assertEquals(now.get() - first, dispatcher.queueDelay().queueingDelayNanos(now.get()));
      spinner.spin = false;
      Await.await(done);
      assertEquals(IntStream.range(0, tasks).boxed().toList(), order);
      assertEquals(0, dispatcher.queued());
    }
  }

  @Test
  void everyAcceptedTaskRunsExactlyOnce() {
    int tasks = 2_000;
    AtomicInteger runs = new AtomicInteger();
    CountDownLatch done = new CountDownLatch(tasks);
    try (CarrierDispatcher dispatcher = newDispatcher(2, ticker)) {
      for (int i = 0; i < tasks; i++) {
        dispatcher.execute(() -> {
          runs.incrementAndGet();
          done.countDown();
        });
      }
      Await.await(done);
    }
    assertEquals(tasks, runs.get());
  }

  @Test
  void aTaskThatThrowsDoesNotKillItsCarrier() {
    try (CarrierDispatcher dispatcher = newDispatcher(1, ticker)) {
      CountDownLatch thrown = new CountDownLatch(1);
      Thread.UncaughtExceptionHandler quiet = (t, e) -> thrown.countDown();
      dispatcher.execute(() -> {
        Thread.currentThread().setUncaughtExceptionHandler(quiet);
        throw new IllegalStateException("expected by the test");
      });
      Await.await(thrown);
      CountDownLatch after = new CountDownLatch(1);
      dispatcher.execute(after::countDown);
      Await.await(after);
    }
  }

  @Test
  void closeWaitsForRunningTasksThenStopsEveryCarrier() {
    CarrierDispatcher dispatcher = newDispatcher(2, ticker);
    Spinner spinner = new Spinner();
    AtomicBoolean spinnerEnded = new AtomicBoolean();
    dispatcher.execute(() -> {
      spinner.run();
      spinnerEnded.set(true);
    });
    Await.await(spinner.started);

    AtomicBoolean endedBeforeCloseReturned = new AtomicBoolean();
    Thread closer = Thread.ofPlatform().start(() -> {
      dispatcher.close();
      endedBeforeCloseReturned.set(spinnerEnded.get());
    });
    Await.until(() -> Await.isParked(closer));
    assertThrows(RejectedExecutionException.class, () -> dispatcher.execute(() -> { }),
        "no task is accepted once close has begun");
    spinner.spin = false;
    Await.join(closer);

    assertTrue(endedBeforeCloseReturned.get());
    assertEquals(2, dispatcher.carrierThreads().size());
    dispatcher.carrierThreads().forEach(t -> assertFalse(t.isAlive(), t + " outlived close()"));
    dispatcher.close(); // idempotent
  }

  @Test
  void interruptedCloseInterruptsRunningTasksAndReassertsTheInterrupt() {
    CarrierDispatcher dispatcher = newDispatcher(1, ticker);
    CountDownLatch parked = new CountDownLatch(1);
    AtomicBoolean taskSawInterrupt = new AtomicBoolean();
    dispatcher.execute(() -> {
      parked.countDown();
      while (!Thread.currentThread().isInterrupted()) {
        LockSupport.park(this);
      }
      taskSawInterrupt.set(true);
    });
    Await.await(parked);

    AtomicBoolean closerInterruptedAfterClose = new AtomicBoolean();
    Thread closer = Thread.ofPlatform().start(() -> {
      dispatcher.close();
      closerInterruptedAfterClose.set(Thread.currentThread().isInterrupted());
    });
    Await.until(() -> Await.isParked(closer));
    closer.interrupt();
    Await.join(closer);

    assertTrue(taskSawInterrupt.get());
    assertTrue(closerInterruptedAfterClose.get());
    dispatcher.carrierThreads().forEach(t -> assertFalse(t.isAlive(), t + " outlived close()"));
  }

  /**
   * A task that closes its own dispatcher would wait for itself: it is refused, nothing is shut
   * down, and the dispatcher still runs tasks and closes from outside. The future's timeout only
   * bounds a hang; it asserts no timing.
   */
  @Test
  void closeFromOneOfItsOwnTasksIsRefusedInsteadOfWaitingForItself() throws Exception {
    CarrierDispatcher dispatcher = newDispatcher(1, ticker);
    CompletableFuture<Throwable> fromTask = new CompletableFuture<>();
    dispatcher.execute(() -> {
      try {
        dispatcher.close();
        fromTask.complete(null);
      } catch (Throwable t) {
        fromTask.complete(t);
      }
    });
    Throwable refused;
    try {
      refused = fromTask.get(30, TimeUnit.SECONDS);
    } catch (TimeoutException hung) {
      throw new AssertionError("close() from the dispatcher's own task waits for itself", hung);
    }
    assertInstanceOf(IllegalStateException.class, refused);

    CountDownLatch after = new CountDownLatch(1);
    dispatcher.execute(after::countDown); // not shut down by the refused close
    Await.await(after);
    dispatcher.close();
    dispatcher.carrierThreads().forEach(t -> assertFalse(t.isAlive(), t + " outlived close()"));
  }

  @Test
  void rejectsArguments() {
    assertThrows(IllegalArgumentException.class, () -> newDispatcher(0, ticker));
    try (CarrierDispatcher dispatcher = newDispatcher(1, ticker)) {
      assertThrows(NullPointerException.class, () -> dispatcher.execute(null));
    }
  }
}
