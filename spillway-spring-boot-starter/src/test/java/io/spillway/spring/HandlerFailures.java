package io.spillway.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.spillway.api.Outcome;
import java.io.IOException;
import java.net.http.HttpRequest;
import java.util.concurrent.atomic.AtomicLong;

/**
 * How the permits of handlers that fail end, the same on both stacks: a handler that fails ends
 * as {@link Outcome#FAILED} (what Netflix's concurrency-limits filters call ignore: no latency
 * sample), whether or not it wrote part of its body first, unless its response's headers had
 * gone before it failed and it is a session's request, whose permit ends as its headers go
 * (they carry its credit delta), by the status they carry.
 */
final class HandlerFailures {

  private static final AtomicLong SESSIONS = new AtomicLong(System.nanoTime() & 0xFFFFFFFFL);

  private HandlerFailures() { }

  /**
   * Sends {@code path} to the application's only endpoint gate, plainly or as a new session's
   * first request, waits for its permit to end, and returns its outcome.
   */
  static Outcome outcomeOf(SpillwayHttpGate gate, int port, String path, boolean session)
      throws Exception {
    GateStats stats = gate.endpoints().get(0).stats();
    long admitted = stats.admitted();
    long[] before = new long[Outcome.values().length];
    for (Outcome o : Outcome.values()) {
      before[o.ordinal()] = stats.completions(o);
    }
    HttpRequest.Builder request = HttpRequest.newBuilder(LocalHttp.uri(port, path));
    if (session) {
      request.header(SpillwayHttpHeaders.SESSION, Long.toString(SESSIONS.incrementAndGet()))
          .header(SpillwayHttpHeaders.FLAGS, "1"); // registers
    }
    try {
      LocalHttp.send(request.build());
    } catch (IOException brokenOff) {
      // a response that failed after it was committed may end without its body's end
    }
    assertEquals(admitted + 1, stats.admitted(), "admitted");
    StarterMvcTest.waitUntil(() -> gate.inFlight() == 0);
    Outcome ended = null;
    for (Outcome o : Outcome.values()) {
      long n = stats.completions(o) - before[o.ordinal()];
      if (n > 0) {
        assertEquals(null, ended, "one permit ended once");
        assertEquals(1, n, o + " once");
        ended = o;
      }
    }
    return ended;
  }
}
