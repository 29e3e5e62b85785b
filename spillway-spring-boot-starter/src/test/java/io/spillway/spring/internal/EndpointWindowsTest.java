package io.spillway.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.spillway.api.Cancellable;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.Status;
import io.spillway.api.testing.VirtualClock;
import io.spillway.credit.Spillway;
import io.spillway.spring.GateStats;
import io.spillway.spring.SpillwayHttpGate;
import io.spillway.spring.SpillwayHttpHeaders;
import io.spillway.spring.SpillwayHttpSession;
import io.spillway.spring.SpillwayProperties;
import java.net.InetSocketAddress;
import java.net.URI;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import org.junit.jupiter.api.Test;

/**
 * A client session with a server whose endpoints have gates of their own ({@code
 * spillway.endpoints}): each gate keeps its own ledger of the session's credits, so the session
 * keeps a window per gate, and a well-behaved session is never refused for credit (virtual time;
 * the starter's gates and credit streams, the session the starter's clients use, headers carried
 * as the filters and interceptors carry them).
 */
class EndpointWindowsTest {

  private static final URI SERVER = URI.create("http://orders.example:8080");
  private static final long SLO = 10_000_000;
  /** The client's connection, the origin its session registers from (on probation at first). */
  private static final InetSocketAddress CONNECTION = new InetSocketAddress("10.0.0.1", 40_000);

  private final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 10_000_000_000L);
  private final HttpCreditStreams credits = new HttpCreditStreams();
  /** What the stream delivers to the client, in order; delivered by {@link #pump}. */
  private final Queue<Runnable> streamEvents = new ArrayDeque<>();
  private final Map<Status, Integer> decisions = new EnumMap<>(Status.class);
  private final Map<String, Integer> mostInFlight = new HashMap<>();
  private final Map<String, Integer> inFlightByPath = new HashMap<>();

  private final SpillwayHttpGate server = new SpillwayHttpGate(clock, now -> 0,
      endpoint("default", "/**", 0), List.of(endpoint("slow", "/slow/**", 1)),
      List.of("/actuator/**"), SpillwayProperties.NoBudget.UNLIMITED, false, 1);

  private SpillwayHttpGate.Endpoint endpoint(String name, String pattern, int index) {
    GateStats stats = new GateStats(name);
    ServerGate gate = Spillway.forSloNanos(SLO).newServerGate(
        new ServerEnvironment(clock, clock, now -> 0, credits.channel(index), stats, 1));
    gate.start();
    return new SpillwayHttpGate.Endpoint(name, pattern, true, gate, SLO, SLO, stats, true);
  }

  /** The client's side of the credit stream, wired to the server's {@link HttpCreditStreams}. */
  private final SpillwayHttpSession.CreditStreams streams = new SpillwayHttpSession.CreditStreams() {
    @Override
    public Cancellable open(URI s, long sessionId, Listener listener) {
      String key = HttpCreditStreams.newKey();
      assertThat(credits.open(sessionId, new HttpCreditStreams.Stream() {
        @Override
        public void send(int endpoint, int delta, int window, long seq) {
          streamEvents.add(() -> listener.credit(endpoint, delta, window, seq));
        }

        @Override
        public void end() {
          streamEvents.add(() -> listener.closed(false, "ended"));
        }
      }, key, null)).isEqualTo(200);
      streamEvents.add(() -> listener.opened(server.routes(), key));
      return () -> { };
    }

    @Override
    public void deregister(URI s, long sessionId, String streamKey) {
      assertThat(credits.deregister(sessionId, streamKey, server)).isEqualTo(204);
    }

    @Override
    public void demand(URI s, long sessionId, String streamKey, int gate, int demand) {
      assertThat(credits.demand(sessionId, Integer.toString(demand), Integer.toString(gate),
          streamKey, server)).isEqualTo(204);
    }
  };


  private final SpillwayHttpSession session = new SpillwayHttpSession(SERVER,
      Spillway.forSloNanos(SLO), SLO, clock, clock, streams);

  private record Sent(SpillwayHttpSession.Ticket ticket, String path,
      SpillwayHttpGate.Admission admission) { }

  /**
   * Offers {@code paths} at once, then serves what the session sends, oldest first, one request
   * each 50 µs, until every request has ended; returns how many were answered with a 200.
   */
  private int run(List<String> paths) {
    List<SpillwayHttpSession.Ticket> tickets = new ArrayList<>();
    Map<SpillwayHttpSession.Ticket, String> pathOf = new HashMap<>();
    for (String p : paths) {
      SpillwayHttpSession.Ticket t = session.offer(p);
      tickets.add(t);
      pathOf.put(t, p);
    }
    List<SpillwayHttpSession.Ticket> unsent = new ArrayList<>(tickets);
    Queue<Sent> inFlight = new ArrayDeque<>();
    int ok = 0;
    int ended = 0;
    for (int step = 0; step < 100_000 && ended < tickets.size(); step++) {
      pump();
      for (var it = unsent.iterator(); it.hasNext(); ) {
        SpillwayHttpSession.Ticket t = it.next();
        if (!t.released().isDone()) {
          continue;
        }
        it.remove();
        if (t.released().isCompletedExceptionally()) {
          ended++;
          continue;
        }
        String path = pathOf.get(t);
        Map<String, String> headers = new HashMap<>();
        t.writeHeaders(headers::put);
        SpillwayHttpGate.Endpoint e = server.endpointFor(path);
        if (e == null) { // no gate decides: served as is, without fields
          inFlight.add(new Sent(t, path, null));
          continue;
        }
        SpillwayHttpGate.Admission a = server.admit(e, headers::get, CONNECTION);
        decisions.merge(a.status(), 1, Integer::sum);
        if (!a.isAdmitted()) {
          Map<String, String> reply = new HashMap<>();
          a.writeRejectHeaders(reply::put);
          session.onAnswer(t, 503, reply::get);
          ended++;
          continue;
        }
        a.started(clock.read());
        inFlight.add(new Sent(t, path, a));
        int n = inFlightByPath.merge(e.name(), 1, Integer::sum);
        mostInFlight.merge(e.name(), n, Math::max);
      }
      clock.advance(50_000);
      Sent done = inFlight.poll();
      if (done != null) {
        Map<String, String> reply = new HashMap<>();
        if (done.admission() != null) {
          inFlightByPath.merge(done.admission().endpoint().name(), -1, Integer::sum);
          SpillwayHttpHeaders.writeResponse(done.admission().end(200, null), reply::put);
        }
        session.onAnswer(done.ticket(), 200, reply::get);
        ok++;
        ended++;
      }
    }
    pump();
    assertThat(ended).as("every request ended").isEqualTo(tickets.size());
    return ok;
  }

  private void pump() {
    Runnable r;
    while ((r = streamEvents.poll()) != null) {
      r.run();
    }
  }

  @Test
  void aSessionCallingTwoEndpointGatesIsNeverRefusedForCredit() {
    int ok = 0;
    for (int round = 0; round < 20; round++) { // 12 at once, a third to the default gate
      List<String> paths = new ArrayList<>();
      for (int i = 0; i < 12; i++) {
        paths.add(i % 3 == 0 ? "/items/" + i : "/slow/report/" + i);
      }
      ok += run(paths);
    }
    assertThat(decisions.getOrDefault(Status.REJECTED_NO_CREDIT, 0))
        .as("refused for credit; decisions %s", decisions).isZero();
    assertThat(ok).isEqualTo(240);
    // both gates had several of the session's requests at once: their windows were in use
    assertThat(mostInFlight.get("slow")).isGreaterThan(1);
    assertThat(mostInFlight.get("default")).isGreaterThan(1);
  }
}
