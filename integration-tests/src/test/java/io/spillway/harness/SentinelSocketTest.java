package io.spillway.harness;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.alibaba.csp.sentinel.Constants;
import com.alibaba.csp.sentinel.slots.system.SystemRuleManager;
import io.spillway.api.OverloadScheme;
import io.spillway.peers.SentinelSystemConfig;
import io.spillway.peers.SentinelSystemProtection;
import io.spillway.sim.Recorder;
import io.spillway.sim.Scenario;
import io.spillway.sim.SchemeRegistry;
import io.spillway.sim.Tally;
import io.spillway.transport.SpillwayClient;
import io.spillway.transport.SpillwayServer;
import io.spillway.transport.Threading;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code sentinel} in the real-socket harness: named like any scheme, served in a process of its
 * own, admitting light load, refusing once its system rule trips, and ending every request once.
 * These check behaviour, not speed; Sentinel's clock is its own, so waits are bounded conditions.
 */
class SentinelSocketTest {

  /** A request for 10 µs of service. */
  private static final byte[] TEN_MICROS = java.nio.ByteBuffer.allocate(8).putLong(10_000).array();

  private static Scenario scenario(Map<String, String> extra) {
    Map<String, String> keys = new HashMap<>(Map.of("clients", "20", "cores", "1", "service", "exp",
        "service_mean_us", "20", "rtt_us", "50", "slo_us", "5000", "schemes", "sentinel", "window_ms", "20"));
    keys.putAll(extra);
    return Scenario.of(keys);
  }

  @Test
  void theHarnessNamesSentinelWithItsDocumentedDefaultsAndTheSimulatorRefusesIt() {
    Scenario s = scenario(Map.of());
    OverloadScheme scheme = SocketSchemes.create("sentinel", s);
    assertEquals("sentinel", scheme.name());
    assertEquals(SentinelSystemConfig.defaults(), ((SentinelSystemProtection) scheme).config());
    assertEquals(new SentinelSystemConfig(3.0, 0.9), ((SentinelSystemProtection) SocketSchemes.create("sentinel",
        scenario(Map.of("sentinel.load", "3", "sentinel.cpu_usage", "0.9")))).config());
    IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
        () -> SocketSchemes.create("sentinel", scenario(Map.of("sentinel.cpu_usage", "2"))));
    assertTrue(bad.getMessage().startsWith("sentinel parameters"), bad.getMessage());
    IllegalArgumentException unknown = assertThrows(IllegalArgumentException.class,
        () -> SocketSchemes.create("sentinal", s));
    assertTrue(unknown.getMessage().contains("breakwater") && unknown.getMessage().contains("sentinel"),
        unknown.getMessage());
    IllegalArgumentException simulated = assertThrows(IllegalArgumentException.class,
        () -> SchemeRegistry.create("sentinel", s));
    assertTrue(simulated.getMessage().contains("real sockets only"), simulated.getMessage());
  }

  /**
   * Light load: one call outstanding at a time, so each arrives with nothing in flight, which the
   * BBR check never refuses whatever the machine's load. Then the CPU-usage trigger at 0 (any
   * usage): every request of a 2× flood is refused fast. In both, every request ends once and
   * Sentinel's in-flight count returns to where it was.
   */
  @Test
  void admitsLightLoadRefusesOnceTheRuleTripsAndEndsEveryRequestOnce() throws Exception {
    int before = Constants.ENTRY_NODE.curThreadNum();
    // An SLO of a minute: the client queue expires a call at the SLO, and a stall of this busy
    // machine must not fail a test of what the server refuses.
    Scenario light = scenario(Map.of("slo_us", "60000000"));
    LeakCheckingScheme documented = new LeakCheckingScheme(SocketSchemes.create("sentinel", light));
    try (SpillwayServer server = server(documented);
         SpillwayClient client = client(documented, light, server.port())) {
      // Sentinel's first entry loads its slots and rules (a few hundred ms in a cold JVM): a
      // closed loop that starts with it may see its run end before that call does.
      client.session(0).call(TEN_MICROS).get(30, TimeUnit.SECONDS);
      Recorder recorder = new Recorder(light.windowNanos());
      LoadGenerator.closedLoop(client, light, 1, 300_000_000L, recorder, 11).get(60, TimeUnit.SECONDS);
      Tally t = recorder.total();
      assertTrue(t.completed > 10, "completed " + t.completed);
      assertEquals(t.offered, t.completed, "light load is admitted in full: dropped " + t.dropped
          + ", expired " + t.expired);
      assertEquals(t.completed + 1, documented.checker().admitted());
    }
    documented.checker().assertNoLeaks();
    assertEquals(before, Constants.ENTRY_NODE.curThreadNum(), "every entry exited");

    Scenario tripped = scenario(Map.of("sentinel.cpu_usage", "0"));
    LeakCheckingScheme anyCpu = new LeakCheckingScheme(SocketSchemes.create("sentinel", tripped));
    try (SpillwayServer server = server(anyCpu);
         SpillwayClient client = client(anyCpu, tripped, server.port())) {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (!(SystemRuleManager.getCurrentCpuUsage() > 0) && System.nanoTime() - deadline < 0) {
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10)); // Sentinel samples once a second
      }
      assertTrue(SystemRuleManager.getCurrentCpuUsage() > 0, "Sentinel read no CPU usage in 10 s");
      Recorder recorder = new Recorder(tripped.windowNanos());
      LoadGenerator.openLoop(client, tripped, List.of(new Scenario.DemandStep(2.0, 0)), 50_000,
          300_000_000L, recorder, 13).get(60, TimeUnit.SECONDS);
      Tally t = recorder.total();
      assertTrue(t.offered > 1_000, "offered " + t.offered);
      assertEquals(t.offered, t.completed + t.dropped + t.expired, "every request ends once");
      assertEquals(0, anyCpu.checker().admitted(), "the tripped rule refuses every inbound request");
      assertEquals(t.received, t.dropped, "every request that reached the server was refused");
      assertTrue(anyCpu.checker().issued() >= t.dropped, "a reject the client counts came from the gate");
    }
    anyCpu.checker().assertNoLeaks();
    assertEquals(before, Constants.ENTRY_NODE.curThreadNum());
  }

  private static SpillwayServer server(OverloadScheme scheme) throws InterruptedException {
    return SpillwayServer.builder().threading(Threading.LOOP_QUEUE).scheme(scheme).parallelism(1)
        .handler(HarnessServer::spin).build().start();
  }

  private static SpillwayClient client(OverloadScheme scheme, Scenario s, int port) throws InterruptedException {
    return SpillwayClient.builder().scheme(scheme).port(port).connections(2).sessions(s.clients())
        .sloNanos(s.sloNanos()).build().start();
  }

  @Test
  void aServerProcessRunsSentinelAndKeepsItsLogsInTheRunDirectory(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("s.conf");
    Files.writeString(file, "clients = 2\ncores = 1\nschemes = sentinel\nslo_us = 60000000\n");
    Scenario s = Scenario.load(file, Map.of());
    try (HarnessMain.ServerProcess p = HarnessMain.ServerProcess.start(file, Map.of(), "sentinel", 1, false, dir);
         SpillwayClient client = SpillwayClient.builder().scheme(SocketSchemes.create("sentinel", s))
             .port(p.port()).sloNanos(s.sloNanos()).build().start()) {
      client.session(0).call(TEN_MICROS).get(30, TimeUnit.SECONDS);
    }
    String log = Files.readString(dir.resolve("server-sentinel.log"));
    assertTrue(log.contains("scheme sentinel") && log.contains("sentinel gate open"), log);
    assertTrue(log.contains("sentinel gate closed"), "the gate reports its decisions at close: " + log);
    try (var files = Files.list(dir.resolve("sentinel-logs"))) {
      assertTrue(files.findAny().isPresent(), "Sentinel's own logs are kept beside the run's");
    }
  }
}
