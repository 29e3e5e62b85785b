package io.spillway.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Rajomon's clients after a stall of every service, in the hotel graph of
 * {@code scenarios/graph-hotel.conf} with the isolation schedule of docs/results/rajomon.md:
 * reserve at 0.8× throughout, search surging in at 2× at 200 ms, every core stopped for 20 ms at
 * 500 ms. The stall raises every price; a session whose wallet cannot cover reserve's new price
 * sends no reserve request, so only a response of another interface can tell it the price fell
 * ({@link io.spillway.api.InterfacePrices}). Deterministic for the seed.
 */
class StalePriceSimulationTest {

  private static final long MS = 1_000_000;
  private static final long END = 2_000 * MS;
  /** Each interface's capacity alone, as {@code ./spillway sim graph-hotel} measures it. */
  private static final double SEARCH_RPS = 7_686;
  private static final double RESERVE_RPS = 6_556;

  private static Scenario hotel(boolean allPrices, boolean stall) {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("clients", "1000");
    m.put("service", "exp");
    m.put("rtt_us", "50");
    m.put("cost_rx_us", "5");
    m.put("cost_tx_us", "3");
    m.put("slo_us", "12600");
    m.put("duration_ms", "2000");
    m.put("window_ms", "20");
    m.put("seed", "1");
    m.put("graph.services", "frontend:4, search:2, reservation:2, profile:2, geo:2, rate:4, "
        + "user:2, rate-cache:1, geo-db:1, reserve-cache:2, reserve-db:2");
    m.put("graph.interfaces", "search, reserve");
    m.put("graph.search", "frontend 50 -> search, reservation, profile; search 100 -> geo, rate; "
        + "reservation 60 -> reserve-cache; profile 80; geo 120 -> geo-db; rate 500 -> rate-cache; "
        + "reserve-cache 30; geo-db 60; rate-cache 40");
    m.put("graph.reserve", "frontend 40 -> user, reservation; user 60; reservation 80 -> "
        + "reserve-cache, reserve-db; reserve-cache 30; reserve-db 300");
    m.put("graph.search.slo_us", "12600");
    m.put("graph.reserve.slo_us", "15000");
    m.put("rajomon.all_prices", Boolean.toString(allPrices));
    if (stall) {
      m.put("graph.stall_ms", "500, 20");
    }
    return Scenario.of(m);
  }

  /** Reserve's tally from 500 ms after the stall to the end. */
  private static GraphRecorder.InterfaceTally reserveAfterStall(Scenario s) {
    CallGraph g = s.callGraph();
    List<List<Scenario.DemandStep>> steps = List.of(
        List.of(new Scenario.DemandStep(0, 0), new Scenario.DemandStep(2, 200 * MS)),
        List.of(new Scenario.DemandStep(0.8, 0)));
    GraphRecorder recorder = new GraphRecorder(s.windowNanos(), 2, g.services().size());
    new GraphSimulation(s, g, GraphScheme.resolve("rajomon", s),
        GraphSimulation.Load.open(steps, new double[] {SEARCH_RPS, RESERVE_RPS}), END, recorder,
        s.seed()).run();
    return recorder.sum(1_000 * MS, END).interfaces[g.iface("reserve").index()];
  }

  private static double refusedAtClients(GraphRecorder.InterfaceTally t) {
    return (double) t.shedClient / t.offered;
  }

  @Test
  void sessionsThatHearEveryInterfacesPriceStopRefusingReserveSoonAfterAStall() {
    double onlyOwn = refusedAtClients(reserveAfterStall(hotel(false, true)));
    double all = refusedAtClients(reserveAfterStall(hotel(true, true)));
    assertTrue(onlyOwn > 0.04, "hearing only reserve's own price, sessions that heard the "
        + "stall's price keep refusing reserve: " + onlyOwn);
    assertTrue(all < 0.01, "with every price, a search response brings reserve's back: " + all);
  }

  @Test
  void withoutAStallNeitherRefusesMuchReserve() {
    assertTrue(refusedAtClients(reserveAfterStall(hotel(false, false))) < 0.02);
    assertTrue(refusedAtClients(reserveAfterStall(hotel(true, false))) < 0.01);
  }

  @Test
  void capacityIsMeasuredWithoutTheStall() {
    Scenario stalled = hotel(true, true);
    assertEquals(GraphExperiment.measureCapacity(hotel(true, false), hotel(true, false).callGraph(), 0),
        GraphExperiment.measureCapacity(stalled, stalled.callGraph(), 0),
        "the stall at 500 ms falls inside the 1.05 s capacity run, and is left out of it");
  }

  /**
   * Both interfaces surging from 0.8× to 2× at 200 ms, no stall: the share of what was offered
   * that the front-end rejected, from 500 ms to the end, with listed prices lowering known ones
   * after {@code lowersAfter} price intervals.
   */
  private static double frontEndRejectsInASurgeOfBoth(long lowersAfter) {
    Map<String, String> m = new LinkedHashMap<>(hotel(true, false).effective());
    m.put("rajomon.list_lowers_after", Long.toString(lowersAfter));
    Scenario s = Scenario.of(m);
    CallGraph g = s.callGraph();
    List<Scenario.DemandStep> surge = List.of(new Scenario.DemandStep(0.8, 0), new Scenario.DemandStep(2, 200 * MS));
    GraphRecorder recorder = new GraphRecorder(s.windowNanos(), 2, g.services().size());
    new GraphSimulation(s, g, GraphScheme.resolve("rajomon", s),
        GraphSimulation.Load.open(List.of(surge, surge), new double[] {SEARCH_RPS, RESERVE_RPS}), END, recorder,
        s.seed()).run();
    GraphRecorder.Window w = recorder.sum(500 * MS, END);
    long offered = 0;
    long front = 0;
    for (GraphRecorder.InterfaceTally t : w.interfaces) {
      offered += t.offered;
      front += t.shedFront;
    }
    return (double) front / offered;
  }

  @Test
  void listedPricesThatLowerOnlyStaleOnesSpareTheFrontEndsRejects() {
    // Taken at once, every listed price lowers sessions' prices whenever another interface's
    // response passes by; they then pay too little more often, and the front-end turns them away
    // (seed 1: 14.1 % of what was offered at once, 9.0 % after 100 intervals).
    double atOnce = frontEndRejectsInASurgeOfBoth(0);
    double stale = frontEndRejectsInASurgeOfBoth(100);
    assertTrue(stale < 0.7 * atOnce, "front-end rejects: " + stale + " lowering after 100 intervals, "
        + atOnce + " at once");
  }

  @Test
  void theStallKeyIsParsedAndChecked() {
    CallGraph.Stall stall = hotel(true, true).callGraph().stall();
    assertEquals(500 * MS, stall.startNanos());
    assertEquals(520 * MS, stall.endNanos());
    for (String bad : List.of("500", "500, 0", "-1, 20", "a, 20", "1, 2, 3")) {
      Map<String, String> m = new LinkedHashMap<>(hotel(true, false).effective());
      m.put("graph.stall_ms", bad);
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> Scenario.of(m), bad);
      assertTrue(e.getMessage().contains("'graph.stall_ms'"), e.getMessage());
    }
  }
}
