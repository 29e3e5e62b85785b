package io.spillway.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.grpc.netty.shaded.io.netty.channel.DefaultEventLoop;
import io.spillway.api.Ticker;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The event-loop backlog probe, on a real Netty loop, with a hand-moved clock. */
class EventLoopProbeTest {

  /** Starts near the end of the range, to catch wrap-around. */
  private final AtomicLong now = new AtomicLong(Long.MAX_VALUE - 1_000_000);
  private final Ticker ticker = now::get;

  @Test
  void aLoopHeldAfterACallStartedReadsHowLongItHasBeenHeld() throws Exception {
    EventLoopProbe backlog = new EventLoopProbe(ticker);
    DefaultEventLoop loop = new DefaultEventLoop();
    CountDownLatch release = new CountDownLatch(1);
    CountDownLatch started = new CountDownLatch(1);
    try {
      long t0 = now.get();
      assertEquals(0, backlog.queueingDelayNanos(t0), "no loop probed yet");
      // A call starts on the loop, and the loop stays busy afterwards (its batch goes on).
      loop.execute(() -> {
        backlog.arrived(Long.MIN_VALUE);
        backlog.arrived(Long.MIN_VALUE); // a second call in the same batch does not restamp
        started.countDown();
        await(release);
      });
      started.await(10, TimeUnit.SECONDS);
      now.addAndGet(3_000_000); // wraps past Long.MAX_VALUE
      assertEquals(3_000_000, backlog.queueingDelayNanos(now.get()));
      release.countDown();
      drain(loop);
      assertEquals(0, backlog.queueingDelayNanos(now.get()), "the probe ran: the loop caught up");

      // A later call stamps afresh.
      CountDownLatch hold = new CountDownLatch(1);
      CountDownLatch again = new CountDownLatch(1);
      loop.execute(() -> {
        backlog.arrived(Long.MIN_VALUE);
        again.countDown();
        await(hold);
      });
      again.await(10, TimeUnit.SECONDS);
      now.addAndGet(500);
      assertEquals(500, backlog.queueingDelayNanos(now.get()));
      hold.countDown();
      drain(loop);
      assertEquals(0, backlog.queueingDelayNanos(now.get()));
    } finally {
      release.countDown();
      loop.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
    }
  }

  @Test
  void aCallOffAnEventLoopIsNotProbed() {
    EventLoopProbe backlog = new EventLoopProbe(ticker);
    backlog.arrived(Long.MIN_VALUE); // the test thread is no event loop
    now.addAndGet(1_000_000);
    assertEquals(0, backlog.queueingDelayNanos(now.get()));
  }

  private static void drain(DefaultEventLoop loop) throws Exception {
    loop.submit(() -> { }).get(10, TimeUnit.SECONDS); // runs after the probe submitted before it
  }

  private static void await(CountDownLatch latch) {
    try {
      latch.await(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
