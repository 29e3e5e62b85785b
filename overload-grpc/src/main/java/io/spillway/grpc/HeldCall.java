package io.spillway.grpc;

import io.grpc.Attributes;
import io.grpc.ClientCall;
import io.grpc.Metadata;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

/**
 * A call whose real call is made later: what the application does to it (start, request, send,
 * half-close, cancel) is kept in order and replayed on the real call once it is given one
 * ({@link #claim()} then {@link #drain}); from then on everything passes through. The real call
 * gets the application's own listener, so the application hears only the real call.
 *
 * <p>{@link PerBackendSessions} holds a call this way while its channel has no ready backend, so
 * that the call waits in a backend's session instead of going out without one.
 *
 * <p>Thread-safe: the application's thread and the one that drains may differ. Operations made
 * while a drain runs are replayed after those before them.
 */
final class HeldCall<ReqT, RespT> extends ClientCall<ReqT, RespT> {

  private final Runnable onCancel;
  private final AtomicBoolean claimed = new AtomicBoolean();
  private final Object lock = new Object();
  /** What the application did before the real call came; {@code null} once passing through. */
  private List<Consumer<ClientCall<ReqT, RespT>>> pending = new ArrayList<>();
  private volatile ClientCall<ReqT, RespT> real;
  private volatile boolean passThrough;
  /** The start while it waits to be replayed; under lock. */
  private Consumer<ClientCall<ReqT, RespT>> pendingStart;

  /**
   * @param onCancel run after the application cancels the call (while held, the owner gives it
   *     a real call at once, so the cancellation reaches the application's listener)
   */
  HeldCall(Runnable onCancel) {
    this.onCancel = onCancel;
  }

  /** Whether this caller is the one to give the call its real call; true once only. */
  boolean claim() {
    return claimed.compareAndSet(false, true);
  }

  /** Replays what the application did on {@code call}, then passes everything through. */
  void drain(ClientCall<ReqT, RespT> call) {
    real = call;
    while (true) {
      List<Consumer<ClientCall<ReqT, RespT>>> ops;
      synchronized (lock) {
        if (pending.isEmpty()) {
          pending = null;
          passThrough = true;
          return;
        }
        ops = pending;
        pending = new ArrayList<>();
        pendingStart = null; // replayed below
      }
      for (Consumer<ClientCall<ReqT, RespT>> op : ops) {
        op.accept(call);
      }
    }
  }

  private void run(Consumer<ClientCall<ReqT, RespT>> op) {
    if (!passThrough) {
      synchronized (lock) {
        if (!passThrough) {
          pending.add(op);
          return;
        }
      }
    }
    op.accept(real);
  }

  @Override
  public void start(Listener<RespT> listener, Metadata headers) {
    if (!passThrough) {
      synchronized (lock) {
        if (!passThrough) {
          pendingStart = c -> c.start(listener, headers);
          pending.add(pendingStart);
          return;
        }
      }
    }
    real.start(listener, headers);
  }

  @Override
  public void request(int numMessages) {
    run(c -> c.request(numMessages));
  }

  /**
   * While held, only the start (which comes first) is kept with the cancellation: the real call
   * then ends at once with the application's reason, and its message is never sent. If a replay
   * has begun, what it took is replayed before the cancellation.
   */
  @Override
  public void cancel(String message, Throwable cause) {
    boolean queued = false;
    if (!passThrough) {
      synchronized (lock) {
        if (!passThrough) {
          List<Consumer<ClientCall<ReqT, RespT>>> kept = new ArrayList<>();
          if (pendingStart != null) {
            kept.add(pendingStart); // not replayed yet (a drain under way took it otherwise)
          }
          kept.add(c -> c.cancel(message, cause));
          pending = kept;
          queued = true;
        }
      }
    }
    if (queued) {
      onCancel.run(); // the replay, now or under way, ends with the cancellation
      return;
    }
    real.cancel(message, cause);
  }

  @Override
  public void halfClose() {
    run(ClientCall::halfClose);
  }

  @Override
  public void sendMessage(ReqT message) {
    run(c -> c.sendMessage(message));
  }

  @Override
  public void setMessageCompression(boolean enabled) {
    run(c -> c.setMessageCompression(enabled));
  }

  @Override
  public boolean isReady() {
    return passThrough && real.isReady();
  }

  @Override
  public Attributes getAttributes() {
    return passThrough ? real.getAttributes() : Attributes.EMPTY;
  }
}
