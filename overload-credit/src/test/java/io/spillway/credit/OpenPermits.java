package io.spillway.credit;

import io.spillway.api.Outcome;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerGate;
import io.spillway.api.ServerPermit;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * The permits a concurrency test's actors hold: a request admitted stays open until an actor, or
 * the validation, completes it; a refused one is completed as dropped at once. Thread-safe.
 */
final class OpenPermits {

  private final ConcurrentLinkedQueue<ServerPermit> open = new ConcurrentLinkedQueue<>();

  /** Sends {@code request} to {@code gate} at {@code now}; an admitted one stays open. */
  void request(ServerGate gate, RequestMetadata request, long now) {
    ServerPermit p = gate.admit(request, now);
    if (p.isAdmitted()) {
      open.add(p);
    } else {
      p.complete(Outcome.DROPPED, now, new ResponseMetadata());
    }
  }

  /** Completes the oldest open permit, if any, as a success. */
  void completeOne(long now) {
    ServerPermit p = open.poll();
    if (p != null) {
      p.complete(Outcome.SUCCESS, now, new ResponseMetadata());
    }
  }

  /** Completes every open permit as a success. */
  void completeAll(long now) {
    for (ServerPermit p; (p = open.poll()) != null; ) {
      p.complete(Outcome.SUCCESS, now, new ResponseMetadata());
    }
  }

  boolean isEmpty() {
    return open.isEmpty();
  }
}
