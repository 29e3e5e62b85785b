package io.spillway.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.channel.DefaultEventLoop;
import io.netty.channel.EventLoop;
import io.spillway.api.testing.VirtualClock;
import io.spillway.threading.ThreadingModel;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * One network thread's side of a live switch ({@link ThreadingSwitch.Loop}, mutune-osdi18 §4), on
 * real event loops and a real worker pool but with the requests' progress held by latches: which
 * requests run in-line and which on the workers, and in which order, after each switch. Nothing is
 * timed; waits are bounded only so a bug fails instead of hanging.
 */
class ThreadingSwitchLoopTest {

  private static final ThreadingModel DB1 = ThreadingModel.parse("DB1");
  private static final ThreadingModel IB = ThreadingModel.parse("IB");

  private final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 1_000_000L);
  private final DefaultEventLoop loopA = new DefaultEventLoop();
  private final DefaultEventLoop loopB = new DefaultEventLoop();
  private final WorkerPool pool = new WorkerPool(2, 0, clock);

  @AfterEach
  void stop() throws Exception {
    pool.close();
    loopA.shutdownGracefully(0, 5, TimeUnit.SECONDS).sync();
    loopB.shutdownGracefully(0, 5, TimeUnit.SECONDS).sync();
  }

  /** A request that records where it ran and, if given a latch, waits on it. */
  private static final class Request implements LoopQueue.Task {
    final String name;
    final List<String> log;
    final CountDownLatch started = new CountDownLatch(1);
    final CountDownLatch release;
    final AtomicInteger ended = new AtomicInteger();
    volatile String thread;

    Request(String name, List<String> log, CountDownLatch release) {
      this.name = name;
      this.log = log;
      this.release = release;
    }

    @Override
    public void run() {
      runAt(0);
    }

    @Override
    public void runAt(long nowNanos) {
      thread = Thread.currentThread().getName();
      log.add(name);
      started.countDown();
      if (release != null) {
        try {
          release.await(20, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      ended.incrementAndGet();
    }

    @Override
    public void abandon() {
      ended.incrementAndGet();
    }

    boolean ranOnWorker() {
      return thread != null && thread.startsWith("spillway-worker");
    }
  }

  private static <T> T on(EventLoop loop, Callable<T> work) throws Exception {
    return loop.submit(work).get(20, TimeUnit.SECONDS);
  }

  @Test
  void aLoopGoesInlineOnceItsOwnDispatchedRequestsHaveFinishedNotEveryLoops() throws Exception {
    ThreadingSwitch threading = new ThreadingSwitch(DB1, Set.of(DB1, IB), pool);
    LoopQueue queueA = new LoopQueue(loopA, clock, 50_000);
    LoopQueue queueB = new LoopQueue(loopB, clock, 50_000);
    ThreadingSwitch.Loop a = on(loopA, () -> threading.new Loop(queueA, null));
    ThreadingSwitch.Loop b = on(loopB, () -> threading.new Loop(queueB, null));
    List<String> log = new CopyOnWriteArrayList<>();
    CountDownLatch release = new CountDownLatch(1);
    try {
      // Loop B's request holds a worker, as a long request on another connection would.
      Request longOnB = new Request("b1", log, release);
      on(loopB, () -> {
        b.submit(longOnB, clock.read());
        return null;
      });
      assertTrue(longOnB.started.await(20, TimeUnit.SECONDS));
      threading.switchTo(IB);

      // Loop A dispatched nothing that is still running: its next request runs in-line.
      Request a1 = new Request("a1", log, null);
      assertTrue(on(loopA, () -> {
        a.submit(a1, clock.read());
        return a.runsInline();
      }), "loop A kept dispatching while another loop's request ran");
      assertTrue(a1.started.await(20, TimeUnit.SECONDS));
      assertFalse(a1.ranOnWorker(), "a1 ran on " + a1.thread);

      // Loop B still has a dispatched request running: its next one queues behind it on the worker.
      Request b2 = new Request("b2", log, null);
      assertFalse(on(loopB, () -> {
        b.submit(b2, clock.read());
        return b.runsInline();
      }));
      release.countDown();
      assertTrue(b2.started.await(20, TimeUnit.SECONDS));
      assertTrue(log.indexOf("b1") < log.indexOf("b2"), "order on loop B: " + log);

      on(loopA, () -> null); // a1's slice has ended
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      while ((longOnB.ended.get() == 0 || b2.ended.get() == 0) && System.nanoTime() - deadline < 0) {
        Thread.onSpinWait();
      }
      for (Request r : List.of(longOnB, a1, b2)) {
        assertEquals(1, r.ended.get(), r.name + " ended");
      }
    } finally {
      release.countDown();
    }
  }

  @Test
  void requestsTheWorkersRefuseWhileTheLoopMovesToDispatchEndOnce() throws Exception {
    // The server closes its workers only after its loops have stopped, so it cannot reach this;
    // the switch must still not lose a request it has taken off the loop's queue if they refuse.
    ThreadingSwitch threading = new ThreadingSwitch(IB, Set.of(IB, DB1), pool);
    LoopQueue queueA = new LoopQueue(loopA, clock, 50_000);
    ThreadingSwitch.Loop a = on(loopA, () -> threading.new Loop(queueA, null));
    List<String> log = new CopyOnWriteArrayList<>();
    Request queued = new Request("queued", log, null);
    Request next = new Request("next", log, null);
    pool.close();
    Throwable escaped = on(loopA, () -> {
      try {
        a.submit(queued, clock.read()); // in-line: waits in the loop's queue until this task ends
        threading.switchTo(DB1);
        a.submit(next, clock.read());   // moves "queued" to the workers first, then "next"
        return null;
      } catch (Throwable t) {
        return t;
      }
    });
    on(loopA, () -> null); // a drain scheduled by the first submit has run
    assertEquals(List.of(), log, "ran after the workers refused it");
    assertEquals(1, queued.ended.get(), "the request moved off the loop's queue ended " + queued.ended.get()
        + " times; escaped: " + escaped);
    assertEquals(1, next.ended.get(), "the new request ended " + next.ended.get() + " times; escaped: " + escaped);
  }
}
