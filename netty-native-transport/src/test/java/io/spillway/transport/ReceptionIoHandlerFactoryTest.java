package io.spillway.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandle;
import io.netty.channel.IoHandler;
import io.netty.channel.IoHandlerContext;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.IoRegistration;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.uring.IoUringIoHandler;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The polling reception's I/O handlers (mutune-osdi18 §3.1): while the model polls, the transport's
 * handler is told it may not block; otherwise it gets the loop's own context. Checked against a
 * recording handler, then on each transport's real event loop.
 */
class ReceptionIoHandlerFactoryTest {

  /** Records the context each run was given. */
  private static final class Recording implements IoHandler {
    final AtomicLong runs = new AtomicLong();
    final AtomicLong nonBlockingRuns = new AtomicLong();
    final AtomicLong blockingRuns = new AtomicLong();
    volatile IoHandlerContext last;
    private final IoHandler real; // null: returns at once

    Recording(IoHandler real) {
      this.real = real;
    }

    @Override
    public int run(IoHandlerContext context) {
      last = context;
      runs.incrementAndGet();
      (context.canBlock() ? blockingRuns : nonBlockingRuns).incrementAndGet();
      return real == null ? 0 : real.run(context);
    }

    @Override
    public IoRegistration register(IoHandle handle) throws Exception {
      return real.register(handle);
    }

    @Override
    public void wakeup() {
      if (real != null) {
        real.wakeup();
      }
    }

    @Override
    public boolean isCompatible(Class<? extends IoHandle> handleType) {
      return real != null && real.isCompatible(handleType);
    }

    @Override
    public void prepareToDestroy() {
      if (real != null) {
        real.prepareToDestroy();
      }
    }

    @Override
    public void destroy() {
      if (real != null) {
        real.destroy();
      }
    }

    @Override
    public void initialize() {
      if (real != null) {
        real.initialize();
      }
    }
  }

  /** A loop's context with a fixed answer to canBlock. */
  private record Context(boolean canBlock) implements IoHandlerContext {
    @Override
    public long delayNanos(long currentTimeNanos) {
      return 1_000;
    }

    @Override
    public long deadlineNanos() {
      return 42;
    }
  }

  @Test
  void whilePollingTheHandlerMayNotBlockAndOtherwiseGetsTheLoopsContext() {
    Recording inner = new Recording(null);
    AtomicBoolean polls = new AtomicBoolean(false);
    IoHandler handler = new ReceptionIoHandlerFactory(executor -> inner, polls::get).newHandler(null);
    Context mayBlock = new Context(true);
    Context busy = new Context(false);

    handler.run(mayBlock);
    assertSame(mayBlock, inner.last, "a blocking model gets the loop's own context");
    handler.run(busy);
    assertSame(busy, inner.last, "a loop with tasks already may not block");

    polls.set(true);
    handler.run(mayBlock);
    assertFalse(inner.last.canBlock(), "a polling model may not block");
    assertEquals(1_000, inner.last.delayNanos(0), "the rest of the context is the loop's");
    assertEquals(42, inner.last.deadlineNanos());
    handler.run(busy);
    assertSame(busy, inner.last);

    polls.set(false);
    handler.run(mayBlock);
    assertSame(mayBlock, inner.last, "switched back to blocking at the next iteration");
  }

  private static IoHandlerFactory real(Transport t, Recording[] holder) {
    IoHandlerFactory f = switch (t) {
      case IO_URING -> IoUringIoHandler.newFactory();
      case EPOLL -> EpollIoHandler.newFactory();
      case NIO -> NioIoHandler.newFactory();
    };
    return executor -> holder[0] = new Recording(f.newHandler(executor));
  }

  /**
   * An idle loop (no I/O, no task, no timer) under a polling model keeps asking its transport for
   * ready I/O without blocking; turned to blocking, it sleeps in the kernel until woken. The waits
   * are bounded only so a bug fails instead of hanging; nothing is timed.
   */
  @ParameterizedTest
  @EnumSource(Transport.class)
  void anIdleLoopPollsWithoutBlockingOnEveryTransport(Transport transport) throws Exception {
    org.junit.jupiter.api.Assumptions.assumeTrue(transport.isAvailable(),
        () -> transport + " unavailable: " + transport.unavailabilityCause());
    Recording[] inner = new Recording[1];
    AtomicBoolean polls = new AtomicBoolean(true);
    EventLoopGroup group = new MultiThreadIoEventLoopGroup(1,
        new ReceptionIoHandlerFactory(real(transport, inner), polls::get));
    try {
      group.submit(() -> { }).get(20, TimeUnit.SECONDS); // the loop has started
      Recording r = inner[0];
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      while (r.nonBlockingRuns.get() < 10_000 && System.nanoTime() - deadline < 0) {
        Thread.onSpinWait();
      }
      assertTrue(r.nonBlockingRuns.get() >= 10_000,
          transport + ": an idle polling loop asked " + r.nonBlockingRuns.get() + " times");

      polls.set(false);
      group.submit(() -> { }).get(20, TimeUnit.SECONDS); // one iteration has read the switch
      // Now the idle loop goes back to waiting in the kernel.
      long blockingBefore = r.blockingRuns.get();
      while (r.blockingRuns.get() == blockingBefore && System.nanoTime() - deadline < 0) {
        Thread.onSpinWait();
      }
      assertTrue(r.blockingRuns.get() > blockingBefore, transport + ": the loop never ran blocking");
    } finally {
      group.shutdownGracefully(0, 0, TimeUnit.SECONDS).syncUninterruptibly();
    }
  }
}
