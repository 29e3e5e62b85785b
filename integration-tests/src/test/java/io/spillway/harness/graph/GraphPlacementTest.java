package io.spillway.harness.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.spillway.harness.graph.proto.GraphGrpc;
import io.spillway.harness.graph.proto.GraphRequest;
import io.spillway.sim.CallGraph;
import io.spillway.sim.Scenario;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** {@link GraphPlacement}'s parsing and checks, and a graph split over two {@link ServiceGraph}s. */
class GraphPlacementTest {

  private static final String HOTEL_CORE1 = "search, geo, rate, geo-db, rate-cache";

  /** The hotel-reservation graph of scenarios/hotel-*.conf. */
  private static CallGraph hotel() {
    return Scenario.of(Map.of(
        "graph.services", "frontend:2, search, reservation, profile, geo, rate, user, rate-cache, geo-db, "
            + "reserve-cache, reserve-db",
        "graph.interfaces", "search, reserve",
        "graph.search", "frontend 25 -> search, reservation, profile; search 50 -> geo, rate; "
            + "reservation 30 -> reserve-cache; profile 40; geo 60 -> geo-db; rate 250 -> rate-cache; "
            + "reserve-cache 20; geo-db 30; rate-cache 20",
        "graph.reserve", "frontend 20 -> user, reservation; user 30; reservation 40 -> reserve-cache, "
            + "reserve-db; reserve-cache 20; reserve-db 150")).callGraph();
  }

  @Test
  void theSearchSubtreeGoesToCoreOneAndTheRestStays() {
    GraphPlacement p = GraphPlacement.parse(HOTEL_CORE1, hotel());
    assertTrue(p.split());
    assertEquals(List.of("search", "geo", "rate", "rate-cache", "geo-db"), p.core1(), "in the graph's order");
    assertEquals(List.of("frontend", "reservation", "profile", "user", "reserve-cache", "reserve-db"), p.core0());
  }

  @Test
  void withoutTheKeyEveryServiceIsInOneProcess() {
    for (String value : new String[] {null, "", "  "}) {
      GraphPlacement p = GraphPlacement.parse(value, hotel());
      assertFalse(p.split());
      assertEquals(hotel().services().size(), p.core0().size());
      assertTrue(p.core1().isEmpty());
    }
  }

  @Test
  void anUnknownServiceIsNamed() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> GraphPlacement.parse("search, geo, rate, geo-db, rate-cahce", hotel()));
    assertTrue(e.getMessage().contains("graph.core1") && e.getMessage().contains("'rate-cahce'"), e.getMessage());
  }

  @Test
  void aCoreOneServiceMustNotCallOneOnCoreZero() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> GraphPlacement.parse("search, geo, geo-db", hotel()));
    assertTrue(e.getMessage().contains("search calls rate in search"), e.getMessage());
    // frontend calls reservation, which stays on core 0: the front-end cannot move alone.
    e = assertThrows(IllegalArgumentException.class, () -> GraphPlacement.parse("frontend", hotel()));
    assertTrue(e.getMessage().contains("frontend calls"), e.getMessage());
    // Leaves are always allowed.
    assertEquals(List.of("reserve-db"), GraphPlacement.parse("reserve-db", hotel()).core1());
  }

  @Test
  void repeatedEmptyOrEveryServiceIsRejected() {
    assertThrows(IllegalArgumentException.class, () -> GraphPlacement.parse("geo-db, geo-db", hotel()));
    assertThrows(IllegalArgumentException.class, () -> GraphPlacement.parse("geo-db,, rate-cache", hotel()));
    String all = String.join(", ", GraphPlacement.single(hotel()).core0());
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> GraphPlacement.parse(all, hotel()));
    assertTrue(e.getMessage().contains("core 0"), e.getMessage());
  }

  @ParameterizedTest
  @ValueSource(strings = {"hotel-isolation", "hotel-surge-split"})
  void theShippedSplitScenariosLoadWithTheirPlacement(String name) throws Exception {
    Scenario scenario = Scenario.load(Path.of("..", "scenarios", name + ".conf"), Map.of());
    assertEquals(name, scenario.name());
    GraphPlacement p = GraphPlacement.parse(scenario.get(GraphPlacement.KEY), scenario.callGraph());
    assertEquals(GraphPlacement.parse(HOTEL_CORE1, hotel()).core1(), p.core1());
    Scenario one = Scenario.load(Path.of("..", "scenarios", name + ".conf"), Map.of(GraphPlacement.KEY, ""));
    assertFalse(GraphPlacement.parse(one.get(GraphPlacement.KEY), one.callGraph()).split(),
        "--set graph.core1= puts every service back in one process");
  }

  /**
   * hotel-isolation.conf runs with the SLOs measured and the values tuned in hotel-surge-split.conf,
   * the surge in the same placement (rajomon-nsdi25 §4 tunes once per application): a re-tune of one
   * must reach the other.
   */
  @Test
  void theIsolationScenarioKeepsTheSplitSurgesSlosAndTunedValues() throws Exception {
    Scenario surge = Scenario.load(Path.of("..", "scenarios", "hotel-surge-split.conf"), Map.of());
    Scenario isolation = Scenario.load(Path.of("..", "scenarios", "hotel-isolation.conf"), Map.of());
    for (String key : List.of("slo_us", "rajomon.threshold_us", "dagor.q_us", "breakwater.target_us",
        "breakwater.client_timeout_us", "graph.services")) {
      assertEquals(surge.get(key), isolation.get(key), key);
    }
    for (String iface : List.of("search", "reserve")) {
      CallGraph.Interface a = surge.callGraph().iface(iface);
      CallGraph.Interface b = isolation.callGraph().iface(iface);
      assertEquals(a.sloNanos(), b.sloNanos(), iface);
      assertEquals(a.nodes().stream().map(n -> n.service().name() + " " + n.compute()).toList(),
          b.nodes().stream().map(n -> n.service().name() + " " + n.compute()).toList(), iface);
    }
  }

  @Test
  void portsParseAndFormat() {
    Map<String, Integer> ports = GraphServer.parsePorts(List.of("geo=4001", " ", "rate-cache=4002"));
    assertEquals(List.of("geo", "rate-cache"), List.copyOf(ports.keySet()));
    assertEquals("geo=4001,rate-cache=4002", GraphServer.formatPorts(ports, ","));
    assertThrows(IllegalArgumentException.class, () -> GraphServer.parsePorts(List.of("geo:4001")));
    assertThrows(IllegalArgumentException.class, () -> GraphServer.parsePorts(List.of("geo=x")));
  }

  /** front fans out to left and right for search; reserve goes front → right only. */
  private static Scenario small() {
    return Scenario.of(Map.of(
        "clients", "20",
        "service", "const",
        "slo_us", "1000000",
        "schemes", "none",
        "graph.services", "front:2, left, right",
        "graph.interfaces", "search, reserve",
        "graph.search", "front 20 -> left, right; left 20; right 20",
        "graph.reserve", "front 10 -> right; right 10"));
  }

  @Test
  void aGraphSplitOverTwoServiceGraphsAnswersThroughItsFrontEnd() throws Exception {
    Scenario s = small();
    for (String scheme : List.of("none", "rajomon")) {
      GraphWiring wiring = GraphWirings.create(scheme, s);
      GraphPlacement p = GraphPlacement.parse("left, right", s.callGraph());
      try (ServiceGraph core1 = ServiceGraph.start(s, wiring, p.core1(), Map.of());
           ServiceGraph core0 = ServiceGraph.start(s, wiring, p.core0(), core1.ports())) {
        assertEquals(List.of("left", "right"), List.copyOf(core1.ports().keySet()));
        assertEquals(List.of("front"), List.copyOf(core0.ports().keySet()));
        CallGraph g = core0.graph();
        ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1",
            core0.frontEndPort(g.iface("search"))).usePlaintext().build();
        try {
          GraphGrpc.GraphBlockingStub stub = GraphGrpc.newBlockingStub(channel).withDeadlineAfter(30, TimeUnit.SECONDS);
          assertEquals(3, stub.search(GraphRequest.newBuilder().setId(7).build()).getNodes(), scheme);
          assertEquals(2, stub.reserve(GraphRequest.newBuilder().setId(8).build()).getNodes(), scheme);
        } finally {
          channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
        assertEquals(1, core0.computed("front", "search"));
        assertEquals(1, core1.computed("left", "search"));
        assertEquals(1, core1.computed("right", "reserve"));
        assertTrue(core0.stats().startsWith("front.search=1/0") && !core0.stats().contains("left"), core0.stats());
        assertTrue(core1.stats().contains("left.search=1/0") && !core1.stats().contains("front"), core1.stats());
      }
    }
  }

  @Test
  void aServiceGraphWithoutItsCalleesPortsRefusesToStart() {
    Scenario s = small();
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> ServiceGraph.start(s, GraphWirings.create("none", s), List.of("front"), Map.of("left", 1)));
    assertTrue(e.getMessage().contains("front calls right"), e.getMessage());
  }
}
