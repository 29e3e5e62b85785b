package io.spillway.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.AbstractServerPermit;
import io.spillway.api.CallGraphGate;
import io.spillway.api.ClientEnvironment;
import io.spillway.api.ClientGate;
import io.spillway.api.InterfaceCall;
import io.spillway.api.NoControl;
import io.spillway.api.OverloadScheme;
import io.spillway.api.Outcome;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.ServerPermit;
import io.spillway.api.Status;
import io.spillway.api.testing.ForwardingServerGate;
import io.spillway.api.testing.LeakCheckingServerGate;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BiFunction;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/**
 * The call-graph simulator's own behaviour, on a five-service graph small enough to run in
 * milliseconds:
 * <pre>
 *   front ─┬─ mid ─┬─ leafB
 *          │       └─ db
 *          └─ leafA
 * </pre>
 * Runs that must drain stop arrivals at 100 ms and end at 400 ms, long enough for every request
 * to end, so that nothing in flight hides a leak.
 */
class GraphSimulationTest {

  private static final long STOP = 100_000_000L;
  private static final long END = 400_000_000L;
  private static final int CLIENTS = 200;

  private static Map<String, String> graph() {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("clients", Integer.toString(CLIENTS));
    m.put("rtt_us", "20");
    m.put("cost_rx_us", "1");
    m.put("cost_tx_us", "1");
    m.put("slo_us", "2000");
    m.put("window_ms", "10");
    m.put("seed", "3");
    m.put("graph.services", "front:2, mid, leafA, leafB, db");
    m.put("graph.interfaces", "q");
    m.put("graph.q", "front 20 -> mid, leafA; mid 30 -> leafB, db; leafA 10; leafB 10; db 40");
    return m;
  }

  private static Scenario scenario(Map<String, String> extra) {
    Map<String, String> m = graph();
    m.putAll(extra);
    return Scenario.of(m);
  }

  /** A run at {@code level} × 20,000 rps per interface until 100 ms, then nothing until 400 ms. */
  private record Drained(GraphSimulation simulation, GraphRecorder.Window total) { }

  private static Drained drained(Scenario s, GraphScheme scheme, double level,
      BiFunction<CallGraph.Service, ServerGate, ServerGate> decorator) {
    CallGraph g = s.callGraph();
    List<List<Scenario.DemandStep>> steps = new ArrayList<>();
    double[] capacity = new double[g.interfaces().size()];
    for (int i = 0; i < capacity.length; i++) {
      steps.add(List.of(new Scenario.DemandStep(level, 0), new Scenario.DemandStep(0, STOP)));
      capacity[i] = 20_000;
    }
    GraphRecorder recorder = new GraphRecorder(s.windowNanos(), capacity.length, g.services().size());
    GraphSimulation sim = new GraphSimulation(s, g, scheme, GraphSimulation.Load.open(steps, capacity),
        END, recorder, s.seed(), decorator);
    sim.run();
    return new Drained(sim, recorder.sum(0, END));
  }

  @Test
  void sameSeedSameResults() throws Exception {
    Scenario s = scenario(Map.of("schemes", "none, breakwater, breakwater-d, dagor",
        "schedule", "0.8@0, 2@100", "duration_ms", "250"));
    String a = GraphReport.toJson(new GraphExperiment(s, 2).run());
    String b = GraphReport.toJson(new GraphExperiment(s, 1).run());
    assertEquals(a, b, "runs must not depend on thread count or order");
    String c = GraphReport.toJson(new GraphExperiment(s.with(Map.of("seed", "4")), 2).run());
    assertNotEquals(a, c, "another seed, other arrivals");
  }

  @Test
  void aControllerClockAboutToWrapChangesNothing() throws Exception {
    Scenario s = scenario(Map.of("schemes", "breakwater-d, dagor", "schedule", "0.8@0, 2@100",
        "duration_ms", "250"));
    Scenario wrapping = s.with(Map.of("time_origin_ns", Long.toString(Long.MAX_VALUE - 100_000_000L)));
    GraphExperiment.Results a = new GraphExperiment(s, 2).run();
    GraphExperiment.Results b = new GraphExperiment(wrapping, 2).run();
    assertEquals(a.rows(), b.rows());
    assertEquals(a.services(), b.services());
  }

  /** The baselines, and Rajomon once SchemeRegistry knows it (it plugs in by name). */
  private static List<String> graphSchemes() {
    List<String> names = new ArrayList<>(List.of("none", "breakwater", "breakwater-d", "dagor"));
    if (GraphScheme.known("rajomon")) {
      names.add("rajomon");
    }
    return names;
  }

  @Test
  void everyRequestEndsExactlyOnceAtEveryHop() {
    Scenario s = scenario(Map.of());
    for (String name : graphSchemes()) {
      // Unwrapped first, so that a gate that is a CallGraphGate hears its callees.
      Drained plain = drained(s, GraphScheme.resolve(name, s), 2.0, (service, gate) -> gate);
      assertEquals(0, plain.simulation().requestsInFlight(), name);
      assertEquals(0, plain.simulation().permitsOpen(), name);
      assertEquals(plain.total().interfaces[0].offered, plain.total().interfaces[0].ended(), name);

      List<LeakCheckingServerGate> gates = new ArrayList<>();
      Drained d = drained(s, GraphScheme.resolve(name, s), 2.0, (service, gate) -> {
        LeakCheckingServerGate checked = new LeakCheckingServerGate(gate);
        gates.add(checked);
        return checked;
      });
      assertEquals(0, d.simulation().requestsInFlight(), name);
      assertEquals(0, d.simulation().permitsOpen(), name);
      for (LeakCheckingServerGate g : gates) {
        assertTrue(g.issued() > 0, name + ": every service saw requests");
        g.assertNoLeaks();
      }
      GraphRecorder.InterfaceTally t = d.total().interfaces[0];
      assertTrue(t.offered > 1_000, name + " offered " + t.offered);
      assertEquals(t.offered, t.ended(), name + ": every request ended once");
    }
  }

  @Test
  void fanOutReachesEveryNode() {
    Scenario s = scenario(Map.of());
    Drained d = drained(s, GraphScheme.uncontrolled(), 0.5, (service, gate) -> gate);
    GraphRecorder.InterfaceTally t = d.total().interfaces[0];
    assertEquals(t.offered, t.completed, "below capacity, with no control, everything is served");
    for (GraphRecorder.ServiceTally service : d.total().services) {
      assertEquals(t.offered, service.received, "every node runs once per request");
      assertEquals(0, service.dropped);
    }
    // Compute spent: the sum of the five nodes' means (110 us) per request, within sampling noise.
    double perRequest = t.computeNanos / (double) t.completed;
    assertEquals(110_000, perRequest, 110_000 * 0.05);
    assertEquals(0, t.wastedNanos);
  }

  @Test
  void aRejectDeepInTheGraphFailsTheWholeRequest() {
    Scenario s = scenario(Map.of());
    List<LeakCheckingServerGate> gates = new ArrayList<>();
    Drained d = drained(s, GraphScheme.uncontrolled(), 0.5, (service, gate) -> {
      LeakCheckingServerGate checked = new LeakCheckingServerGate(
          service.name().equals("db") ? new RejectOdd(gate) : gate);
      gates.add(checked);
      return checked;
    });
    GraphRecorder.InterfaceTally t = d.total().interfaces[0];
    GraphRecorder.ServiceTally db = d.total().services[s.callGraph().service("db").index()];
    GraphRecorder.ServiceTally leafA = d.total().services[s.callGraph().service("leafA").index()];
    assertTrue(db.dropped > 100, "db rejected " + db.dropped);
    assertEquals(db.dropped, t.shedInner, "each reject at db fails its whole request");
    assertEquals(t.offered - db.dropped, t.completed);
    assertEquals(0, t.shedFront);
    assertEquals(t.offered, leafA.received, "a sibling branch still runs: nothing cancels it");
    assertTrue(t.wastedNanos > 0 && t.wastedNanos < t.computeNanos,
        "front, mid, leafA and leafB worked for the failed requests");
    gates.forEach(LeakCheckingServerGate::assertNoLeaks);
    assertEquals(0, d.simulation().permitsOpen());
  }

  @Test
  void tokensPrioritiesAndRequestIdsReachTheLeaves() {
    Scenario s = scenario(Map.of());
    TaggingScheme tagging = new TaggingScheme();
    Map<String, Recording> recordings = new HashMap<>();
    drained(s, new GraphScheme("tagging", tagging, tagging, false), 0.5, (service, gate) -> {
      Recording r = new Recording(service, gate);
      recordings.put(service.name(), r);
      return r;
    });
    Map<Long, long[]> atFront = recordings.get("front").headers;
    assertTrue(atFront.size() > 500);
    assertTrue(tagging.interfacesSeen.equals(Set.of(0)), "the client gate reads InterfaceCall");
    for (String leaf : List.of("leafA", "leafB", "db", "mid")) {
      Map<Long, long[]> seen = recordings.get(leaf).headers;
      assertEquals(atFront.keySet(), seen.keySet(), leaf + " sees every request, by its id");
      seen.forEach((id, header) -> {
        long[] front = atFront.get(id);
        assertEquals(front[0], header[0], leaf + ": tokens inherited");
        assertEquals(front[1], header[1], leaf + ": priority inherited");
        assertEquals(0, header[2], leaf + ": interface id");
      });
    }
    assertTrue(atFront.values().stream().allMatch(h -> h[0] >= 100 && h[1] >= 1),
        "the client gate's tokens and priority reached the front-end");
  }

  @Test
  void callGraphGatesHearEveryCalleeResponseWithItsPrice() {
    Map<String, String> two = new HashMap<>(Map.of("graph.interfaces", "q, r",
        "graph.r", "front 10 -> db; db 20"));
    Scenario s = scenario(two);
    CallGraph g = s.callGraph();
    Map<String, Recording> recordings = new HashMap<>();
    Drained d = drained(s, GraphScheme.uncontrolled(), 0.3, (service, gate) -> {
      Recording r = new Recording(service, service.name().equals("db") ? new RejectOdd(gate) : gate);
      recordings.put(service.name(), r);
      return r;
    });
    int front = g.service("front").index();
    int mid = g.service("mid").index();
    int leafA = g.service("leafA").index();
    int leafB = g.service("leafB").index();
    int db = g.service("db").index();
    // calleeKey = callee service index × 2 interfaces + interface (q = 0, r = 1)
    assertEquals(Set.of(0 + 2 * mid, 0 + 2 * leafA, 1 + 2 * db), recordings.get("front").keys());
    assertEquals(Set.of(0 + 2 * leafB, 0 + 2 * db), recordings.get("mid").keys());
    assertTrue(recordings.get("db").reports.isEmpty(), "leaves call no one");
    for (Recording caller : recordings.values()) {
      for (Report r : caller.reports) {
        assertEquals(10L * (r.calleeKey / 2 + 1), r.price, "the callee's price reached its caller");
        assertEquals(r.calleeKey % 2, r.interfaceId, "the response names the callee's interface");
        assertEquals(r.inbound, r.interfaceId, "a service calls the same interface downstream");
      }
    }
    GraphRecorder.Window total = d.total();
    long requests = total.interfaces[0].offered + total.interfaces[1].offered;
    assertEquals(requests, total.services[front].received);
    assertEquals(2 * total.interfaces[0].offered + total.interfaces[1].offered,
        recordings.get("front").reports.size(), "one report per callee response");
    long rejectsHeardByMid = recordings.get("mid").reports.stream()
        .filter(r -> r.status != Status.OK).count();
    long rejectsHeardByFront = recordings.get("front").reports.stream()
        .filter(r -> r.status != Status.OK).count();
    assertEquals(total.services[db].dropped, total.interfaces[0].shedInner + total.interfaces[1].shedInner);
    assertTrue(rejectsHeardByMid > 0);
    assertEquals(total.services[db].dropped, rejectsHeardByFront,
        "db's rejects reach the front-end: directly (r) or as mid's failure (q)");
  }

  @Test
  void breakwaterDistributedGivesEachCallerASessionPerCallee() {
    Scenario s = scenario(Map.of());
    Map<String, Recording> recordings = new HashMap<>();
    drained(s, GraphScheme.resolve("breakwater-d", s), 2.0, (service, gate) -> {
      Recording r = new Recording(service, gate);
      recordings.put(service.name(), r);
      return r;
    });
    long frontSession = CLIENTS + 1 + s.callGraph().service("front").index();
    long midSession = CLIENTS + 1 + s.callGraph().service("mid").index();
    assertEquals(Set.of(frontSession), recordings.get("mid").sessions);
    assertEquals(Set.of(frontSession), recordings.get("leafA").sessions);
    assertEquals(Set.of(midSession), recordings.get("db").sessions);
    assertEquals(CLIENTS, recordings.get("front").sessions.size(), "end clients call the front-end");
    assertTrue(recordings.get("front").sessions.stream().allMatch(id -> id >= 1 && id <= CLIENTS));
  }

  @Test
  void belowCapacityNoSchemeSheds() {
    Scenario s = scenario(Map.of());
    for (String name : List.of("none", "breakwater", "breakwater-d", "dagor")) {
      GraphRecorder.InterfaceTally t = drained(s, GraphScheme.resolve(name, s), 0.3,
          (service, gate) -> gate).total().interfaces[0];
      assertEquals(t.offered, t.completed, name);
      assertEquals(t.completed, t.good, name + ": all within the SLO");
    }
  }

  @Test
  void capacityIsTheBottleneckServicesWorkersOverItsWorkPerRequest() {
    Scenario s = scenario(Map.of("service", "const", "graph.services", "front:4, db:2",
        "graph.q", "front 5 -> db; db 100"));
    // db per request: parse 1 + compute 100 + send 1 = 102 us on each of 2 workers.
    double expected = 2 / 102e-6;
    assertEquals(expected, GraphExperiment.measureCapacity(s, s.callGraph(), 0), expected * 0.01);
  }

  @Test
  void schemesArePlacedByName() {
    Scenario s = scenario(Map.of());
    GraphScheme bw = GraphScheme.resolve("breakwater", s);
    assertSame(NoControl.INSTANCE, bw.inner(), "breakwater runs at the front-end only");
    assertFalse(bw.callerSessions());
    GraphScheme bwd = GraphScheme.resolve("breakwater-d", s);
    assertEquals("breakwater", bwd.inner().name());
    assertTrue(bwd.callerSessions());
    GraphScheme dagor = GraphScheme.resolve("dagor", s);
    assertEquals("dagor", dagor.inner().name());
    assertFalse(dagor.callerSessions());
    assertFalse(GraphScheme.known("no-such-scheme"));
    assertFalse(GraphScheme.known("no-such-scheme-d"));
  }

  @Test
  void aSurgeLevelWarmsUpAtNormalLoadAndAnInterfaceKeepsItsOwnSchedule() throws Exception {
    Scenario s = scenario(Map.of("graph.interfaces", "q, r", "graph.r", "front 10 -> db; db 20",
        "graph.r.schedule", "0@0", "demand", "0.5, 2", "warmup_ms", "50", "duration_ms", "100",
        "capacity_rps", "10000", "schemes", "none"));
    GraphExperiment e = new GraphExperiment(s, 1);
    assertFalse(e.scheduled(), "one interface's own schedule does not make the run a schedule");
    assertEquals(List.of(new Scenario.DemandStep(0.8, 0), new Scenario.DemandStep(2, 50_000_000)),
        e.steady(2).get(0), "rajomon-nsdi25 §5.1: warm up at 80 %, then surge");
    assertEquals(List.of(new Scenario.DemandStep(0.5, 0)), e.steady(0.5).get(0));
    assertEquals(List.of(new Scenario.DemandStep(0, 0)), e.steady(2).get(1));
    GraphExperiment.Results r = e.run();
    assertEquals(List.of("q", "q"), r.rows().stream().map(GraphExperiment.Row::iface).toList(),
        "r is idle: no rows");
    assertEquals(List.of(0.5, 2.0), r.rows().stream().map(GraphExperiment.Row::demand).toList());
  }

  @Test
  void unknownSchemesAreSkippedAndNamed() throws Exception {
    Scenario s = scenario(Map.of("schemes", "none, no-such-scheme", "demand", "0.5",
        "warmup_ms", "50", "duration_ms", "100", "capacity_rps", "10000"));
    GraphExperiment.Results r = new GraphExperiment(s, 1).run();
    assertEquals(List.of("no-such-scheme"), r.skipped());
    assertTrue(r.rows().stream().allMatch(row -> row.scheme().equals("none")));
    assertNull(Scenario.of(Map.of()).callGraph());
  }

  // ---------------------------------------------------------------- test gates

  /** Rejects every request with an odd request id; the others go to the delegate. */
  private static final class RejectOdd extends ForwardingServerGate {
    RejectOdd(ServerGate delegate) {
      super(delegate);
    }

    @Override
    public ServerPermit admit(RequestMetadata request, long nowNanos) {
      if (request.requestId() % 2 == 1) {
        return new AbstractServerPermit(Status.REJECTED_LIMIT) {
          @Override
          protected void onComplete(Outcome outcome, long now, ResponseMetadata response) { }
        };
      }
      return delegate.admit(request, nowNanos);
    }
  }

  private record Report(int inbound, int calleeKey, Status status, long price, int interfaceId) { }

  /**
   * Records what a service's gate sees: each request's header (by request id) and session, and
   * every callee response; publishes a price of 10 × (service index + 1) on its responses.
   */
  private static final class Recording extends ForwardingServerGate implements CallGraphGate {
    final CallGraph.Service service;
    final Map<Long, long[]> headers = new HashMap<>();
    final Set<Long> sessions = new HashSet<>();
    final List<Report> reports = new ArrayList<>();

    Recording(CallGraph.Service service, ServerGate delegate) {
      super(delegate);
      this.service = service;
    }

    Set<Integer> keys() {
      Set<Integer> keys = new HashSet<>();
      reports.forEach(r -> keys.add(r.calleeKey));
      return keys;
    }

    @Override
    public ServerPermit admit(RequestMetadata request, long nowNanos) {
      headers.put(request.requestId(),
          new long[] {request.tokens(), request.priority(), request.interfaceId()});
      sessions.add(request.sessionId());
      ServerPermit permit = delegate.admit(request, nowNanos);
      long price = 10L * (service.index() + 1);
      return new ServerPermit() {
        @Override
        public boolean isAdmitted() {
          return permit.isAdmitted();
        }

        @Override
        public Status status() {
          return permit.status();
        }

        @Override
        public void complete(Outcome outcome, long now, ResponseMetadata response) {
          permit.complete(outcome, now, response);
          response.price(price);
        }

        @Override
        public boolean isCompleted() {
          return permit.isCompleted();
        }

        @Override
        public void started(long nowNanos) {
          permit.started(nowNanos);
        }
      };
    }

    @Override
    public void onDownstreamResponse(int inboundInterfaceId, int calleeKey,
        ResponseMetadata response, long nowNanos) {
      reports.add(new Report(inboundInterfaceId, calleeKey, response.status(), response.price(),
          response.interfaceId()));
    }
  }

  /** No control, but clients attach tokens (100–149) and a priority (1–9) to every request. */
  private static final class TaggingScheme implements OverloadScheme {
    final Set<Integer> interfacesSeen = new HashSet<>();

    @Override
    public String name() {
      return "tagging";
    }

    @Override
    public ServerGate newServerGate(ServerEnvironment environment) {
      return NoControl.INSTANCE.newServerGate(environment);
    }

    @Override
    public <R> ClientGate<R> newClientGate(ClientEnvironment environment) {
      ClientGate<R> plain = ClientGate.sendAtOnce(environment);
      return new ClientGate<>() {
        private long sent;

        @Override
        public boolean offer(R request, long arrivalNanos, long nowNanos) {
          interfacesSeen.add(((InterfaceCall) request).interfaceId());
          return plain.offer(request, arrivalNanos, nowNanos);
        }

        @Override
        public R poll(long nowNanos, RequestMetadata header) {
          R next = plain.poll(nowNanos, header);
          if (next != null) {
            sent++;
            header.tokens(100 + (environment.sessionId() * 7 + sent) % 50)
                .priority((int) (1 + (environment.sessionId() + sent) % 9));
          }
          return next;
        }

        @Override
        public void onResponse(ResponseMetadata response, long sentAtNanos, long nowNanos) { }

        @Override
        public int expire(long nowNanos, Consumer<? super R> expired) {
          return plain.expire(nowNanos, expired);
        }

        @Override
        public boolean remove(R request, long nowNanos) {
          return plain.remove(request, nowNanos);
        }

        @Override
        public long nextWakeupNanos() {
          return plain.nextWakeupNanos();
        }

        @Override
        public int queued() {
          return plain.queued();
        }
      };
    }
  }
}
