package io.spillway.harness;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.util.ResourceLeakDetector;
import io.spillway.api.NoControl;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.Status;
import io.spillway.credit.Breakwater;
import io.spillway.credit.BreakwaterConfig;
import io.spillway.transport.OverloadRejectedException;
import io.spillway.transport.SpillwayClient;
import io.spillway.transport.SpillwayServer;
import io.spillway.transport.internal.Frame;
import io.spillway.transport.testing.NettyLeaks;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Faults on real sockets: a client process killed with SIGKILL mid-flight, the server process
 * killed and restarted under load, a connection cut mid-frame, the server process stopped with
 * SIGSTOP for a second, ten thousand connections on the native transport, a client that never
 * reads, and clients that send half a frame and stall. For each: every
 * admitted request ends exactly once (a {@link io.spillway.api.testing.LeakCheckingServerGate}),
 * the credits issued return to 0 once the clients are gone, Netty's leak detector (PARANOID, set in
 * this module's surefire configuration) reports nothing, and the server's heap after a full
 * collection stays bounded. Each test prints a {@code FAULT-ROW} line, the row of
 * docs/results/reliability.md.
 *
 * <p>Runs in its own surefire execution ({@code socket-faults}). {@code -Dspillway.faults.rounds=N}
 * repeats each process fault N times (default 1).
 */
class SocketFaultTest {

  private static final long SLO_NANOS = 10_000_000;
  private static final int ROUNDS = Integer.getInteger("spillway.faults.rounds", 1);

  static {
    NettyLeaks.install(); // before Netty makes its first buffer
  }

  @BeforeAll
  static void leakDetectorIsParanoidAndWorks() {
    assertEquals(ResourceLeakDetector.Level.PARANOID, NettyLeaks.level(),
        "run with -Dio.netty.leakDetection.level=paranoid (the socket-faults execution sets it)");
    assertTrue(NettyLeaks.detectsADeliberateLeak(), "the detector must see a buffer dropped unreleased");
  }

  @AfterAll
  static void nothingLeakedAnywhere() {
    NettyLeaks.collect();
    assertEquals(List.of(), NettyLeaks.reports());
  }

  private static LeakCheckingScheme scheme() {
    return new LeakCheckingScheme(Breakwater.of(BreakwaterConfig.forSlo(SLO_NANOS, 50_000)));
  }

  private static SpillwayServer server(LeakCheckingScheme scheme) throws InterruptedException {
    return SpillwayServer.builder().scheme(scheme).parallelism(1).handler(HarnessServer::spin)
        .build().start();
  }

  private static byte[] payload(long serviceNanos) {
    return ByteBuffer.allocate(8).putLong(serviceNanos).array();
  }

  private static long heapAfterGc() {
    System.gc();
    return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
  }

  private static void await(String what, long seconds, BooleanSupplier condition) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - deadline > 0) {
        throw new AssertionError("not within " + seconds + " s: " + what);
      }
      LockSupport.parkNanos(5_000_000); // the gate has no completion signal to wait on
    }
  }

  /** Once the clients are gone: nothing outstanding, no session, no credit, no leak. */
  private static void assertClean(LeakCheckingScheme scheme) {
    await("every permit completed, every session gone, every credit back: " + scheme.ledger(), 20,
        () -> scheme.checker().outstanding() == 0 && scheme.sessions() == 0
            && scheme.issuedCredits() == 0);
    scheme.checker().assertNoLeaks();
    NettyLeaks.collect();
    assertEquals(List.of(), NettyLeaks.reports(), "Netty's leak detector");
  }

  private static void row(String fault, Map<String, Object> fields) {
    System.out.println("FAULT-ROW " + fault + " " + fields.entrySet().stream()
        .map(e -> e.getKey() + "=" + e.getValue()).collect(Collectors.joining(" ")));
  }

  /**
   * Calls that each session keeps outstanding until told to stop; a call that the server refused
   * (or that expired in the client queue) is replaced, one that failed with its connection is not.
   * Counts how every call ended, and any that ended twice.
   */
  private static final class Load {
    final AtomicLong issued = new AtomicLong();
    final AtomicLong ok = new AtomicLong();
    final AtomicLong refused = new AtomicLong();
    final AtomicLong failed = new AtomicLong();
    final AtomicLong endedTwice = new AtomicLong();
    final AtomicBoolean stop = new AtomicBoolean();
    private final byte[] payload;

    Load(SpillwayClient client, int inFlight, long serviceNanos) {
      this.payload = payload(serviceNanos);
      for (int s = 0; s < client.sessionCount(); s++) {
        for (int i = 0; i < inFlight; i++) {
          next(client.session(s));
        }
      }
    }

    private void next(SpillwayClient.Session session) {
      if (stop.get()) {
        return;
      }
      issued.incrementAndGet();
      AtomicBoolean ended = new AtomicBoolean();
      CompletableFuture<byte[]> call = session.call(payload);
      call.whenComplete((r, e) -> {
        if (!ended.compareAndSet(false, true)) {
          endedTwice.incrementAndGet();
          return;
        }
        Throwable cause = e instanceof java.util.concurrent.CompletionException && e.getCause() != null
            ? e.getCause() : e;
        if (cause == null) {
          ok.incrementAndGet();
          next(session);
        } else if (cause instanceof OverloadRejectedException) {
          refused.incrementAndGet();
          next(session);
        } else {
          failed.incrementAndGet();
        }
      });
    }

    long ended() {
      return ok.get() + refused.get() + failed.get();
    }

    void stopAndDrain() {
      stop.set(true);
      await("every call ends: issued " + issued + ", ok " + ok + ", failed " + failed, 30,
          () -> ended() == issued.get());
    }
  }

  private static Map<String, Long> stats(ChildJvm server) throws Exception {
    server.send("stats");
    String line = server.awaitLine("FAULT-STATS", 30);
    Map<String, Long> stats = new java.util.LinkedHashMap<>();
    for (String field : line.split(" ")) {
      String[] kv = field.split("=", 2);
      if (kv[0].equals("permits")) {
        stats.put("permitLeaks", kv[1].equals("none") ? 0L : 1L);
      } else {
        stats.put(kv[0], Long.parseLong(kv[1]));
      }
    }
    return stats;
  }

  @Test
  void aClientProcessKilledMidFlightLeavesNothingBehind() throws Exception {
    LeakCheckingScheme scheme = scheme();
    try (SpillwayServer server = server(scheme)) {
      long heapBefore = heapAfterGc();
      for (int round = 0; round < ROUNDS; round++) {
        ChildJvm client = ChildJvm.start(FaultClientMain.class, "load",
            Integer.toString(server.port()), "8", "16", "200");
        try {
          client.awaitLine("FAULT-CLIENT running", 30);
          await("requests in flight at the server", 10, () -> scheme.checker().outstanding() > 0);
          int inFlight = scheme.checker().outstanding();
          client.kill9();
          assertClean(scheme);
          row("client-kill-9", Map.of("round", round, "inFlightAtKill", inFlight,
              "admitted", scheme.checker().admitted(), "lost", 0, "endedTwice", 0,
              "creditsAfter", scheme.issuedCredits(), "nettyLeaks", NettyLeaks.reports().size(),
              "heapDeltaKiB", (heapAfterGc() - heapBefore) / 1024));
          assertTrue(inFlight > 0);
        } finally {
          client.close();
        }
      }
      assertTrue(heapAfterGc() - heapBefore < 64L << 20, "heap after GC grew by more than 64 MB");
    }
  }

  @Test
  void theServerKilledAndRestartedUnderLoad() throws Exception {
    ChildJvm first = ChildJvm.start(FaultServerMain.class, "0", Long.toString(SLO_NANOS / 1_000));
    int port = Integer.parseInt(first.awaitLine("FAULT-PORT", 30));
    for (int round = 0; round < ROUNDS; round++) {
      Load load;
      try (SpillwayClient client = client(port, 4)) {
        load = new Load(client, 8, 50_000);
        await("calls answered before the kill", 30, () -> load.ok.get() >= 300);
        first.kill9();
        await("every call ends once the server is gone", 30, () -> load.ended() == load.issued.get());
        load.stopAndDrain();
      }
      assertEquals(0, load.endedTwice.get());
      assertTrue(load.failed.get() > 0, "calls in flight at the kill fail: " + load.failed);
      // the server comes back on the same port; a new client is served
      first = ChildJvm.start(FaultServerMain.class, Integer.toString(port),
          Long.toString(SLO_NANOS / 1_000));
      assertEquals(port, Integer.parseInt(first.awaitLine("FAULT-PORT", 30)));
      Load after;
      try (SpillwayClient client = client(port, 4)) {
        after = new Load(client, 8, 50_000);
        await("served after the restart", 30, () -> after.ok.get() >= 300);
        after.stopAndDrain();
      }
      assertEquals(0, after.failed.get(), "after the restart no call fails with its connection");
      Map<String, Long> stats = awaitServerClean(first);
      row("server-kill-9-restart", Map.of("round", round, "issued", load.issued.get(),
          "okBefore", load.ok.get(), "refusedBefore", load.refused.get(),
          "failedAtKill", load.failed.get(),
          "okAfterRestart", after.ok.get(), "lost", load.issued.get() - load.ended(),
          "endedTwice", load.endedTwice.get() + after.endedTwice.get(),
          "restartedServer", stats));
    }
    first.close();
  }

  /** Asks a child server for its ledger until its clients are all gone; checks it is clean. */
  private static Map<String, Long> awaitServerClean(ChildJvm server) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    Map<String, Long> stats = stats(server);
    while ((stats.get("outstanding") != 0 || stats.get("sessions") != 0 || stats.get("issued") != 0)
        && System.nanoTime() - deadline < 0) {
      LockSupport.parkNanos(50_000_000);
      stats = stats(server);
    }
    assertEquals(0L, stats.get("outstanding"), stats.toString());
    assertEquals(0L, stats.get("sessions"), stats.toString());
    assertEquals(0L, stats.get("issued"), stats.toString());
    assertEquals(0L, stats.get("netty"), stats.toString());
    assertEquals(0L, stats.get("permitLeaks"), stats.toString());
    return stats;
  }

  private static SpillwayClient client(int port, int sessions) throws InterruptedException {
    return SpillwayClient.builder().scheme(Breakwater.of(BreakwaterConfig.forSlo(SLO_NANOS, 50_000)))
        .port(port).connections(2).sessions(sessions).sloNanos(SLO_NANOS).build().start();
  }

  @Test
  void aConnectionCutMidFrameLeavesNothingBehind() throws Exception {
    LeakCheckingScheme scheme = scheme();
    try (SpillwayServer server = server(scheme)) {
      long heapBefore = heapAfterGc();
      int cuts = 0;
      for (int round = 0; round < 50 * ROUNDS; round++) {
        try (Socket raw = new Socket("127.0.0.1", server.port())) {
          OutputStream out = raw.getOutputStream();
          InputStream in = raw.getInputStream();
          // one whole request, answered
          out.write(frame(1000 + round, 1, true, payload(0)));
          out.flush();
          assertEquals(Frame.HEADER_SIZE, in.readNBytes(Frame.HEADER_SIZE).length);
          // then a header promising 4 KiB and half of it, or half a header, and the connection is
          // reset
          byte[] next = frame(1000 + round, 2, false, new byte[4096]);
          int cut = round % 2 == 0 ? Frame.HEADER_SIZE + 2048 : Frame.HEADER_SIZE / 2;
          out.write(next, 0, cut);
          out.flush();
          raw.setSoLinger(true, 0); // RST, not FIN
          cuts++;
        }
      }
      assertClean(scheme);
      // the whole requests, and each request cut after its header (even rounds) whose header the
      // server read before the reset: a request is decided on at its header, and the cut ends its
      // permit (assertClean); a reset may discard bytes the server had not read yet, and a request
      // cut inside its header is never decided on
      long admitted = scheme.checker().admitted();
      assertTrue(admitted >= 50L * ROUNDS && admitted <= 75L * ROUNDS,
          "the whole requests and at most those cut after their header were admitted: " + admitted);
      long heapDelta = heapAfterGc() - heapBefore;
      row("connection-cut-mid-frame", Map.of("cuts", cuts, "admitted", scheme.checker().admitted(),
          "lost", 0, "endedTwice", 0, "creditsAfter", scheme.issuedCredits(),
          "nettyLeaks", NettyLeaks.reports().size(), "heapDeltaKiB", heapDelta / 1024));
      assertTrue(heapDelta < 64L << 20);
    }
  }

  /**
   * Clients that send a request's header and half its payload and then stall, connections open.
   * Each request is admitted at its header; the server closes each connection at its payload
   * timeout ({@code SpillwayServer.Builder.payloadTimeoutNanos}, the default), which ends the
   * request. Every admitted request ends once and nothing is left held.
   */
  @Test
  void halfAFrameThenAStallIsEndedByThePayloadTimeout() throws Exception {
    LeakCheckingScheme scheme = scheme();
    try (SpillwayServer server = server(scheme)) {
      long heapBefore = heapAfterGc();
      int stalls = 25 * ROUNDS;
      int wholeServed = 0;
      int closedByServer = 0;
      int refusedAtHeader = 0;
      List<Socket> sockets = new ArrayList<>();
      try {
        for (int c = 0; c < stalls; c++) {
          Socket raw = new Socket("127.0.0.1", server.port());
          sockets.add(raw);
          raw.setSoTimeout(20_000); // far past the payload timeout: a server that never closes fails
          OutputStream out = raw.getOutputStream();
          out.write(frame(2000 + c, 1, true, payload(0))); // one whole request, answered
          out.flush();
          if (status(raw.getInputStream()) == Status.OK) {
            wholeServed++;
          }
          byte[] next = frame(2000 + c, 2, false, new byte[4096]);
          out.write(next, 0, Frame.HEADER_SIZE + 2048); // its header and half its payload, then nothing
          out.flush();
        }
        for (Socket raw : sockets) {
          // the server's close, or, for a request the gate refused at its header, its answer
          byte[] answer = raw.getInputStream().readNBytes(Frame.HEADER_SIZE);
          if (answer.length == 0) {
            closedByServer++;
          } else {
            refusedAtHeader++;
          }
        }
      } finally {
        for (Socket raw : sockets) {
          raw.close();
        }
      }
      assertClean(scheme);
      assertEquals(wholeServed + closedByServer, scheme.checker().admitted(),
          "admitted: the whole requests served, and the stalled ones, each ended by its connection's close");
      assertTrue(closedByServer >= stalls - 2, "stalled requests admitted and cut off: " + closedByServer
          + " of " + stalls + " (" + refusedAtHeader + " refused at their header)");
      long heapDelta = heapAfterGc() - heapBefore;
      row("half-frame-then-stall", Map.of("connections", stalls, "admitted", scheme.checker().admitted(),
          "closedByServer", closedByServer, "refusedAtHeader", refusedAtHeader,
          "outstanding", scheme.checker().outstanding(), "creditsAfter", scheme.issuedCredits(),
          "sessionsAfter", scheme.sessions(), "nettyLeaks", NettyLeaks.reports().size(),
          "heapDeltaKiB", heapDelta / 1024));
      assertTrue(heapDelta < 64L << 20);
    }
  }

  /** The status of the answer at the head of {@code in}, a header-only answer. */
  private static Status status(InputStream in) throws IOException {
    byte[] head = in.readNBytes(Frame.HEADER_SIZE);
    assertEquals(Frame.HEADER_SIZE, head.length, "no answer");
    ByteBuf b = Unpooled.wrappedBuffer(head);
    return Frame.readResponse(b, new ResponseMetadata()).status();
  }

  /**
   * A client that sends 20 MB of requests, each asking for a 1 KiB answer, and never reads. The
   * server stops reading it once its answers pass the write-buffer water marks, so it holds a
   * bounded amount for the client while the client keeps its connection, and the client cannot
   * send the rest; when the client resets, every admitted request has ended once and nothing is
   * left held. No credit scheme (every request admitted): what bounds the server is the transport.
   */
  @Test
  void aClientThatNeverReadsIsHeldToABound() throws Exception {
    LeakCheckingScheme scheme = new LeakCheckingScheme(NoControl.INSTANCE);
    try (SpillwayServer server = SpillwayServer.builder().scheme(scheme).parallelism(1)
        .handler((req, alloc) -> req.retainedDuplicate()).build().start()) {
      int frames = 20_000;
      int size = 1024;
      ByteBuf buf = Unpooled.buffer();
      for (int i = 0; i < frames; i++) {
        Frame.writeRequest(buf, Frame.TYPE_REQUEST, new RequestMetadata().sessionId(7).requestId(i), size);
        buf.writeZero(size);
      }
      ByteBuffer flood = buf.nioBuffer();
      long heapBefore = heapAfterGc(); // the flood, the client's, already counted
      long heapStalled;
      try (SocketChannel raw = SocketChannel.open()) {
        raw.setOption(StandardSocketOptions.SO_RCVBUF, 4096);
        raw.connect(new InetSocketAddress("127.0.0.1", server.port()));
        raw.configureBlocking(false);
        long lastProgress = System.nanoTime();
        while (flood.hasRemaining() && System.nanoTime() - lastProgress < TimeUnit.SECONDS.toNanos(1)) {
          if (raw.write(flood) > 0) {
            lastProgress = System.nanoTime();
          } else {
            LockSupport.parkNanos(1_000_000);
          }
        }
        assertTrue(flood.hasRemaining(), "the server read the whole flood of a client that reads nothing");
        await("the requests admitted before the server stopped reading end", 20,
            () -> scheme.checker().outstanding() == 0);
        heapStalled = heapAfterGc() - heapBefore;
        raw.setOption(StandardSocketOptions.SO_LINGER, 0); // RST
      }
      long sentKiB = flood.position() / 1024;
      long floodKiB = flood.limit() / 1024;
      buf.release();
      await("every permit completed", 20, () -> scheme.checker().outstanding() == 0);
      scheme.checker().assertNoLeaks();
      NettyLeaks.collect();
      assertEquals(List.of(), NettyLeaks.reports(), "Netty's leak detector");
      long heapDelta = heapAfterGc() - heapBefore;
      row("client-never-reads", Map.of("floodKiB", floodKiB, "sentKiB", sentKiB,
          "admitted", scheme.checker().admitted(), "outstanding", scheme.checker().outstanding(),
          "nettyLeaks", NettyLeaks.reports().size(), "heapWhileConnectedKiB", heapStalled / 1024,
          "heapDeltaKiB", heapDelta / 1024));
      assertTrue(heapStalled < 64L << 20, "heap held for a client that reads nothing: " + heapStalled);
    }
  }

  private static byte[] frame(long session, long requestId, boolean register, byte[] payload) {
    ByteBuf buf = Unpooled.buffer();
    try {
      Frame.writeRequest(buf, Frame.TYPE_REQUEST, new RequestMetadata().sessionId(session)
          .requestId(requestId).flags(register ? RequestMetadata.FLAG_REGISTER : 0), payload.length);
      buf.writeBytes(payload);
      byte[] bytes = new byte[buf.readableBytes()];
      buf.readBytes(bytes);
      return bytes;
    } finally {
      buf.release();
    }
  }

  @Test
  void theServerStoppedForASecond() throws Exception {
    try (ChildJvm server = ChildJvm.start(FaultServerMain.class, "0", Long.toString(SLO_NANOS / 1_000))) {
      int port = Integer.parseInt(server.awaitLine("FAULT-PORT", 30));
      Map<String, Long> before = stats(server);
      for (int round = 0; round < ROUNDS; round++) {
        Load load;
        long okAtStop;
        long okAtCont;
        try (SpillwayClient client = client(port, 4)) {
          load = new Load(client, 8, 50_000);
          await("calls answered before the stop", 30, () -> load.ok.get() >= 300);
          server.signal("STOP");
          okAtStop = load.ok.get();
          LockSupport.parkNanos(TimeUnit.SECONDS.toNanos(1)); // the fault: a second stopped
          okAtCont = load.ok.get();
          server.signal("CONT");
          await("served again after the stop", 30, () -> load.ok.get() >= okAtCont + 300);
          load.stopAndDrain();
        }
        assertEquals(0, load.endedTwice.get());
        assertEquals(load.issued.get(), load.ended());
        Map<String, Long> stats = awaitServerClean(server);
        row("server-sigstop-1s", Map.of("round", round, "issued", load.issued.get(),
            "ok", load.ok.get(), "refused", load.refused.get(), "failed", load.failed.get(),
            "answeredWhileStopped", okAtCont - okAtStop, "lost", load.issued.get() - load.ended(),
            "endedTwice", load.endedTwice.get(), "server", stats,
            "heapDeltaKiB", (stats.get("heap") - before.get("heap")) / 1024));
        assertTrue(stats.get("heap") - before.get("heap") < 64L << 20);
      }
    }
  }

  @Test
  void tenThousandConnectionsOnTheNativeTransport() throws Exception {
    int connections = Integer.getInteger("spillway.faults.connections", 10_000);
    long limit = openFileLimit();
    assumeTrue(limit >= connections + 2_000, "the open-file limit (" + limit + ") is below "
        + (connections + 2_000) + "; raise it with ulimit -n (hard limit: see /proc/self/limits)");
    LeakCheckingScheme scheme = scheme();
    try (SpillwayServer server = server(scheme)) {
      long heapBefore = heapAfterGc();
      long heapHeld;
      int okFirstCalls;
      try (ChildJvm client = ChildJvm.start(FaultClientMain.class, "connect",
          Integer.toString(server.port()), Integer.toString(connections))) {
        String[] connected = client.awaitLine("FAULT-CLIENT connected", 120).split(" ");
        // every first call answered, served or refused (10,000 at once on one core: AQM refuses
        // most), none failed with its connection
        assertEquals(Integer.toString(connections), connected[0]);
        assertEquals(Integer.toString(connections), connected[2], "answered");
        okFirstCalls = Integer.parseInt(connected[4]);
        assertEquals(connections, scheme.sessions());
        assertEquals(connections, server.boundSessions());
        heapHeld = heapAfterGc();
      }
      assertClean(scheme);
      long heapAfter = heapAfterGc();
      row("connections-" + connections, Map.of("transport", server.transport(),
          "served", okFirstCalls, "admitted", scheme.checker().admitted(), "lost", 0, "endedTwice", 0,
          "creditsAfter", scheme.issuedCredits(), "nettyLeaks", NettyLeaks.reports().size(),
          "heapHeldKiB", (heapHeld - heapBefore) / 1024, "heapAfterKiB", (heapAfter - heapBefore) / 1024,
          "openFileLimit", limit));
      assertTrue(heapAfter - heapBefore < 64L << 20, "heap after the connections closed");
    }
  }

  /** The soft limit on open files of this process, from /proc/self/limits (Long.MAX_VALUE if unlimited). */
  private static long openFileLimit() throws IOException {
    for (String line : Files.readAllLines(Path.of("/proc/self/limits"))) {
      if (line.startsWith("Max open files")) {
        String soft = line.substring("Max open files".length()).strip().split("\\s+")[0];
        return soft.equals("unlimited") ? Long.MAX_VALUE : Long.parseLong(soft);
      }
    }
    return 0;
  }
}
