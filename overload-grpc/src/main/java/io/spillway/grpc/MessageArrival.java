package io.spillway.grpc;

import io.grpc.Metadata;
import io.grpc.ServerStreamTracer;
import io.spillway.api.Ticker;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;

/**
 * Whether an admitted unary or server-streaming call waits for this server or for its client, for
 * the queueing signal ({@link UnstartedCalls}).
 *
 * <p>Such a call counts from its admission until its request message reaches the handler: the
 * handler asks for the message as it starts, and on a saturated core the event loop's delivery
 * of it, a task behind the loop's other work, is much of the call's wait (docs/results/grpc.md).
 * But a client that sends its headers and then nothing (a stall, a slow upload) is not waiting
 * for this server. Counted, it would hold the oldest slot until its deadline, for ever without
 * one, and the AQM would refuse every other call meanwhile.
 *
 * <p>The two are told apart on the call's event loop. The handler's request for the message is a
 * task on that loop (grpc-netty runs a stream's requests on its transport thread), and Netty runs a
 * loop's tasks in the order they were submitted. So once the handler has asked, this tracer
 * submits itself to the loop ({@link #run}); when it runs, the loop has handled the request and
 * delivered whatever of the message it had read. If the message has still not been read, its bytes
 * were not there: the call leaves the signal, and counts again from the moment its last byte is
 * read ({@link #inboundMessageRead}, on the transport thread, before the message is handed to
 * the call's executor). A call whose message the loop was merely slow to deliver stays counted
 * throughout. On a transport without a Netty loop (in-process), the message is read as the client
 * sends it, so a call whose message is missing when its handler asks is waiting for its client.
 *
 * <p>{@link SpillwayGrpcServer.Builder#install} adds the factory; the tracer is linked to its
 * call's admission on the same transport thread ({@link SpillwayServerInterceptor}'s executor
 * supplier), by the identity of the headers both are given.
 *
 * <p>Thread-safe: the transport thread, the call's workers and a cancelling thread meet on the
 * tracer's monitor, a handful of times per call.
 */
final class MessageArrival extends ServerStreamTracer implements Runnable {

  private static final int NONE = 0;
  /** The handler has asked for the message; the loop has not yet confirmed it missing. */
  private static final int ASKED = 1;
  /** The loop found the message missing: the call waits for its client. */
  private static final int AWAITING_CLIENT = 2;
  private static final int ARRIVED = 3;
  private static final int ENDED = 4;

  /** The headers the call was created with, to match the tracer to its call's admission. */
  final Metadata headers;
  private final Executor loop;
  private final UnstartedCalls unstarted;
  private final Ticker ticker;
  private long ticket = -1; // guarded by this; -1 until the call is admitted and measured
  private int state = NONE; // guarded by this

  MessageArrival(Metadata headers, Executor loop, UnstartedCalls unstarted, Ticker ticker) {
    this.headers = headers;
    this.loop = loop;
    this.unstarted = unstarted;
    this.ticker = ticker;
  }

  /** The call was admitted with {@code ticket} in the unstarted set; on the transport thread. */
  synchronized void admitted(long ticket) {
    this.ticket = ticket;
  }

  /** The call's handler has started and asked for its request message; on a worker. */
  void handlerAsked() {
    synchronized (this) {
      if (state != NONE || ticket < 0) {
        return; // the message is in already, or the call is over (or not measured)
      }
      state = ASKED;
      if (loop != null) {
        try {
          loop.execute(this); // behind the loop's task that handles the request
          return;
        } catch (RejectedExecutionException shuttingDown) {
          // the loop is going: the call ends with its transport
        }
      }
      missing();
    }
  }

  /** On the call's loop, after it handled the handler's request for the message. */
  @Override
  public synchronized void run() {
    if (state == ASKED) {
      missing();
    }
  }

  /** The message is not there where the handler asked for it: the call waits for its client. */
  private void missing() {
    unstarted.started(ticket);
    ticket = -1;
    state = AWAITING_CLIENT;
  }

  @Override
  public void inboundMessageRead(int seqNo, long optionalWireSize, long optionalUncompressedSize) {
    if (seqNo != 0) {
      return;
    }
    synchronized (this) {
      if (state == AWAITING_CLIENT) {
        ticket = unstarted.arrived(ticker.read()); // it waits for this server again, from now
      }
      if (state != ENDED) {
        state = ARRIVED;
      }
    }
  }

  /**
   * The call reached its handler or ended: returns its ticket to clear ({@code -1} if none is
   * left), after which a late message changes nothing.
   */
  synchronized long end() {
    state = ENDED;
    long t = ticket;
    ticket = -1;
    return t;
  }

  /**
   * Creates a tracer per stream and leaves it for the executor supplier that decides on the call
   * next, on the same transport thread ({@link #take}).
   */
  static final class Factory extends ServerStreamTracer.Factory {
    private static final ThreadLocal<MessageArrival> LATEST = new ThreadLocal<>();

    private final UnstartedCalls unstarted;
    private final Ticker ticker;

    /** Tracers for calls measured in {@code unstarted}, with {@code ticker}. */
    Factory(UnstartedCalls unstarted, Ticker ticker) {
      this.unstarted = unstarted;
      this.ticker = ticker;
    }

    @Override
    public ServerStreamTracer newServerStreamTracer(String fullMethodName, Metadata headers) {
      MessageArrival arrival = new MessageArrival(headers, EventLoopProbe.currentLoop(), unstarted,
          ticker);
      LATEST.set(arrival);
      return arrival;
    }

    /** The tracer this thread created for the call with {@code headers}, or {@code null}. */
    static MessageArrival take(Metadata headers) {
      MessageArrival arrival = LATEST.get();
      if (arrival == null) {
        return null;
      }
      LATEST.set(null);
      return arrival.headers == headers ? arrival : null;
    }
  }
}
