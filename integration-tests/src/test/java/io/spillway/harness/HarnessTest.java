package io.spillway.harness;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.spillway.api.NoControl;
import io.spillway.api.OverloadScheme;
import io.spillway.api.Ticker;
import io.spillway.asqm.CarrierDispatcher;
import io.spillway.asqm.ContendedLockFinder;
import io.spillway.sim.Recorder;
import io.spillway.sim.Scenario;
import io.spillway.sim.SchemeRegistry;
import io.spillway.sim.Tally;
import io.spillway.transport.SpillwayClient;
import io.spillway.transport.SpillwayServer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The harness's moving parts on real sockets. These check accounting, not speed: the numbers a
 * harness run reports are in docs/results, measured on a quiet machine.
 */
class HarnessTest {

  private static Scenario scenario(String schemes) {
    return Scenario.of(Map.of("clients", "20", "cores", "1", "service", "exp", "service_mean_us", "20",
        "rtt_us", "50", "slo_us", "5000", "schemes", schemes, "window_ms", "20"));
  }

  @Test
  void everyOfferedRequestEndsExactlyOnceUnderOverload() throws Exception {
    for (String name : List.of("none", "breakwater")) {
      Scenario s = scenario(name);
      OverloadScheme scheme = SchemeRegistry.create(name, s);
      try (CarrierDispatcher dispatcher = CarrierDispatcher.create(1, Ticker.system());
           SpillwayServer server = SpillwayServer.builder().scheme(scheme).parallelism(1)
               .dispatcher(dispatcher, dispatcher.queueDelay()).handler(HarnessServer::spin).build().start();
           SpillwayClient client = SpillwayClient.builder().scheme(scheme).port(server.port())
               .connections(2).sessions(s.clients()).sloNanos(s.sloNanos()).build().start()) {
        Recorder recorder = new Recorder(s.windowNanos());
        // Half of what one 20 µs carrier can serve (50k rps) for 100 ms, then well past it. The
        // first part lets a cold server's first requests complete: with no control, a start-up
        // stall longer than the SLO under 2× demand leaves a backlog that never drains, so every
        // later request expires and the run would show nothing served for reasons of warm-up.
        LoadGenerator.openLoop(client, s, List.of(new Scenario.DemandStep(0.5, 0),
                new Scenario.DemandStep(2.0, 100_000_000L)), 60_000, 400_000_000L, recorder, 7)
            .get(60, TimeUnit.SECONDS);
        Tally t = recorder.total();
        assertTrue(t.offered > 1_000, name + ": offered " + t.offered);
        assertTrue(t.completed > 0, name + ": nothing completed (offered " + t.offered
            + ", rejected " + t.dropped + ", expired " + t.expired + ", answered " + t.received + ")");
        assertEquals(t.offered, t.completed + t.dropped + t.expired,
            name + ": every request ends once (served " + t.completed + ", rejected " + t.dropped
                + ", expired " + t.expired + ")");
        assertEquals(t.completed + t.dropped, t.received);
      }
    }
  }

  /** windows.csv accounts for every completion of a run, window by window, with the generator's loop gaps. */
  @Test
  void theWindowLogHasOneLinePerWindowAndEveryCompletion(@TempDir Path dir) throws Exception {
    Scenario s = scenario("breakwater");
    OverloadScheme scheme = SchemeRegistry.create("breakwater", s);
    try (SpillwayServer server = SpillwayServer.builder().scheme(scheme).parallelism(1)
             .handler(HarnessServer::spin).build().start();
         SpillwayClient client = SpillwayClient.builder().scheme(scheme).port(server.port())
             .sessions(s.clients()).sloNanos(s.sloNanos()).build().start()) {
      Recorder recorder = new Recorder(s.windowNanos());
      long run = 200_000_000L;
      long[] gaps = WindowLog.gapsFor(run, s.windowNanos());
      LoadGenerator.openLoop(client, s, List.of(new Scenario.DemandStep(0.5, 0)), 20_000, run, recorder, 5, gaps)
          .get(60, TimeUnit.SECONDS);
      WindowLog log = new WindowLog(dir);
      log.append("breakwater", recorder, 0, gaps);
      List<String> lines = Files.readAllLines(dir.resolve(WindowLog.FILE));
      assertEquals("scheme,demand,window,start_ms,completed,p99_us,max_us,generator_gap_us", lines.getFirst());
      assertEquals(recorder.windowCount(), lines.size() - 1);
      long completed = 0;
      for (String line : lines.subList(1, lines.size())) {
        String[] f = line.split(",");
        assertEquals(8, f.length, line);
        assertEquals("breakwater", f[0]);
        assertEquals("0.50", f[1]);
        completed += Long.parseLong(f[4]);
      }
      assertEquals(recorder.total().completed, completed);
      assertTrue(java.util.Arrays.stream(gaps).anyMatch(g -> g > 0), "the loop's turns were timed");
    }
  }

  /** The servers' ahead-of-time cache: written when training, read once it exists, absent otherwise. */
  @Test
  void serversStartWithTheAheadOfTimeCacheOnceItExists(@TempDir Path dir) throws Exception {
    Path cache = dir.resolve("server.aot");
    try {
      System.clearProperty(AheadOfTimeCache.CACHE);
      assertEquals(List.of(), AheadOfTimeCache.serverOptions());
      System.setProperty(AheadOfTimeCache.CACHE, cache.toString());
      assertEquals(List.of(), AheadOfTimeCache.serverOptions(), "no cache yet");
      System.setProperty(AheadOfTimeCache.TRAIN, "true");
      assertEquals(List.of("-XX:AOTCacheOutput=" + cache), AheadOfTimeCache.serverOptions());
      System.clearProperty(AheadOfTimeCache.TRAIN);
      Files.writeString(cache, "trained");
      assertEquals(List.of("-XX:AOTCache=" + cache), AheadOfTimeCache.serverOptions());
    } finally {
      System.clearProperty(AheadOfTimeCache.CACHE);
      System.clearProperty(AheadOfTimeCache.TRAIN);
    }
  }

  /** The warm-up's slices run at the lowest level measured, kept below capacity. */
  @Test
  void aScenarioWithKeysOnlyTheSimulatorModelsIsRefusedWithTheirNames() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> HarnessMain.run(new String[] {Path.of("..", "scenarios", "blocking-handlers.conf").toString()}));
    assertTrue(e.getMessage().contains("plain_share") && e.getMessage().contains("block_us"), e.getMessage());
  }

  @Test
  void theWarmUpsSlicesRunAtTheLowestLevelMeasuredAndBelowCapacity(@TempDir Path dir) {
    Scenario spike = scenario("breakwater").with(Map.of("schedule", "0.5@0, 1.4@200, 0.5@400", "duration_ms", "600"));
    Scenario overloadOnly = scenario("breakwater").with(Map.of("demand", "2.0, 1.5"));
    Scenario steady = scenario("breakwater").with(Map.of("demand", "1.5, 0.7, 2.0"));
    assertEquals(0.5, new HarnessMain.Harness(spike, dir, Map.of(), 1, dir).warmLevel());
    assertEquals(HarnessMain.WARM_LEVEL_CAP, new HarnessMain.Harness(overloadOnly, dir, Map.of(), 1, dir).warmLevel());
    assertEquals(0.7, new HarnessMain.Harness(steady, dir, Map.of(), 1, dir).warmLevel());
  }

  @Test
  void closedLoopKeepsItsCallsOutstanding() throws Exception {
    Scenario s = scenario("none");
    OverloadScheme scheme = SchemeRegistry.create("none", s);
    try (SpillwayServer server = SpillwayServer.builder().scheme(scheme).parallelism(1)
             .handler(HarnessServer::spin).build().start();
         // The client's queue expires calls at its SLO: a cold JVM's first calls took longer than
         // the scenario's 5 ms to leave (seen: 7 of the first 8 when this test ran alone), so the
         // client gets one no stall reaches, and nothing but a lost call can fail the test.
         SpillwayClient client = SpillwayClient.builder().scheme(scheme).port(server.port())
             .sessions(4).sloNanos(TimeUnit.MINUTES.toNanos(1)).build().start()) {
      Recorder recorder = new Recorder(10_000_000L);
      LoadGenerator.closedLoop(client, s, 8, 200_000_000L, recorder, 3).get(60, TimeUnit.SECONDS);
      Tally t = recorder.total();
      assertTrue(t.completed > 100, "completed " + t.completed);
      assertEquals(t.offered, t.completed, "a closed loop with no control loses nothing: expired "
          + t.expired + ", dropped " + t.dropped);
    }
  }

  @Test
  void theServerProcessStartsAnnouncesItsPortAndStopsWithItsParent(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("s.conf");
    // An SLO of a minute: Breakwater's client queue expires a call at half the SLO, and the first
    // call to a new process can take longer than the default SLO's (under a millisecond).
    Files.writeString(file, "clients = 2\ncores = 1\nschemes = breakwater\nslo_us = 60000000\n");
    HarnessMain.ServerProcess p = HarnessMain.ServerProcess.start(file, Map.of(), "breakwater", 1, false, dir);
    assertTrue(p.port() > 0);
    Scenario s = Scenario.load(file, Map.of());
    OverloadScheme scheme = SchemeRegistry.create("breakwater", s);
    try (SpillwayClient client = SpillwayClient.builder().scheme(scheme).port(p.port()).sloNanos(s.sloNanos())
        .build().start()) {
      byte[] tenMicros = java.nio.ByteBuffer.allocate(8).putLong(10_000).array();
      client.session(0).call(tenMicros).get(30, TimeUnit.SECONDS);
    }
    p.close();
    assertTrue(Files.readString(dir.resolve("server-breakwater.log")).contains("scheme breakwater"));
  }

  /**
   * The lock profile ({@code --profile-locks}) of the two-path service finds its two mutexes: the
   * server runs its requests on virtual threads, which JFR does not record waiting, so their waits
   * come from thread dumps of the server process, sampled until 1 s after the load starts.
   */
  @Test
  void aLockProfileOfTheTwoPathServerRanksItsPathMutexesFirst(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("two-path.conf");
    Files.writeString(file, "clients = 8\ncores = 4\nservice_mean_us = 200\npaths = 0.5, 0.5\nschemes = none\n");
    Scenario s = Scenario.load(file, Map.of());
    Path recording = dir.resolve("locks.jfr");
    List<ContendedLockFinder.LockContention> sampled;
    try (HarnessMain.ServerProcess p = HarnessMain.ServerProcess.start(file, Map.of(), "none", 4, false, dir);
         SpillwayClient client = SpillwayClient.builder().scheme(NoControl.INSTANCE).port(p.port())
             .sessions(s.clients()).sloNanos(s.sloNanos()).build().start()) {
      p.command("jfr-start");
      // 16 calls in flight on 4 carriers and 2 mutexes: requests queue behind the mutexes.
      java.util.concurrent.CompletableFuture<Recorder> load =
          LoadGenerator.closedLoop(client, s, 16, 3_000_000_000L, new Recorder(10_000_000L), 5);
      sampled = ContendedLockFinder.sample(p.pid(), java.time.Duration.ofSeconds(2),
          ContendedLockFinder.DEFAULT_SAMPLE_INTERVAL, true);
      load.get(60, TimeUnit.SECONDS);
      assertEquals(recording.toString(), p.command("jfr-stop " + recording));
      assertThrows(IOException.class, () -> p.command("jfr-stop " + recording), "no recording is running");
    }
    List<ContendedLockFinder.LockContention> ranked =
        ContendedLockFinder.merge(ContendedLockFinder.analyze(recording), sampled);
    ContendedLockFinder.print(ranked, 5, System.out);
    // A path mutex leads the ranking, caught waited on in the thread dumps. Each is found when a
    // dump catches a request waiting on it, so in a short window one of the two can go uncaught
    // and the carriers' own pool lock (or a path mutex's few recorded waits) rank next.
    String path = MutexPathService.class.getName() + ".handle";
    assertTrue(!ranked.isEmpty(), "no lock found");
    ContendedLockFinder.LockContention top = ranked.get(0);
    assertTrue(top.site().startsWith(path), "ranked: " + ranked);
    assertTrue(top.lock().contains("ReentrantLock"), "ranked: " + ranked);
    assertTrue(top.sampled(), "from the dumps: " + ranked);
  }
}
