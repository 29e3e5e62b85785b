package io.spillway.transport;

import io.netty.channel.IoHandle;
import io.netty.channel.IoHandler;
import io.netty.channel.IoHandlerContext;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.IoRegistration;
import io.netty.util.concurrent.ThreadAwareExecutor;
import java.util.Objects;
import java.util.function.BooleanSupplier;

/**
 * Event-loop I/O handlers that busy-poll while {@code polls} says so: µTune's polling reception
 * (mutune-osdi18 §3.1), for every transport's handler alike.
 *
 * <p>Netty's loop asks its I/O handler to run with a context whose {@link IoHandlerContext#canBlock()}
 * says whether the handler may sleep in the kernel until I/O is ready ({@code epoll_wait} with a
 * timeout, {@code io_uring_enter} waiting for a completion, {@code Selector.select}). It is false
 * while the loop has tasks to run, and every handler then only collects what is ready and returns.
 * Here it is also false while the model polls, so the loop asks the kernel for ready sockets without
 * waiting, runs what they bring, and asks again: an arrival never waits for a wake-up, and the loop
 * burns its core. Under a blocking model the loop's own context goes through unchanged.
 *
 * <p>The supplier is read once per loop iteration; a switch takes effect at the next one (a loop
 * asleep in the kernel when the model turns to polling wakes at its next I/O, task or timer, as a
 * blocking loop would). Registrations, wake-ups and tear-down go to the wrapped handler, so channels
 * see the transport's own handler behind their registrations.
 *
 * <p>Thread-safe; each handler is confined to its loop's thread.
 */
final class ReceptionIoHandlerFactory implements IoHandlerFactory {

  private final IoHandlerFactory delegate;
  private final BooleanSupplier polls;

  ReceptionIoHandlerFactory(IoHandlerFactory delegate, BooleanSupplier polls) {
    this.delegate = Objects.requireNonNull(delegate, "delegate");
    this.polls = Objects.requireNonNull(polls, "polls");
  }

  @Override
  public IoHandler newHandler(ThreadAwareExecutor executor) {
    return new Handler(delegate.newHandler(executor), polls);
  }

  @Override
  public boolean isChangingThreadSupported() {
    return delegate.isChangingThreadSupported();
  }

  /** One loop's handler. Confined to the loop's thread (Netty calls {@link #run} only from it). */
  static final class Handler implements IoHandler {
    private final IoHandler delegate;
    private final BooleanSupplier polls;
    private final NonBlocking nonBlocking = new NonBlocking(); // reused: no allocation per iteration

    Handler(IoHandler delegate, BooleanSupplier polls) {
      this.delegate = delegate;
      this.polls = polls;
    }

    @Override
    public void initialize() {
      delegate.initialize();
    }

    @Override
    public int run(IoHandlerContext context) {
      if (!context.canBlock() || !polls.getAsBoolean()) {
        return delegate.run(context);
      }
      nonBlocking.loop = context;
      return delegate.run(nonBlocking);
    }

    @Override
    public void prepareToDestroy() {
      delegate.prepareToDestroy();
    }

    @Override
    public void destroy() {
      delegate.destroy();
    }

    @Override
    public IoRegistration register(IoHandle handle) throws Exception {
      return delegate.register(handle);
    }

    @Override
    public void wakeup() {
      delegate.wakeup();
    }

    @Override
    public boolean isCompatible(Class<? extends IoHandle> handleType) {
      return delegate.isCompatible(handleType);
    }
  }

  /** The loop's context, except that it may not block. */
  private static final class NonBlocking implements IoHandlerContext {
    IoHandlerContext loop;

    @Override
    public boolean canBlock() {
      return false;
    }

    @Override
    public long delayNanos(long currentTimeNanos) {
      return loop.delayNanos(currentTimeNanos);
    }

    @Override
    public long deadlineNanos() {
      return loop.deadlineNanos();
    }

    @Override
    public void reportActiveIoTime(long activeNanos) {
      loop.reportActiveIoTime(activeNanos);
    }

    @Override
    public boolean shouldReportActiveIoTime() {
      return loop.shouldReportActiveIoTime();
    }
  }
}
