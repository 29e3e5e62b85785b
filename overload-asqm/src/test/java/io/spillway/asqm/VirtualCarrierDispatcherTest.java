package io.spillway.asqm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.spillway.api.Ticker;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The virtual-thread route: surefire opens {@code java.lang} (see the pom), so {@link
 * CarrierDispatcher#create} must take it. Run without the flag (an IDE), these tests skip.
 */
class VirtualCarrierDispatcherTest extends CarrierDispatcherContract {

  static boolean javaLangOpen() {
    return Object.class.getModule().isOpen("java.lang", CarrierDispatcher.class.getModule());
  }

  @BeforeEach
  void requireOpenJavaLang() {
    assumeTrue(javaLangOpen(), "run with --add-opens java.base/java.lang=ALL-UNNAMED");
  }

  @Override
  CarrierDispatcher newDispatcher(int carriers, Ticker ticker) {
    CarrierDispatcher dispatcher = CarrierDispatcher.create(carriers, ticker);
    assertTrue(dispatcher.usesVirtualThreads(),
        () -> "fell back: " + dispatcher.fallbackReason().orElse("?"));
    return dispatcher;
  }

  @Test
  void tasksRunOnVirtualThreads() {
    try (CarrierDispatcher dispatcher = newDispatcher(2, ticker)) {
      assertEquals(Optional.empty(), dispatcher.fallbackReason());
      assertEquals(0, dispatcher.submissions(), "the creation probe is not counted");
      AtomicBoolean virtual = new AtomicBoolean();
      CountDownLatch ran = new CountDownLatch(1);
      dispatcher.execute(() -> {
        virtual.set(Thread.currentThread().isVirtual());
        ran.countDown();
      });
      Await.await(ran);
      assertTrue(virtual.get());
      assertEquals(1, dispatcher.submissions());
    }
  }

  /** Where the JVM is opened, the virtual route alone is taken (SpillwayServer's default). */
  @Test
  void theVirtualRouteAloneIsTakenWhenOpen() {
    try (CarrierDispatcher dispatcher = CarrierDispatcher.onVirtualThreads(1, ticker).orElseThrow()) {
      assertTrue(dispatcher.usesVirtualThreads());
      assertEquals(Optional.empty(), dispatcher.fallbackReason());
    }
  }

  /**
   * The reason the custom scheduler exists: a virtual thread woken after waiting for a lock goes
   * back through the carrier queue, is stamped again, and its wait there shows in the delay.
   */
  @Test
  void aWakeUpAfterALockIsResubmittedAndItsCarrierWaitIsCounted() {
    try (CarrierDispatcher dispatcher = newDispatcher(1, ticker);
        Spinner spinner = new Spinner()) {
      ReentrantLock lock = new ReentrantLock();
      lock.lock(); // held by the test thread
      try {
      AtomicReference<Thread> waiter = new AtomicReference<>();
      CountDownLatch done = new CountDownLatch(1);
      dispatcher.execute(() -> {
        waiter.set(Thread.currentThread());
        lock.lock();
        try {
          done.countDown();
        } finally {
          lock.unlock();
        }
      });
      Await.until(() -> waiter.get() != null && lock.hasQueuedThread(waiter.get())
          && Await.isParked(waiter.get()));
      assertEquals(1, dispatcher.submissions(), "the first mount");

      dispatcher.execute(spinner); // now occupy the only carrier
      Await.await(spinner.started);
      assertEquals(2, dispatcher.submissions());
      assertEquals(0, dispatcher.queued());

      long unlockedAt = now.addAndGet(7);
      lock.unlock(); // unparks the waiter: its continuation is submitted on this thread
      assertEquals(3, dispatcher.submissions(), "the wake-up is a new submission");
      assertEquals(1, dispatcher.queued());
      assertEquals(40, dispatcher.queueDelay().queueingDelayNanos(unlockedAt + 40));

      spinner.spin = false;
      Await.await(done);
      assertEquals(0, dispatcher.queued());
      assertEquals(0, dispatcher.queueDelay().queueingDelayNanos(now.addAndGet(100)));
      assertEquals(3, dispatcher.submissions());
      } finally {
        if (lock.isHeldByCurrentThread()) {
          lock.unlock(); // lets close() finish if an assertion failed
        }
      }
    }
  }

  /**
   * Both halves of the module together: many virtual threads contend for a {@link BudgetedLock}
   * on two carriers. Every task runs once, mutual exclusion holds, each wake-up after parking is
   * one more submission, and the carrier queue is empty at the end.
   */
  @Test
  void virtualThreadsContendingForABudgetedLock() {
    int tasks = 200;
    int rounds = 50;
    BudgetedLock lock = new BudgetedLock(ticker);
    AtomicInteger inside = new AtomicInteger();
    AtomicInteger overlaps = new AtomicInteger();
    int[] guarded = new int[1];
    CountDownLatch done = new CountDownLatch(tasks);
    try (CarrierDispatcher dispatcher = newDispatcher(2, ticker)) {
      for (int i = 0; i < tasks; i++) {
        dispatcher.execute(() -> {
          for (int r = 0; r < rounds; r++) {
            lock.lock();
            try {
              if (inside.incrementAndGet() != 1) {
                overlaps.incrementAndGet();
              }
              guarded[0]++;
              Thread.yield(); // unmounts: a re-submission while holding the lock
              inside.decrementAndGet();
            } finally {
              lock.unlock();
            }
          }
          done.countDown();
        });
      }
      Await.await(done);
      assertEquals(0, overlaps.get());
      assertEquals(tasks * rounds, guarded[0]);
      assertTrue(dispatcher.submissions() >= (long) tasks * (rounds + 1),
          "a start per task and at least one re-mount (the yield) per round: "
              + dispatcher.submissions());
      Await.until(() -> dispatcher.queued() == 0);
    }
  }

  /**
   * A virtual thread started inside a task with {@link Thread#ofVirtual()} inherits the
   * dispatcher's scheduler, so it runs on a carrier that close() would wait for: refused too.
   */
  @Test
  void closeFromAVirtualThreadStartedByATaskIsRefused() throws Exception {
    CarrierDispatcher dispatcher = newDispatcher(1, ticker);
    CompletableFuture<Throwable> fromChild = new CompletableFuture<>();
    dispatcher.execute(() -> Thread.ofVirtual().start(() -> {
      try {
        dispatcher.close();
        fromChild.complete(null);
      } catch (Throwable t) {
        fromChild.complete(t);
      }
    }));
    Throwable refused;
    try {
      refused = fromChild.get(30, TimeUnit.SECONDS);
    } catch (TimeoutException hung) {
      throw new AssertionError("close() from a thread on the dispatcher's carriers waits for it", hung);
    }
    assertInstanceOf(IllegalStateException.class, refused);
    dispatcher.close();
    dispatcher.carrierThreads().forEach(t -> assertFalse(t.isAlive(), t + " outlived close()"));
  }

  @Test
  void aVirtualThreadThatOutlivesTheDispatcherStillRunsAndItsWakerDoesNotThrow() throws Exception {
    CarrierDispatcher dispatcher = newDispatcher(1, ticker);
    CountDownLatch release = new CountDownLatch(1);
    CompletableFuture<Thread> started = new CompletableFuture<>();
    CompletableFuture<Void> strayEnded = new CompletableFuture<>();
    dispatcher.execute(() -> started.complete(Thread.ofVirtual().start(() -> {
      try {
        release.await(); // parks on the dispatcher's carriers
        strayEnded.complete(null);
      } catch (InterruptedException e) {
        strayEnded.completeExceptionally(e);
      }
    })));
    Thread stray = started.get(30, TimeUnit.SECONDS);
    dispatcher.close(); // waits for its tasks, not for threads they started
    dispatcher.carrierThreads().forEach(t -> assertFalse(t.isAlive(), t + " outlived close()"));
    release.countDown(); // wakes the stray thread: its continuation needs a carrier
    strayEnded.get(30, TimeUnit.SECONDS);
    stray.join();
  }

  @Test
  void everyParkAndUnparkCountsAgainIncludingTimedParks() {
    try (CarrierDispatcher dispatcher = newDispatcher(2, ticker)) {
      AtomicReference<Thread> parker = new AtomicReference<>();
      CountDownLatch parkedTwice = new CountDownLatch(1);
      AtomicBoolean release = new AtomicBoolean();
      dispatcher.execute(() -> {
        parker.set(Thread.currentThread());
        while (!release.get()) {
          LockSupport.park(this);
        }
        release.set(false);
        while (!release.get()) {
          LockSupport.parkNanos(this, TimeUnit.HOURS.toNanos(1)); // woken by unpark, not time
        }
        parkedTwice.countDown();
      });
      Await.until(() -> parker.get() != null && Await.isParked(parker.get()));
      assertEquals(1, dispatcher.submissions());

      release.set(true);
      LockSupport.unpark(parker.get());
      Await.until(() -> !release.get() && Await.isParked(parker.get()));
      assertEquals(Thread.State.TIMED_WAITING, parker.get().getState());
      assertEquals(2, dispatcher.submissions());

      release.set(true);
      LockSupport.unpark(parker.get());
      Await.await(parkedTwice);
      assertEquals(3, dispatcher.submissions());
    }
  }
}
