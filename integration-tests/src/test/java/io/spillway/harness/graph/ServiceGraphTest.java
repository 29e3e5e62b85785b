package io.spillway.harness.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.ClientInterceptor;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.spillway.harness.graph.proto.GraphGrpc;
import io.spillway.harness.graph.proto.GraphRequest;
import io.spillway.sim.CallGraph;
import io.spillway.sim.Recorder;
import io.spillway.sim.Scenario;
import io.spillway.sim.Tally;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A three-service graph on loopback, in this JVM. These check behaviour (every request answered,
 * every callee reached, a callee's reject reaching the client), never timings.
 */
class ServiceGraphTest {

  /** front fans out to left and right for search; reserve goes front → right only. */
  private static Scenario scenario() {
    return Scenario.of(Map.of(
        "clients", "20",
        "service", "const",
        "slo_us", "1000000",
        "window_ms", "20",
        "schemes", "none",
        "graph.services", "front:2, left, right",
        "graph.interfaces", "search, reserve",
        "graph.search", "front 20 -> left, right; left 20; right 20",
        "graph.reserve", "front 10 -> right; right 10"));
  }

  @Test
  void everyRequestCompletesAndReachesEveryCallee() throws Exception {
    Scenario s = scenario();
    try (ServiceGraph graph = ServiceGraph.start(s, GraphWirings.create("none", s))) {
      CallGraph g = graph.graph();
      ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", graph.frontEndPort(g.iface("search")))
          .usePlaintext().build();
      try {
        GraphGrpc.GraphBlockingStub stub = GraphGrpc.newBlockingStub(channel);
        assertEquals(3, stub.search(GraphRequest.newBuilder().setId(7).build()).getNodes(),
            "search computes at front, left and right");
        assertEquals(7, stub.search(GraphRequest.newBuilder().setId(7).build()).getId());
        assertEquals(2, stub.reserve(GraphRequest.newBuilder().setId(8).build()).getNodes(),
            "reserve computes at front and right");
      } finally {
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }

      long[] before = {graph.computed("front", "search"), graph.computed("left", "search"),
          graph.computed("right", "search"), graph.computed("front", "reserve"),
          graph.computed("right", "reserve")};
      List<Recorder> recorders;
      try (GraphClient client = new GraphClient(s, graph.ports(), GraphWirings.create("none", s), s.clients(), 2)) {
        client.connect();
        // Both interfaces open loop at a rate one core serves easily, for 300 ms.
        GraphLoadGenerator run = GraphLoadGenerator.openLoop(client,
            List.of(List.of(new Scenario.DemandStep(1.0, 0)), List.of(new Scenario.DemandStep(1.0, 0))),
            new double[] {1_000, 1_000}, 300_000_000L, s.windowNanos(), 11);
        recorders = run.done().get(60, TimeUnit.SECONDS);
        assertEquals(0, run.errors(), "errors: " + run.firstError());
      }
      Tally search = recorders.get(g.iface("search").index()).total();
      Tally reserve = recorders.get(g.iface("reserve").index()).total();
      assertTrue(search.offered > 50 && reserve.offered > 50,
          "offered search " + search.offered + ", reserve " + reserve.offered);
      for (Tally t : List.of(search, reserve)) {
        assertEquals(t.offered, t.completed, "every request answered");
        assertEquals(t.offered, t.sent, "none never holds a request back");
        assertEquals(0, t.dropped + t.expired);
        assertEquals(t.completed, t.latency.getTotalCount());
      }
      // Fan-out: each search computed once at every node of its tree, each reserve at front and right.
      assertEquals(search.completed, graph.computed("front", "search") - before[0]);
      assertEquals(search.completed, graph.computed("left", "search") - before[1]);
      assertEquals(search.completed, graph.computed("right", "search") - before[2]);
      assertEquals(reserve.completed, graph.computed("front", "reserve") - before[3]);
      assertEquals(reserve.completed, graph.computed("right", "reserve") - before[4]);
      assertEquals(0, graph.computed("left", "reserve"));
    }
  }

  @Test
  void everySchemeEndsEveryRequestExactlyOnceUnderOverload() throws Exception {
    Scenario s = scenario().with(Map.of("slo_us", "20000", "rtt_us", "200"));
    for (String name : List.of("breakwater", "breakwater-d", "dagor", "rajomon")) {
      GraphWiring wiring = GraphWirings.create(name, s);
      try (ServiceGraph graph = ServiceGraph.start(s, wiring)) {
        List<Recorder> recorders;
        long errors;
        String firstError;
        long served;
        try (GraphClient client = new GraphClient(s, graph.ports(), wiring, s.clients(), 2)) {
          // Far past what one core serves for both interfaces at once, for 1 s.
          GraphLoadGenerator run = GraphLoadGenerator.openLoop(client,
              List.of(List.of(new Scenario.DemandStep(1.0, 0)), List.of(new Scenario.DemandStep(1.0, 0))),
              new double[] {20_000, 20_000}, 1_000_000_000L, s.windowNanos(), 13);
          recorders = run.done().get(60, TimeUnit.SECONDS);
          errors = run.errors();
          firstError = run.firstError();
          served = recorders.get(0).total().completed + recorders.get(1).total().completed;
          // The scheme must serve again, not shed everything for good. Whether it serves during
          // the flood itself depends on how fast this JVM is (on a cold one Rajomon's prices, which
          // also see the flooded event loop, can outrun every client's tokens for the whole second:
          // seen in CI), so light load follows, in slices, until something is served.
          for (int slice = 0; served == 0 && slice < 50; slice++) {
            GraphLoadGenerator light = GraphLoadGenerator.openLoop(client,
                List.of(List.of(new Scenario.DemandStep(1.0, 0)), List.of(new Scenario.DemandStep(1.0, 0))),
                new double[] {200, 200}, 200_000_000L, s.windowNanos(), 17 + slice);
            List<Recorder> after = light.done().get(60, TimeUnit.SECONDS);
            served = after.get(0).total().completed + after.get(1).total().completed;
          }
        }
        for (Recorder r : recorders) {
          Tally t = r.total();
          assertTrue(t.offered > 100, name + ": offered " + t.offered);
          assertEquals(t.offered, t.completed + t.dropped + t.expired + (errors > 0 ? errors : 0),
              name + ": every request ends once (served " + t.completed + ", rejected " + t.dropped
                  + ", expired " + t.expired + ")");
        }
        assertEquals(0, errors, name + ": errors, first " + firstError);
        assertTrue(served > 0, name + ": nothing served, in the flood or in 10 s of light load after it");
      }
    }
  }

  @Test
  void aSpinUsesAtLeastTheCpuTimeAsked() {
    java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
    org.junit.jupiter.api.Assumptions.assumeTrue(CpuSpin.countsCpuTime(), "no thread CPU time here");
    long before = threads.getCurrentThreadCpuTime();
    CpuSpin.spin(3_000_000);
    assertTrue(threads.getCurrentThreadCpuTime() - before >= 3_000_000);
  }

  /**
   * On a virtual thread a spin ends, and where the OS thread's CPU clock can be read it uses at
   * least the CPU time asked, also while more busy threads than cores preempt its carrier: a
   * server whose handlers run on virtual threads pays for a request what one on platform threads
   * pays.
   */
  @Test
  void aSpinOnAVirtualThreadUsesAtLeastTheCpuTimeAsked() throws InterruptedException {
    CpuSpin.spin(1); // loaded on this platform thread
    java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
    List<Thread> hogs = new java.util.ArrayList<>();
    for (int i = 0; i <= Runtime.getRuntime().availableProcessors(); i++) {
      hogs.add(Thread.ofPlatform().daemon().start(() -> {
        while (!stop.get()) {
          Thread.onSpinWait();
        }
      }));
    }
    long asked = 20_000_000;
    long[] used = {-1};
    try {
      Thread spinner = Thread.ofVirtual().start(() -> {
        long before = CpuSpin.threadCpuNanos();
        CpuSpin.spin(asked);
        used[0] = before < 0 ? -1 : CpuSpin.threadCpuNanos() - before;
      });
      assertTrue(spinner.join(java.time.Duration.ofSeconds(30)), "the virtual thread's spin ended");
    } finally {
      stop.set(true);
      for (Thread hog : hogs) {
        hog.join();
      }
    }
    org.junit.jupiter.api.Assumptions.assumeTrue(used[0] >= 0, "spins count wall-clock time here: "
        + CpuSpin.clock());
    assertTrue(used[0] >= asked, "CPU time used " + used[0] + " ns of " + asked);
  }

  /** A wiring that rejects every call at one service, and nothing else. */
  private record RejectAt(String service) implements GraphWiring {
    @Override
    public String name() {
      return "reject-at-" + service;
    }

    @Override
    public ServiceWiring service(ServiceSite site) {
      List<ServerInterceptor> interceptors = !site.service().name().equals(service) ? List.of()
          : List.of(new ServerInterceptor() {
            @Override
            public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
                ServerCallHandler<Q, R> next) {
              call.close(Status.RESOURCE_EXHAUSTED.withDescription("shed at " + service), new Metadata());
              return new ServerCall.Listener<>() { };
            }
          });
      return new ServiceWiring() {
        @Override
        public List<ServerInterceptor> serverInterceptors() {
          return interceptors;
        }

        @Override
        public List<ClientInterceptor> downstream(CallGraph.Service callee) {
          return List.of();
        }
      };
    }

    @Override
    public List<ClientInterceptor> clientInterceptors(ClientSite site) {
      return List.of();
    }
  }

  @Test
  void aCalleesRejectFailsEveryCallerAboveItWithItsStatus() throws Exception {
    Scenario s = scenario();
    GraphWiring wiring = new RejectAt("left");
    try (ServiceGraph graph = ServiceGraph.start(s, wiring)) {
      CallGraph g = graph.graph();
      ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", graph.frontEndPort(g.iface("search")))
          .usePlaintext().build();
      try {
        GraphGrpc.GraphBlockingStub stub = GraphGrpc.newBlockingStub(channel);
        StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
            () -> stub.search(GraphRequest.newBuilder().setId(1).build()));
        assertEquals(Status.Code.RESOURCE_EXHAUSTED, e.getStatus().getCode());
        assertTrue(e.getStatus().getDescription().contains("shed at left"), e.getStatus().toString());
        assertEquals(2, stub.reserve(GraphRequest.newBuilder().setId(2).build()).getNodes(),
            "reserve does not pass through left");
        assertEquals(2, graph.dispatched("front"), "one search and one reserve admitted at front, "
            + "each handed to its workers once");
        assertTrue(graph.eventLoopsProbed() >= 1, "calls start on gRPC's event loops, which are probed");
      } finally {
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }

      List<Recorder> recorders;
      try (GraphClient client = new GraphClient(s, graph.ports(), wiring, s.clients(), 2)) {
        GraphLoadGenerator run = GraphLoadGenerator.openLoop(client,
            List.of(List.of(new Scenario.DemandStep(1.0, 0)), List.of(new Scenario.DemandStep(0, 0))),
            new double[] {1_000, 1_000}, 200_000_000L, s.windowNanos(), 12);
        recorders = run.done().get(60, TimeUnit.SECONDS);
        assertEquals(0, run.errors(), "errors: " + run.firstError());
      }
      Tally search = recorders.get(g.iface("search").index()).total();
      assertTrue(search.offered > 20, "offered " + search.offered);
      assertEquals(search.offered, search.dropped, "every search is shed, and counted as a reject");
      assertEquals(search.dropped, search.rejectsReceived);
      assertEquals(0, search.completed + search.expired);
      assertEquals(0, graph.computed("left", "search"), "left never computes: it sheds on arrival");
      assertEquals(0, graph.dispatched("left"), "left's gate runs where a call arrives: a rejected "
          + "call never waits in left's worker queue");
      assertTrue(graph.computed("right", "search") > 0, "the sibling still computes (wasted work)");
    }
  }
}
