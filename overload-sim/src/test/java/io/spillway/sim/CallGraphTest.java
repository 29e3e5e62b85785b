package io.spillway.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class CallGraphTest {

  private static Map<String, String> hotel() {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("graph.services", "frontend:2, search, geo, rate, profile, reservation, user");
    m.put("graph.interfaces", "search, reserve");
    m.put("graph.search", "frontend 20 -> search; search 30 -> geo, rate, user; geo 40; "
        + "rate 40 -> profile; profile 30; user 5");
    m.put("graph.reserve", "frontend 10 -> reservation; reservation 20 -> user; user 10");
    m.put("graph.reserve.slo_us", "1500");
    m.put("graph.search.schedule", "0@0, 2@500");
    return m;
  }

  @Test
  void parsesServicesInterfacesAndTrees() {
    CallGraph g = Scenario.of(hotel()).callGraph();
    assertEquals(7, g.services().size());
    assertEquals(2, g.service("frontend").workers());
    assertEquals(1, g.service("geo").workers());
    CallGraph.Interface search = g.iface("search");
    assertEquals(4, search.depth());
    assertEquals(3, search.width());
    assertEquals(6, search.nodes().size());
    assertEquals("frontend", search.root().service().name());
    assertEquals(20_000, search.root().compute().meanNanos());
    assertEquals(List.of("geo", "rate", "user"), search.root().callees().getFirst().callees()
        .stream().map(n -> n.service().name()).toList());
    assertEquals(200_000, search.sloNanos(), "default: the scenario's slo_us");
    assertEquals(2, search.schedule().size());
    assertEquals(500_000_000, search.schedule().get(1).startNanos());
    CallGraph.Interface reserve = g.iface("reserve");
    assertEquals(1_500_000, reserve.sloNanos());
    assertTrue(reserve.schedule().isEmpty());
    assertEquals(3, reserve.depth());
  }

  @Test
  void aScenarioWithoutGraphKeysHasNoGraph() {
    assertNull(Scenario.of(Map.of()).callGraph());
  }

  @Test
  void graphKeysAppearInTheEffectiveScenario() {
    Map<String, String> effective = Scenario.of(hotel()).effective();
    assertEquals("search, reserve", effective.get("graph.interfaces"));
    assertEquals("1500", effective.get("graph.reserve.slo_us"));
  }

  @Test
  void rejectsMalformedGraphsWithTheKeyInTheMessage() {
    assertInvalid("graph.search", m -> m.put("graph.search", "frontend 20 -> nowhere"));
    assertInvalid("graph.search", m -> m.put("graph.search", "frontend 20 -> search; search 0"));
    assertInvalid("graph.search", m -> m.put("graph.search",
        "frontend 20 -> search; search 10 -> frontend"));
    assertInvalid("graph.search", m -> m.put("graph.search",
        "frontend 20 -> search; search 10 -> geo; rate 5 -> geo; geo 3"));
    assertInvalid("graph.search", m -> m.put("graph.search", "frontend 20 -> search; search 5; geo 1"));
    assertInvalid("graph.search", m -> m.put("graph.search", "front 20"));
    assertInvalid("graph.services", m -> m.put("graph.services", "a:0"));
    assertInvalid("graph.interfaces", m -> m.put("graph.interfaces", "search, search"));
    assertInvalid("graph.bogus", m -> m.put("graph.bogus", "1"));
    assertInvalid("graph.search.slo", m -> m.put("graph.search.slo", "1"));
    assertInvalid("graph.reserve", m -> m.remove("graph.reserve"));
    assertInvalid("graph.search.schedule", m -> m.put("graph.search.schedule", "1@5"));
  }

  private static void assertInvalid(String key, java.util.function.Consumer<Map<String, String>> edit) {
    Map<String, String> m = hotel();
    edit.accept(m);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> Scenario.of(m));
    assertTrue(e.getMessage().contains("'" + key + "'"), e.getMessage());
  }
}
