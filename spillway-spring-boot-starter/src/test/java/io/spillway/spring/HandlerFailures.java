package io.spillway.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.spillway.api.Outcome;
import java.io.IOException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
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
   * The end of one request's permit and the answer the request got.
   *
   * @param outcome how the permit ended
   * @param response the answer, or {@code null} if it broke off
   */
  record Ended(Outcome outcome, HttpResponse<String> response) { }

  /**
   * Sends {@code path} to the application's only endpoint gate, plainly or as a new session's
   * first request, waits for its permit to end, and returns its outcome.
   */
  static Outcome outcomeOf(SpillwayHttpGate gate, int port, String path, boolean session)
      throws Exception {
    return send(gate, port, path, session, () -> { }).outcome();
  }

  /**
   * As {@link #outcomeOf}, with the answer: {@code afterEnd} runs once the permit has ended, and
   * the answer is awaited after it (an answer that waits for it is not written before).
   */
  static Ended send(SpillwayHttpGate gate, int port, String path, boolean session,
      Runnable afterEnd) throws Exception {
    GateStats stats = gate.endpoints().get(0).stats();
    long admitted = stats.admitted();
    long[] before = new long[Outcome.values().length];
    for (Outcome o : Outcome.values()) {
      before[o.ordinal()] = stats.completions(o);
    }
    long endedBefore = completions(stats);
    HttpRequest.Builder request = HttpRequest.newBuilder(LocalHttp.uri(port, path));
    if (session) {
      request.header(SpillwayHttpHeaders.SESSION, Long.toString(SESSIONS.incrementAndGet()))
          .header(SpillwayHttpHeaders.FLAGS, "1"); // registers
    }
    CompletableFuture<HttpResponse<String>> sent = LocalHttp.sendAsync(request.build());
    StarterMvcTest.waitUntil(() -> completions(stats) > endedBefore);
    afterEnd.run();
    HttpResponse<String> response = null;
    try {
      response = sent.get();
    } catch (ExecutionException e) {
      if (!(e.getCause() instanceof IOException)) {
        throw e;
      }
      // a response that failed after it was committed may end without its body's end
    }
    assertEquals(admitted + 1, stats.admitted(), "admitted");
    Outcome ended = null;
    for (Outcome o : Outcome.values()) {
      long n = stats.completions(o) - before[o.ordinal()];
      if (n > 0) {
        assertEquals(null, ended, "one permit ended once");
        assertEquals(1, n, o + " once");
        ended = o;
      }
    }
    return new Ended(ended, response);
  }

  /**
   * Every permit the gate's stats have seen end, by any outcome. A permit's end counts here only
   * once its outcome is recorded, which the gate's in-flight count does not wait for.
   */
  static long completions(GateStats stats) {
    long n = 0;
    for (Outcome o : Outcome.values()) {
      n += stats.completions(o);
    }
    return n;
  }
}
