package io.spillway.spring.internal;

import reactor.core.publisher.Flux;
import reactor.core.publisher.FluxSink;

/**
 * A session's credit stream ({@link HttpCreditStreams}) on WebFlux: the events of the response
 * body, emitted as its writer asks for them. A gate's control loop only adds a credit to what
 * waits ({@link #send} never blocks), merged per gate ({@link PendingCredits}), and what waits
 * goes out in one emission when the writer asks for one. A writer that stops asking (its client
 * does not read) leaves one event per gate waiting here however many credits come meanwhile,
 * where a buffering sink would keep every one.
 *
 * <p>Thread-safe: emissions are serialised by the monitor, as a sink needs.
 */
final class FluxCreditStream implements HttpCreditStreams.Stream {

  private final PendingCredits pending = new PendingCredits(); // guarded by this
  private FluxSink<byte[]> sink; // guarded by this; null until subscribed
  /** Emissions the subscriber asked for and has not had. */
  private long requested; // guarded by this
  private boolean ended; // guarded by this

  /** The stream's events, for one subscriber: the response body's writer. */
  Flux<byte[]> events() {
    return Flux.create(s -> {
      synchronized (this) {
        sink = s;
      }
      s.onRequest(this::requested);
      drain();
    });
  }

  private void requested(long n) {
    synchronized (this) {
      requested = requested + n < 0 ? Long.MAX_VALUE : requested + n;
    }
    drain();
  }

  @Override
  public void send(int endpoint, int creditDelta, int window, long seq) {
    synchronized (this) {
      if (ended) {
        return;
      }
      pending.add(endpoint, creditDelta, window, seq);
    }
    drain();
  }

  /**
   * Ends the stream: what waits goes if the writer asks for it now, else it is dropped, as the
   * stream's session has been deregistered or another stream of it carries its credits; either
   * way the body completes at once, and a client that does not read holds nothing here.
   */
  @Override
  public void end() {
    synchronized (this) {
      ended = true;
    }
    drain();
  }

  /** Emits what waits as far as the subscriber asked for it, and completes once ended. */
  private synchronized void drain() {
    if (sink == null) {
      return;
    }
    if (requested > 0 && !pending.isEmpty()) {
      if (requested != Long.MAX_VALUE) { // MAX_VALUE: unbounded, as Reactive Streams counts
        requested--;
      }
      sink.next(pending.take()); // all that waited, in one emission
    }
    if (ended) {
      pending.clear();
      sink.complete();
    }
  }

  /** Events waiting to be emitted: at most one per gate. */
  synchronized int pendingEvents() {
    return pending.gates();
  }
}
