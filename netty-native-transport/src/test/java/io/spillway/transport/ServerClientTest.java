package io.spillway.transport;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.Unpooled;
import io.spillway.api.AbstractServerPermit;
import io.spillway.api.ClientEnvironment;
import io.spillway.api.ClientGate;
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
import io.spillway.credit.Breakwater;
import io.spillway.credit.BreakwaterConfig;
import io.spillway.credit.BreakwaterServerGate;
import io.spillway.transport.internal.Frame;
import io.spillway.transport.testing.NettyLeaks;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Real sockets on loopback. Waits are bounded only so a bug fails the test instead of hanging the
 * build; nothing asserts on how long anything took.
 */
class ServerClientTest {

  private static final long WAIT_SECONDS = 20;
  private static final BreakwaterConfig BW = BreakwaterConfig.forSlo(10_000_000_000L, 100_000);

  /** Wraps a scheme so the test can hold its server gate (and check it for leaks). */
  private static final class Capturing implements OverloadScheme {
    final OverloadScheme inner;
    final AtomicReference<LeakCheckingServerGate> leakChecked = new AtomicReference<>();
    final AtomicReference<ServerGate> raw = new AtomicReference<>();
    final AtomicReference<ServerEnvironment> environment = new AtomicReference<>();

    Capturing(OverloadScheme inner) {
      this.inner = inner;
    }

    @Override
    public String name() {
      return inner.name();
    }

    @Override
    public ServerGate newServerGate(ServerEnvironment environment) {
      this.environment.set(environment);
      ServerGate g = inner.newServerGate(environment);
      raw.set(g);
      LeakCheckingServerGate checked = new LeakCheckingServerGate(g);
      leakChecked.set(checked);
      return checked;
    }

    @Override
    public <R> ClientGate<R> newClientGate(ClientEnvironment environment) {
      return inner.newClientGate(environment);
    }
  }

  private static SpillwayServer echoServer(OverloadScheme scheme, Transport transport) throws Exception {
    return SpillwayServer.builder().scheme(scheme).transport(transport).parallelism(2)
        .handler((req, alloc) -> req.retainedDuplicate()).build().start();
  }

  private static SpillwayClient client(OverloadScheme scheme, SpillwayServer server, int connections,
      int sessions) throws Exception {
    return SpillwayClient.builder().scheme(scheme).transport(server.transport()).port(server.port())
        .connections(connections).sessions(sessions).sloNanos(10_000_000_000L).build().start();
  }

  static List<Transport> available() {
    List<Transport> list = new ArrayList<>();
    for (Transport t : Transport.values()) {
      if (t.isAvailable()) {
        list.add(t);
      }
    }
    return list;
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  void echoesOverEveryAvailableTransport(Transport transport) throws Exception {
    org.junit.jupiter.api.Assumptions.assumeTrue(transport.isAvailable(),
        () -> transport + " unavailable: " + transport.unavailabilityCause());
    for (OverloadScheme scheme : List.of(NoControl.INSTANCE, Breakwater.of(BW))) {
      try (SpillwayServer server = echoServer(scheme, transport);
           SpillwayClient client = client(scheme, server, 1, 1)) {
        assertEquals(transport, client.transport());
        for (int i = 0; i < 20; i++) {
          byte[] sent = ("hello " + i).getBytes();
          assertArrayEquals(sent, client.session(0).call(sent).get(WAIT_SECONDS, TimeUnit.SECONDS));
        }
      }
    }
  }

  @Test
  void manySessionsShareAFewConnections() throws Exception {
    Capturing scheme = new Capturing(Breakwater.of(BW));
    try (SpillwayServer server = echoServer(scheme, Transport.select());
         SpillwayClient client = client(scheme, server, 2, 200)) {
      List<CompletableFuture<byte[]>> calls = new ArrayList<>();
      for (int round = 0; round < 3; round++) {
        for (int s = 0; s < client.sessionCount(); s++) {
          calls.add(client.session(s).call(new byte[] {(byte) s}));
        }
      }
      for (CompletableFuture<byte[]> f : calls) {
        f.get(WAIT_SECONDS, TimeUnit.SECONDS);
      }
      BreakwaterServerGate gate = (BreakwaterServerGate) scheme.raw.get();
      assertEquals(200, gate.sessionCount());
      assertEquals(200, server.boundSessions());
      scheme.leakChecked.get().assertNoLeaks();
    }
  }

  @Test
  void aRejectedCallFailsAtOnceWithTheReason() throws Exception {
    OverloadScheme rejectAll = serverOnly("reject-all", request -> new AbstractServerPermit(Status.REJECTED_AQM) {
      @Override
      protected void onComplete(Outcome outcome, long now, ResponseMetadata response) { }
    });
    try (SpillwayServer server = SpillwayServer.builder().scheme(rejectAll)
             .handler((req, alloc) -> { throw new AssertionError("a rejected request must not run"); })
             .build().start();
         SpillwayClient client = client(NoControl.INSTANCE, server, 1, 1)) {
      ExecutionException e = assertThrows(ExecutionException.class,
          () -> client.session(0).call(new byte[8]).get(WAIT_SECONDS, TimeUnit.SECONDS));
      OverloadRejectedException rejected = assertInstanceOf(OverloadRejectedException.class, e.getCause());
      assertEquals(Status.REJECTED_AQM, rejected.status());
    }
  }

  /** A call's client-queue wait counts from the arrival it is given: one that waited too long expires unsent. */
  @Test
  void aCallThatArrivedLongerAgoThanTheQueueTimeoutExpiresWithoutBeingSent() throws Exception {
    for (OverloadScheme scheme : List.of(NoControl.INSTANCE, Breakwater.of(BW))) {
      try (SpillwayServer server = echoServer(scheme, Transport.NIO);
           SpillwayClient client = client(scheme, server, 1, 1)) {
        long longAgo = System.nanoTime() - 11_000_000_000L; // past the SLO (10 s), so past any queue timeout
        ExecutionException e = assertThrows(ExecutionException.class,
            () -> client.session(0).call(new byte[] {1}, longAgo).get(WAIT_SECONDS, TimeUnit.SECONDS));
        OverloadRejectedException expired = (OverloadRejectedException) e.getCause();
        assertEquals(Status.EXPIRED, expired.status(), scheme.name());
        assertFalse(expired.wasSent(), scheme.name());
        assertArrayEquals(new byte[] {2}, client.session(0).call(new byte[] {2}, System.nanoTime())
            .get(WAIT_SECONDS, TimeUnit.SECONDS), scheme.name());
      }
    }
  }

  @Test
  void aFailingHandlerAnswersFailed() throws Exception {
    try (SpillwayServer server = SpillwayServer.builder().scheme(NoControl.INSTANCE)
             .handler((req, alloc) -> { throw new IllegalStateException("boom"); }).build().start();
         SpillwayClient client = client(NoControl.INSTANCE, server, 1, 1)) {
      ExecutionException e = assertThrows(ExecutionException.class,
          () -> client.session(0).call(new byte[1]).get(WAIT_SECONDS, TimeUnit.SECONDS));
      assertEquals(Status.FAILED, ((OverloadRejectedException) e.getCause()).status());
    }
  }

  @Test
  void aBudgetAbortAnswersRejectedBudgetWithTheBudgetInScope() throws Exception {
    AtomicReference<Long> seen = new AtomicReference<>();
    try (SpillwayServer server = SpillwayServer.builder().scheme(NoControl.INSTANCE)
             .queueingBudgetNanos(5_000_000_000L)
             .handler((req, alloc) -> {
               seen.set(io.spillway.api.RequestBudget.currentOrNull().remainingNanos());
               throw new io.spillway.api.BudgetExceededException(10, 5);
             }).build().start();
         SpillwayClient client = client(NoControl.INSTANCE, server, 1, 1)) {
      ExecutionException e = assertThrows(ExecutionException.class,
          () -> client.session(0).call(new byte[1]).get(WAIT_SECONDS, TimeUnit.SECONDS));
      assertEquals(Status.REJECTED_BUDGET, ((OverloadRejectedException) e.getCause()).status());
      assertTrue(seen.get() > 0 && seen.get() <= 5_000_000_000L, "budget bound: " + seen.get());
    }
  }

  @Test
  void theLoopQueueThreadingModelServesAndAnswers() throws Exception {
    try (SpillwayServer server = SpillwayServer.builder().scheme(Breakwater.of(BW)).threading(Threading.LOOP_QUEUE)
             .parallelism(1).handler((req, alloc) -> req.retainedDuplicate()).build().start();
         SpillwayClient client = client(Breakwater.of(BW), server, 2, 20)) {
      List<CompletableFuture<byte[]>> calls = new ArrayList<>();
      for (int i = 0; i < 200; i++) {
        calls.add(client.session(i % 20).call(new byte[] {(byte) i}));
      }
      for (int i = 0; i < 200; i++) {
        assertArrayEquals(new byte[] {(byte) i}, calls.get(i).get(WAIT_SECONDS, TimeUnit.SECONDS));
      }
      assertEquals(Threading.LOOP_QUEUE, server.threading());
    }
  }

  @Test
  void aMalformedFrameClosesOnlyItsConnection() throws Exception {
    try (SpillwayServer server = echoServer(NoControl.INSTANCE, Transport.select());
         SpillwayClient good = client(NoControl.INSTANCE, server, 1, 1)) {
      for (byte[] garbage : List.of(new byte[64], oversizedHeader(server))) {
        try (Socket raw = new Socket("127.0.0.1", server.port())) {
          raw.setSoTimeout((int) TimeUnit.SECONDS.toMillis(WAIT_SECONDS));
          OutputStream out = raw.getOutputStream();
          out.write(garbage);
          out.flush();
          InputStream in = raw.getInputStream();
          assertEquals(-1, in.read(), "the server must close a connection that sends a malformed frame");
        }
        assertArrayEquals(new byte[] {42}, good.session(0).call(new byte[] {42}).get(WAIT_SECONDS, TimeUnit.SECONDS),
            "other connections keep working");
      }
    }
  }

  @Test
  void aHalfSentFrameStallsOnlyItsConnection() throws Exception {
    Capturing scheme = new Capturing(Breakwater.of(BW));
    // A stall as long as the test takes, so the timeout that ends stalls
    // (aStalledHeaderClosesItsConnectionAtTheTimeout) cannot end this one midway on a slow machine.
    try (SpillwayServer server = SpillwayServer.builder().scheme(scheme).parallelism(2)
        .payloadTimeoutNanos(TimeUnit.SECONDS.toNanos(10 * WAIT_SECONDS))
        .handler((req, alloc) -> req.retainedDuplicate()).build().start();
         SpillwayClient good = client(scheme, server, 1, 1)) {
      var buf = Unpooled.buffer();
      Frame.writeRequest(buf, Frame.TYPE_REQUEST, new RequestMetadata().sessionId(99).requestId(1), 100);
      buf.writeZero(100);
      byte[] frame = new byte[buf.readableBytes()];
      buf.readBytes(frame);
      buf.release();
      try (Socket raw = new Socket("127.0.0.1", server.port())) {
        raw.getOutputStream().write(frame, 0, Frame.HEADER_SIZE / 2); // half a header, then nothing
        raw.getOutputStream().flush();
        for (int i = 0; i < 20; i++) {
          assertArrayEquals(new byte[] {(byte) i}, good.session(0).call(new byte[] {(byte) i})
              .get(WAIT_SECONDS, TimeUnit.SECONDS), "other connections are served meanwhile");
        }
        LeakCheckingServerGate checked = scheme.leakChecked.get();
        long admitted = checked.admitted();
        assertEquals(admitted, checked.issued(), "the good connection's calls, all admitted");
        raw.getOutputStream().write(frame, Frame.HEADER_SIZE / 2, Frame.HEADER_SIZE + 50 - Frame.HEADER_SIZE / 2);
        raw.getOutputStream().flush(); // the header and half the payload: decided, and waiting for the rest
        waitUntil(() -> checked.issued() == admitted + 1);
        assertEquals(admitted + 1, checked.admitted(), "the half-sent request, admitted at its header");
        assertArrayEquals(new byte[] {7}, good.session(0).call(new byte[] {7}).get(WAIT_SECONDS, TimeUnit.SECONDS));
      }
      // Its connection closed before the rest of its payload came: its permit ends with it, before
      // its session is deregistered.
      BreakwaterServerGate gate = (BreakwaterServerGate) scheme.raw.get();
      waitUntil(() -> gate.sessionCount() == 1);
      assertEquals(0, scheme.leakChecked.get().outstanding(), "the half-sent request's permit");
      scheme.leakChecked.get().assertNoLeaks();
    }
  }

  /**
   * Over every transport, a connection reset (RST) while its request, admitted at its header,
   * awaits the rest of its payload ends that request's permit and deregisters its session: the
   * server notices every reset, whether or not it is reading the connection at the time. Many
   * connections in a row, each answered once before it is cut, as a server that misses some
   * resets (Netty's io_uring with multishot POLL_ADD, see Transport) keeps their permits for ever.
   */
  @ParameterizedTest
  @EnumSource(Transport.class)
  void aResetConnectionEndsTheRequestAwaitingItsPayload(Transport transport) throws Exception {
    org.junit.jupiter.api.Assumptions.assumeTrue(transport.isAvailable(),
        () -> transport + " unavailable: " + transport.unavailabilityCause());
    Capturing scheme = new Capturing(Breakwater.of(BW));
    int connections = 20;
    try (SpillwayServer server = SpillwayServer.builder().scheme(scheme).transport(transport).parallelism(1)
        .handler((req, alloc) -> req.retainedDuplicate()).build().start()) {
      for (int c = 0; c < connections; c++) {
        try (Socket raw = new Socket("127.0.0.1", server.port())) {
          raw.setSoTimeout((int) TimeUnit.SECONDS.toMillis(WAIT_SECONDS));
          assertEquals(Status.OK, callRaw(raw, 100 + c, 1, Long.MAX_VALUE), "a whole request, answered");
          var head = Unpooled.buffer();
          Frame.writeRequest(head, Frame.TYPE_REQUEST, new RequestMetadata().sessionId(100 + c).requestId(2), 4096);
          head.writeZero(2048); // half its payload
          byte[] cut = new byte[head.readableBytes()];
          head.readBytes(cut);
          head.release();
          raw.getOutputStream().write(cut);
          raw.getOutputStream().flush();
          raw.setSoLinger(true, 0); // closing sends a reset
        }
      }
      LeakCheckingServerGate checked = scheme.leakChecked.get();
      BreakwaterServerGate gate = (BreakwaterServerGate) scheme.raw.get();
      try {
        waitUntil(() -> checked.outstanding() == 0 && server.boundSessions() == 0 && gate.sessionCount() == 0);
      } catch (AssertionError e) {
        throw new AssertionError("after " + connections + " resets: " + checked.outstanding()
            + " permits outstanding, " + server.boundSessions() + " sessions bound, " + gate.sessionCount()
            + " in the gate", e);
      }
      assertEquals(2L * connections, checked.admitted());
      checked.assertNoLeaks();
    }
  }

  /**
   * Over every transport, a client that sends a header and half its payload and then stalls, with
   * its connection open, loses the connection at the payload timeout, and the request it holds
   * ends once: the permit it held is back, its session gone.
   */
  @ParameterizedTest
  @EnumSource(Transport.class)
  void aStalledPayloadClosesItsConnectionAtTheTimeout(Transport transport) throws Exception {
    org.junit.jupiter.api.Assumptions.assumeTrue(transport.isAvailable(),
        () -> transport + " unavailable: " + transport.unavailabilityCause());
    Capturing scheme = new Capturing(Breakwater.of(BW));
    try (SpillwayServer server = SpillwayServer.builder().scheme(scheme).transport(transport).parallelism(1)
        .payloadTimeoutNanos(TimeUnit.MILLISECONDS.toNanos(100))
        .handler((req, alloc) -> req.retainedDuplicate()).build().start();
         Socket raw = new Socket("127.0.0.1", server.port())) {
      raw.setSoTimeout((int) TimeUnit.SECONDS.toMillis(WAIT_SECONDS));
      assertEquals(Status.OK, callRaw(raw, 100, 1, Long.MAX_VALUE), "a whole request, answered");
      var head = Unpooled.buffer();
      Frame.writeRequest(head, Frame.TYPE_REQUEST, new RequestMetadata().sessionId(100).requestId(2), 4096);
      head.writeZero(2048); // half its payload, and then nothing
      byte[] cut = new byte[head.readableBytes()];
      head.readBytes(cut);
      head.release();
      raw.getOutputStream().write(cut);
      raw.getOutputStream().flush();
      assertEquals(-1, raw.getInputStream().read(), "the server answered instead of closing");
      LeakCheckingServerGate checked = scheme.leakChecked.get();
      BreakwaterServerGate gate = (BreakwaterServerGate) scheme.raw.get();
      waitUntil(() -> checked.outstanding() == 0 && server.boundSessions() == 0 && gate.sessionCount() == 0);
      assertEquals(2, checked.admitted());
      checked.assertNoLeaks();
    }
  }

  /**
   * Over every transport, a client that is answered, then sends half of the next frame's header
   * and stalls, with its connection open, loses the connection at the payload timeout: nothing was
   * decided on at that header, the earlier request's permit has ended, its session is gone, and the
   * buffer that held the half header is released (Netty's leak detector, at PARANOID here, reports
   * none).
   */
  @ParameterizedTest
  @EnumSource(Transport.class)
  void aStalledHeaderClosesItsConnectionAtTheTimeout(Transport transport) throws Exception {
    org.junit.jupiter.api.Assumptions.assumeTrue(transport.isAvailable(),
        () -> transport + " unavailable: " + transport.unavailabilityCause());
    assertEquals(io.netty.util.ResourceLeakDetector.Level.PARANOID, NettyLeaks.level());
    int reportsBefore = NettyLeaks.reports().size();
    Capturing scheme = new Capturing(Breakwater.of(BW));
    try (SpillwayServer server = SpillwayServer.builder().scheme(scheme).transport(transport).parallelism(1)
        .payloadTimeoutNanos(TimeUnit.MILLISECONDS.toNanos(100))
        .handler((req, alloc) -> req.retainedDuplicate()).build().start();
         Socket raw = new Socket("127.0.0.1", server.port())) {
      raw.setSoTimeout((int) TimeUnit.SECONDS.toMillis(WAIT_SECONDS));
      assertEquals(Status.OK, callRaw(raw, 100, 1, Long.MAX_VALUE), "a whole request, answered");
      var head = Unpooled.buffer();
      Frame.writeRequest(head, Frame.TYPE_REQUEST, new RequestMetadata().sessionId(100).requestId(2), 8);
      byte[] cut = new byte[Frame.HEADER_SIZE / 2]; // half its header, and then nothing
      head.readBytes(cut);
      head.release();
      raw.getOutputStream().write(cut);
      raw.getOutputStream().flush();
      assertEquals(-1, raw.getInputStream().read(), "the server answered instead of closing");
      LeakCheckingServerGate checked = scheme.leakChecked.get();
      BreakwaterServerGate gate = (BreakwaterServerGate) scheme.raw.get();
      waitUntil(() -> checked.outstanding() == 0 && server.boundSessions() == 0 && gate.sessionCount() == 0);
      assertEquals(1, checked.issued(), "decided on half a header");
      checked.assertNoLeaks();
    }
    NettyLeaks.collect();
    List<String> reports = NettyLeaks.reports();
    assertEquals(List.of(), reports.subList(Math.min(reportsBefore, reports.size()), reports.size()),
        "buffers leaked by a connection closed at its stalled header");
  }

  /**
   * Over every transport, a request the gate refuses is answered once its header has come, while
   * its client still holds back its 1 MiB payload; the payload, sent afterwards in pieces, is
   * skipped, and the request after it is served.
   */
  @ParameterizedTest
  @EnumSource(Transport.class)
  void aRefusedRequestIsAnsweredBeforeItsPayloadIsSent(Transport transport) throws Exception {
    org.junit.jupiter.api.Assumptions.assumeTrue(transport.isAvailable(),
        () -> transport + " unavailable: " + transport.unavailabilityCause());
    Capturing scheme = new Capturing(serverOnly("refuses-session-9", request -> new AbstractServerPermit(
        request.sessionId() == 9 ? Status.REJECTED_AQM : Status.OK) {
      @Override
      protected void onComplete(Outcome outcome, long now, ResponseMetadata response) { }
    }));
    try (SpillwayServer server = echoServer(scheme, transport);
         Socket raw = new Socket("127.0.0.1", server.port())) {
      raw.setSoTimeout((int) TimeUnit.SECONDS.toMillis(WAIT_SECONDS)); // a server waiting for the payload fails
      var head = Unpooled.buffer();
      Frame.writeRequest(head, Frame.TYPE_REQUEST, new RequestMetadata().sessionId(9).requestId(1),
          Frame.DEFAULT_MAX_PAYLOAD);
      byte[] header = new byte[Frame.HEADER_SIZE];
      head.readBytes(header);
      head.release();
      OutputStream out = raw.getOutputStream();
      out.write(header);
      out.flush();
      byte[] answer = raw.getInputStream().readNBytes(Frame.HEADER_SIZE);
      assertEquals(Frame.HEADER_SIZE, answer.length, "the server closed the connection");
      ResponseMetadata refusal = Frame.readResponse(Unpooled.wrappedBuffer(answer), new ResponseMetadata());
      assertEquals(1, refusal.requestId());
      assertEquals(Status.REJECTED_AQM, refusal.status());
      byte[] piece = new byte[64 * 1024];
      for (int sent = 0; sent < Frame.DEFAULT_MAX_PAYLOAD; sent += piece.length) {
        out.write(piece);
      }
      out.flush();
      assertEquals(Status.OK, callRaw(raw, 2, Long.MAX_VALUE), "the request after the skipped payload");
      assertEquals(2, scheme.leakChecked.get().issued());
      scheme.leakChecked.get().assertNoLeaks();
    }
  }

  @Test
  void aConnectionCannotRegisterMoreSessionsThanItsCap() throws Exception {
    Capturing scheme = new Capturing(NoControl.INSTANCE);
    try (SpillwayServer server = SpillwayServer.builder().scheme(scheme).parallelism(2)
        .maxSessionsPerConnection(3).handler((req, alloc) -> req.retainedDuplicate()).build().start();
         SpillwayClient client = client(NoControl.INSTANCE, server, 1, 5)) {
      for (int s = 0; s < 3; s++) {
        assertArrayEquals(new byte[] {(byte) s},
            client.session(s).call(new byte[] {(byte) s}).get(WAIT_SECONDS, TimeUnit.SECONDS));
      }
      for (int s = 3; s < 5; s++) {
        int session = s;
        ExecutionException e = assertThrows(ExecutionException.class,
            () -> client.session(session).call(new byte[] {1}).get(WAIT_SECONDS, TimeUnit.SECONDS));
        OverloadRejectedException rejected = assertInstanceOf(OverloadRejectedException.class, e.getCause());
        assertEquals(Status.REJECTED_NO_CREDIT, rejected.status());
      }
      assertArrayEquals(new byte[] {9}, client.session(0).call(new byte[] {9}).get(WAIT_SECONDS, TimeUnit.SECONDS),
          "the connection's registered sessions keep working");
      assertEquals(0, scheme.leakChecked.get().outstanding(), "refused sessions never reached the gate");
    }
    assertThrows(IllegalArgumentException.class, () -> SpillwayServer.builder().scheme(NoControl.INSTANCE)
        .handler((req, alloc) -> req.retainedDuplicate()).maxSessionsPerConnection(0).build());
  }

  @Test
  void aClientThatDoesNotReadIsNotServedWithoutBound() throws Exception {
    Capturing scheme = new Capturing(NoControl.INSTANCE);
    java.util.concurrent.atomic.AtomicInteger handled = new java.util.concurrent.atomic.AtomicInteger();
    int frames = 20_000;
    int size = 1024; // 20 MB of responses asked for
    try (SpillwayServer server = SpillwayServer.builder().scheme(scheme).parallelism(2)
        .handler((req, alloc) -> {
          handled.incrementAndGet();
          return req.retainedDuplicate();
        }).build().start();
         SpillwayClient good = client(NoControl.INSTANCE, server, 1, 1)) {
      var buf = Unpooled.buffer();
      for (int i = 0; i < frames; i++) {
        Frame.writeRequest(buf, Frame.TYPE_REQUEST, new RequestMetadata().sessionId(7).requestId(i), size);
        buf.writeZero(size);
      }
      java.nio.ByteBuffer flood = buf.nioBuffer();
      try (java.nio.channels.SocketChannel raw = java.nio.channels.SocketChannel.open()) {
        raw.setOption(java.net.StandardSocketOptions.SO_RCVBUF, 4096);
        raw.connect(new java.net.InetSocketAddress("127.0.0.1", server.port()));
        raw.configureBlocking(false);
        // send what the server will take, never read, until the server says it stopped reading
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
        while (flood.hasRemaining() && server.pausedConnections.get() == 0 && System.nanoTime() - deadline < 0) {
          if (raw.write(flood) == 0) {
            Thread.onSpinWait();
          }
        }
        assertEquals(1, server.pausedConnections.get(), "the server never stopped reading the flood");
        // what it admitted before pausing ends; nothing more is decoded while it is paused
        waitUntil(() -> scheme.leakChecked.get().outstanding() == 0);
        int seen = handled.get();
        assertTrue(flood.hasRemaining() && seen < frames / 2,
            "the server kept serving a client that reads nothing: " + seen + " of " + frames);
        assertArrayEquals(new byte[] {1}, good.session(0).call(new byte[] {1}).get(WAIT_SECONDS, TimeUnit.SECONDS),
            "other connections keep working");
      }
      buf.release();
      waitUntil(() -> scheme.leakChecked.get().outstanding() == 0);
      scheme.leakChecked.get().assertNoLeaks();
    }
  }

  /**
   * A client that floods, does not read and then resets its connection leaves the server with a
   * full outbound buffer of responses, each of which fails as the connection goes: the server
   * warns once for that connection, not once per response it had queued, so a peer cannot flood
   * the server's log (as {@link HandlerFailures} bounds the handler's failures).
   */
  @Test
  void aConnectionResetWithResponsesQueuedIsWarnedOnceNotPerResponse() throws Exception {
    java.util.logging.Logger log = java.util.logging.Logger.getLogger(ServerFrameHandler.class.getName());
    java.util.concurrent.atomic.AtomicInteger warnings = new java.util.concurrent.atomic.AtomicInteger();
    java.util.logging.Handler counting = new java.util.logging.Handler() {
      @Override
      public void publish(java.util.logging.LogRecord record) {
        if (record.getLevel().intValue() >= java.util.logging.Level.WARNING.intValue()) {
          warnings.incrementAndGet();
        }
      }

      @Override
      public void flush() { }

      @Override
      public void close() { }
    };
    Capturing scheme = new Capturing(NoControl.INSTANCE);
    int size = 1024;
    log.addHandler(counting);
    try (SpillwayServer server = SpillwayServer.builder().scheme(scheme).transport(Transport.NIO).parallelism(2)
        .handler((req, alloc) -> req.retainedDuplicate()).build().start()) {
      var buf = Unpooled.buffer();
      for (int i = 0; i < 20_000; i++) {
        Frame.writeRequest(buf, Frame.TYPE_REQUEST, new RequestMetadata().sessionId(7).requestId(i), size);
        buf.writeZero(size);
      }
      java.nio.ByteBuffer flood = buf.nioBuffer();
      try (java.nio.channels.SocketChannel raw = java.nio.channels.SocketChannel.open()) {
        raw.setOption(java.net.StandardSocketOptions.SO_RCVBUF, 4096);
        raw.connect(new java.net.InetSocketAddress("127.0.0.1", server.port()));
        raw.configureBlocking(false);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
        while (flood.hasRemaining() && server.pausedConnections.get() == 0 && System.nanoTime() - deadline < 0) {
          if (raw.write(flood) == 0) {
            Thread.onSpinWait();
          }
        }
        assertEquals(1, server.pausedConnections.get(), "the server never stopped reading the flood");
        waitUntil(() -> scheme.leakChecked.get().outstanding() == 0);
        raw.setOption(java.net.StandardSocketOptions.SO_LINGER, 0); // closes with a reset
      }
      buf.release();
      waitUntil(() -> server.boundSessions() == 0); // its close, and so its writes' failures, handled
      assertTrue(warnings.get() <= 1, "warnings for one connection reset: " + warnings.get());
    } finally {
      log.removeHandler(counting);
    }
  }

  private static byte[] oversizedHeader(SpillwayServer server) {
    var buf = Unpooled.buffer();
    Frame.writeRequest(buf, Frame.TYPE_REQUEST, new RequestMetadata().sessionId(1), Frame.DEFAULT_MAX_PAYLOAD + 1);
    byte[] bytes = new byte[buf.readableBytes()];
    buf.readBytes(bytes);
    buf.release();
    return bytes;
  }

  @Test
  void aClientKilledMidFlightLosesNothingAndItsCreditsComeBack() throws Exception {
    Capturing scheme = new Capturing(Breakwater.of(BW));
    CountDownLatch entered = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    try (SpillwayServer server = SpillwayServer.builder().scheme(scheme).parallelism(2)
        .handler((req, alloc) -> {
          entered.countDown();
          release.await();
          return req.retainedDuplicate();
        }).build().start()) {
      SpillwayClient client = client(scheme, server, 1, 4);
      List<CompletableFuture<byte[]>> calls = new ArrayList<>();
      for (int i = 0; i < 40; i++) {
        calls.add(client.session(i % 4).call(new byte[] {(byte) i}));
      }
      assertTrue(entered.await(WAIT_SECONDS, TimeUnit.SECONDS), "a handler should be running");
      client.close(); // the client dies with calls queued in its gates and in flight at the server
      for (CompletableFuture<byte[]> f : calls) {
        ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(WAIT_SECONDS, TimeUnit.SECONDS));
        assertInstanceOf(ConnectionClosedException.class, e.getCause(), "every call fails with a clear error");
      }
      BreakwaterServerGate gate = (BreakwaterServerGate) scheme.raw.get();
      waitUntil(() -> gate.sessionCount() == 0);
      assertEquals(0, gate.issuedCredits(), "the sessions' credits return to the pool");
      release.countDown(); // the handlers still running finish; their permits must still end
      waitUntil(() -> scheme.leakChecked.get().outstanding() == 0);
      scheme.leakChecked.get().assertNoLeaks();
      assertEquals(0, gate.issuedCredits());
    }
  }

  @Test
  void deregisteringReturnsTheSessionsCredits() throws Exception {
    Capturing scheme = new Capturing(Breakwater.of(BW));
    try (SpillwayServer server = echoServer(scheme, Transport.select());
         SpillwayClient client = client(scheme, server, 1, 3)) {
      for (int round = 0; round < 2; round++) { // a second call: off probation, its credits pooled
        for (int s = 0; s < 3; s++) {
          client.session(s).call(new byte[] {1}).get(WAIT_SECONDS, TimeUnit.SECONDS);
        }
      }
      BreakwaterServerGate gate = (BreakwaterServerGate) scheme.raw.get();
      assertEquals(3, gate.sessionCount());
      long before = gate.issuedCredits();
      int window = gate.windowOf(client.session(0).id());
      assertTrue(window > 0, "an answered session holds credits");
      client.session(0).deregister();
      waitUntil(() -> gate.sessionCount() == 2);
      assertEquals(before - window, gate.issuedCredits(), "its window returns to the pool");
      assertEquals(-1, gate.windowOf(client.session(0).id()));
    }
  }

  @Test
  void aConnectionCannotDeregisterAnotherConnectionsSession() throws Exception {
    Capturing scheme = new Capturing(Breakwater.of(BW));
    try (SpillwayServer server = echoServer(scheme, Transport.select());
         SpillwayClient client = client(scheme, server, 1, 1);
         Socket raw = new Socket("127.0.0.1", server.port())) {
      raw.setSoTimeout((int) TimeUnit.SECONDS.toMillis(WAIT_SECONDS));
      client.session(0).call(new byte[] {1}).get(WAIT_SECONDS, TimeUnit.SECONDS);
      long victim = client.session(0).id();
      BreakwaterServerGate gate = (BreakwaterServerGate) scheme.raw.get();
      int window = gate.windowOf(victim);
      var forged = Unpooled.buffer();
      Frame.writeRequest(forged, Frame.TYPE_DEREGISTER, new RequestMetadata().sessionId(victim), 0);
      byte[] bytes = new byte[forged.readableBytes()];
      forged.readBytes(bytes);
      forged.release();
      raw.getOutputStream().write(bytes);
      // A request on the same connection is read after the forged frame: once it is answered, the
      // forged frame has been handled.
      assertEquals(Status.OK, callRaw(raw, 1, Long.MAX_VALUE));
      assertEquals(window, gate.windowOf(victim), "the victim's session and credits stay");
      assertEquals(2, gate.sessionCount());
    }
  }

  /**
   * A connection that sends a request on a session another connection registered shares that
   * session's window but does not own it: closing, it neither deregisters the session (its credits
   * stay with the client that registered it) nor takes the session's explicit credits with it. The
   * intruder's own session (77) is deregistered as it closes, which tells the test its close has
   * been handled; the server has one loop, so the victim's next call is answered after that.
   */
  @Test
  void aConnectionClosingDoesNotEndASessionAnotherConnectionRegistered() throws Exception {
    java.util.Set<Long> deregistered = java.util.concurrent.ConcurrentHashMap.newKeySet();
    OverloadScheme inner = Breakwater.of(BW);
    OverloadScheme recording = new OverloadScheme() {
      @Override
      public String name() {
        return inner.name();
      }

      @Override
      public ServerGate newServerGate(ServerEnvironment environment) {
        return new ForwardingServerGate(inner.newServerGate(environment)) {
          @Override
          public void deregister(long sessionId, long nowNanos) {
            deregistered.add(sessionId);
            delegate.deregister(sessionId, nowNanos);
          }
        };
      }

      @Override
      public <R> ClientGate<R> newClientGate(ClientEnvironment environment) {
        return inner.newClientGate(environment);
      }
    };
    try (SpillwayServer server = SpillwayServer.builder().scheme(recording).transport(Transport.NIO).ioThreads(1)
        .parallelism(2).handler((req, alloc) -> req.retainedDuplicate()).build().start();
         SpillwayClient client = client(inner, server, 1, 1)) {
      long victim = client.session(0).id();
      for (int i = 0; i < 2; i++) { // a second call: off probation
        client.session(0).call(new byte[] {1}).get(WAIT_SECONDS, TimeUnit.SECONDS);
      }
      assertEquals(1, server.boundSessions());
      try (Socket raw = new Socket("127.0.0.1", server.port())) {
        raw.setSoTimeout((int) TimeUnit.SECONDS.toMillis(WAIT_SECONDS));
        callRaw(raw, 77, 1, Long.MAX_VALUE);
        callRaw(raw, victim, 2, Long.MAX_VALUE);
      }
      waitUntil(() -> deregistered.contains(77L));
      assertArrayEquals(new byte[] {3}, client.session(0).call(new byte[] {3}).get(WAIT_SECONDS, TimeUnit.SECONDS));
      assertFalse(deregistered.contains(victim), "another connection's close deregistered the victim's session");
      assertEquals(1, server.boundSessions(), "the victim's session is no longer bound to its connection");
    }
  }

  /**
   * Requests queued on an event loop ({@link Threading#LOOP_QUEUE}) when the server closes still
   * end: the loop's queue drains in slices scheduled on the loop, and a loop that shuts down
   * cancels what is scheduled. The first request's handler holds its loop until the loop is
   * shutting down, so the others are still queued then; the ticker moves past the one-nanosecond
   * slice on every read, so each slice runs one request. Two loops: the connection's (the first,
   * as the gate's control loop) is not the listener's, which the close must reach first.
   */
  @Test
  void requestsQueuedOnTheLoopEndWhenTheServerCloses() throws Exception {
    java.util.concurrent.atomic.AtomicLong clock = new java.util.concurrent.atomic.AtomicLong();
    CountDownLatch holding = new CountDownLatch(1);
    Capturing scheme = new Capturing(NoControl.INSTANCE);
    SpillwayServer server = SpillwayServer.builder().scheme(scheme).transport(Transport.NIO).ioThreads(2)
        .threading(Threading.LOOP_QUEUE).sliceNanos(1).ticker(() -> clock.addAndGet(1_000))
        .handler((req, alloc) -> {
          if (req.getByte(req.readerIndex()) == 0) {
            holding.countDown();
            io.netty.util.concurrent.EventExecutor loop = io.netty.util.internal.ThreadExecutorMap.currentExecutor();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS); // fails, not hangs
            while (!loop.isShuttingDown() && System.nanoTime() - deadline < 0) {
              Thread.onSpinWait();
            }
          }
          return req.retainedDuplicate();
        }).build().start();
    try (Socket raw = new Socket("127.0.0.1", server.port())) {
      var buf = Unpooled.buffer();
      for (int i = 0; i < 10; i++) {
        Frame.writeRequest(buf, Frame.TYPE_REQUEST, new RequestMetadata().sessionId(1).requestId(i), 1);
        buf.writeByte(i);
      }
      buf.readBytes(raw.getOutputStream(), buf.readableBytes()); // one write: decoded in one read
      raw.getOutputStream().flush();
      buf.release();
      assertTrue(holding.await(WAIT_SECONDS, TimeUnit.SECONDS));
      server.close();
    }
    assertEquals(10, scheme.leakChecked.get().admitted());
    scheme.leakChecked.get().assertNoLeaks();
  }

  /**
   * A server that cannot bind its port, or a client that cannot connect, throws from {@code
   * start()}, and the caller has no instance to close: the event loops (non-daemon threads) and
   * whatever else the start began must stop with the failure, or they keep the JVM alive.
   */
  @Test
  void aServerThatCannotBindOrAClientThatCannotConnectLeavesNoThreadRunning() throws Exception {
    java.util.Set<Thread> before = Thread.getAllStackTraces().keySet();
    try (java.net.ServerSocket taken = new java.net.ServerSocket(0, 50, java.net.InetAddress.getByName("127.0.0.1"))) {
      SpillwayServer.Builder b = SpillwayServer.builder().scheme(Breakwater.of(BW)).transport(Transport.NIO)
          .port(taken.getLocalPort()).handler((req, alloc) -> req.retainedDuplicate());
      assertThrows(java.net.BindException.class, () -> b.build().start());
    }
    int closedPort;
    try (java.net.ServerSocket probe = new java.net.ServerSocket(0, 50, java.net.InetAddress.getByName("127.0.0.1"))) {
      closedPort = probe.getLocalPort(); // free once closed: nothing listens there
    }
    SpillwayClient.Builder c = SpillwayClient.builder().scheme(Breakwater.of(BW)).transport(Transport.NIO)
        .port(closedPort);
    assertThrows(java.net.ConnectException.class, () -> c.build().start());
    java.util.function.Supplier<List<String>> started = () -> Thread.getAllStackTraces().keySet().stream()
        .filter(t -> !before.contains(t) && t.isAlive() && !t.isDaemon()
            && !t.getName().startsWith("globalEventExecutor")) // Netty's, ends by itself when idle
        .map(Thread::getName).toList();
    try {
      waitUntil(() -> started.get().isEmpty());
    } catch (AssertionError e) {
      throw new AssertionError("threads left running by a failed start: " + started.get(), e);
    }
  }

  /**
   * A response that names its request but another session than the request's is malformed: the
   * client closes the connection and the call fails with a clear error instead of waiting for an
   * answer that has already come. The server here is a raw socket.
   */
  @Test
  void aResponseNamingAnotherSessionThanItsRequestsFailsTheCall() throws Exception {
    try (java.net.ServerSocket listener = new java.net.ServerSocket(0, 50, java.net.InetAddress.getByName("127.0.0.1"));
         SpillwayClient client = SpillwayClient.builder().scheme(NoControl.INSTANCE).transport(Transport.NIO)
             .port(listener.getLocalPort()).sloNanos(10_000_000_000L).build().start();
         Socket raw = listener.accept()) {
      raw.setSoTimeout((int) TimeUnit.SECONDS.toMillis(WAIT_SECONDS));
      CompletableFuture<byte[]> call = client.session(0).call(new byte[] {1});
      byte[] head = raw.getInputStream().readNBytes(Frame.HEADER_SIZE);
      RequestMetadata request = Frame.readRequest(Unpooled.wrappedBuffer(head), new RequestMetadata());
      raw.getInputStream().readNBytes((int) Frame.payloadLength(Unpooled.wrappedBuffer(head)));
      var out = Unpooled.buffer();
      Frame.writeResponse(out, Frame.TYPE_RESPONSE, new ResponseMetadata().sessionId(request.sessionId() + 1000)
          .requestId(request.requestId()).status(Status.OK), 0);
      out.readBytes(raw.getOutputStream(), out.readableBytes());
      raw.getOutputStream().flush();
      out.release();
      ExecutionException e = assertThrows(ExecutionException.class, () -> call.get(WAIT_SECONDS, TimeUnit.SECONDS));
      assertInstanceOf(ConnectionClosedException.class, e.getCause());
    }
  }

  /**
   * A client that accepts payloads up to the largest limit reads a response header declaring nearly
   * 2 GiB as a frame still arriving: it waits for the payload, allocating nothing for it, and when
   * the server closes first the call fails with the closed connection, not with the client tearing
   * it down. The header size added to such a length overflows an int; a decoder that compared that
   * sum took the header for a whole frame, allocated the 2 GiB and failed reading it.
   */
  @Test
  void aResponseHeaderDeclaringNearly2GiBIsAwaitedNotAllocated() throws Exception {
    java.util.logging.Logger log = java.util.logging.Logger.getLogger(SpillwayClient.class.getName());
    List<String> warnings = new java.util.concurrent.CopyOnWriteArrayList<>();
    java.util.logging.Handler recording = new java.util.logging.Handler() {
      @Override
      public void publish(java.util.logging.LogRecord record) {
        if (record.getLevel().intValue() >= java.util.logging.Level.WARNING.intValue()) {
          warnings.add(record.getMessage());
        }
      }

      @Override
      public void flush() { }

      @Override
      public void close() { }
    };
    log.addHandler(recording);
    try (java.net.ServerSocket listener = new java.net.ServerSocket(0, 50, java.net.InetAddress.getByName("127.0.0.1"));
         SpillwayClient client = SpillwayClient.builder().scheme(NoControl.INSTANCE).transport(Transport.NIO)
             .port(listener.getLocalPort()).sloNanos(10_000_000_000L).maxPayload(Integer.MAX_VALUE).build().start();
         Socket raw = listener.accept()) {
      raw.setSoTimeout((int) TimeUnit.SECONDS.toMillis(WAIT_SECONDS));
      CompletableFuture<byte[]> call = client.session(0).call(new byte[] {1});
      byte[] head = raw.getInputStream().readNBytes(Frame.HEADER_SIZE);
      RequestMetadata request = Frame.readRequest(Unpooled.wrappedBuffer(head), new RequestMetadata());
      raw.getInputStream().readNBytes((int) Frame.payloadLength(Unpooled.wrappedBuffer(head)));
      var out = Unpooled.buffer();
      Frame.writeResponse(out, Frame.TYPE_RESPONSE, new ResponseMetadata().sessionId(request.sessionId())
          .requestId(request.requestId()).status(Status.OK), Integer.MAX_VALUE - 8);
      out.writeZero(16);
      out.readBytes(raw.getOutputStream(), out.readableBytes());
      raw.getOutputStream().flush();
      out.release();
      raw.close(); // the rest of the payload never comes
      ExecutionException e = assertThrows(ExecutionException.class, () -> call.get(WAIT_SECONDS, TimeUnit.SECONDS));
      assertInstanceOf(ConnectionClosedException.class, e.getCause());
      assertEquals(List.of(), warnings, "the client refused a frame that was still arriving");
    } finally {
      log.removeHandler(recording);
    }
  }

  /**
   * A payload longer than the frame limit the client speaks with ({@link
   * SpillwayClient.Builder#maxPayload}, the server's default by default) is refused at the call,
   * with a clear error, instead of being sent: the server would close the connection on that
   * malformed frame, failing every call of every session on it, and the client does not reconnect.
   */
  @Test
  void anOversizedPayloadIsRefusedAtTheCallAndTheConnectionKeepsWorking() throws Exception {
    try (SpillwayServer server = echoServer(NoControl.INSTANCE, Transport.NIO);
         SpillwayClient client = client(NoControl.INSTANCE, server, 1, 2)) {
      byte[] oversized = new byte[Frame.DEFAULT_MAX_PAYLOAD + 1];
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> client.session(1).call(oversized).get(WAIT_SECONDS, TimeUnit.SECONDS));
      assertTrue(e.getMessage().contains(String.valueOf(Frame.DEFAULT_MAX_PAYLOAD)), e.getMessage());
      assertArrayEquals(new byte[] {5}, client.session(0).call(new byte[] {5}).get(WAIT_SECONDS, TimeUnit.SECONDS),
          "the other session's call on the same connection is served");
      byte[] largest = new byte[Frame.DEFAULT_MAX_PAYLOAD];
      assertEquals(largest.length, client.session(1).call(largest).get(WAIT_SECONDS, TimeUnit.SECONDS).length);
    }
  }

  /**
   * A response longer than the frame limit ({@link SpillwayServer.Builder#maxPayload}, the
   * client's too by default) would be a malformed frame to the client, which closes the connection
   * on it, failing every call of every session there: the server answers that request {@code
   * FAILED} instead, and the connection keeps working.
   */
  @Test
  void aResponseOverTheFrameLimitFailsItsRequestAndTheConnectionKeepsWorking() throws Exception {
    try (SpillwayServer server = SpillwayServer.builder().scheme(NoControl.INSTANCE).transport(Transport.NIO)
             .handler((req, alloc) -> req.getByte(req.readerIndex()) == 0
                 ? alloc.buffer(Frame.DEFAULT_MAX_PAYLOAD + 1).writeZero(Frame.DEFAULT_MAX_PAYLOAD + 1)
                 : req.retainedDuplicate()).build().start();
         SpillwayClient client = client(NoControl.INSTANCE, server, 1, 2)) {
      ExecutionException e = assertThrows(ExecutionException.class,
          () -> client.session(1).call(new byte[] {0}).get(WAIT_SECONDS, TimeUnit.SECONDS));
      OverloadRejectedException failed = assertInstanceOf(OverloadRejectedException.class, e.getCause());
      assertEquals(Status.FAILED, failed.status());
      assertArrayEquals(new byte[] {5}, client.session(0).call(new byte[] {5}).get(WAIT_SECONDS, TimeUnit.SECONDS),
          "the other session's call on the same connection is served");
    }
  }

  /**
   * After the client is closed a session has nothing to tell the server (its connection's close
   * deregistered it): {@link SpillwayClient.Session#deregister} does nothing, and a call fails
   * with {@link ConnectionClosedException}, neither throwing from its stopped event loop.
   */
  @Test
  void aSessionOfAClosedClientDeregistersQuietlyAndFailsItsCalls() throws Exception {
    try (SpillwayServer server = echoServer(NoControl.INSTANCE, Transport.NIO)) {
      SpillwayClient client = client(NoControl.INSTANCE, server, 1, 1);
      client.session(0).call(new byte[] {1}).get(WAIT_SECONDS, TimeUnit.SECONDS);
      client.close();
      client.session(0).deregister();
      ExecutionException e = assertThrows(ExecutionException.class,
          () -> client.session(0).call(new byte[] {2}).get(WAIT_SECONDS, TimeUnit.SECONDS));
      assertInstanceOf(ConnectionClosedException.class, e.getCause());
    }
  }

  /**
   * A session that sends its whole burst at once, ignoring its window: while the request it was
   * admitted is unanswered (its handler held on a latch), the server decides on one more (refused
   * for want of credit) and reads nothing else from that connection; once answers flow, each
   * refusal waits for the next answer, so refusals never outnumber what was served by more than
   * one. Every request is answered exactly once. Without the hold the server decides on the whole
   * burst as soon as it is read.
   */
  @Test
  void aSessionRefusedForCreditIsNotReadUntilItsConnectionIsAnswered() throws Exception {
    int burst = 200;
    CountDownLatch release = new CountDownLatch(1);
    java.util.Map<Status, java.util.concurrent.atomic.AtomicInteger> decided = new java.util.concurrent.ConcurrentHashMap<>();
    io.spillway.api.OverloadMetrics counting = new io.spillway.api.OverloadMetrics() {
      @Override
      public void onAdmission(Status decision) {
        decided.computeIfAbsent(decision, d -> new java.util.concurrent.atomic.AtomicInteger()).incrementAndGet();
      }
    };
    java.util.function.ToIntFunction<Status> count = st -> {
      var c = decided.get(st);
      return c == null ? 0 : c.get();
    };
    Capturing scheme = new Capturing(Breakwater.of(BW));
    try (SpillwayServer server = SpillwayServer.builder().scheme(scheme).parallelism(2).metrics(counting)
        .handler((req, alloc) -> {
          release.await();
          return req.retainedDuplicate();
        }).build().start();
         Socket raw = new Socket("127.0.0.1", server.port())) {
      raw.setSoTimeout((int) TimeUnit.SECONDS.toMillis(WAIT_SECONDS)); // a bug fails, not hangs
      var buf = Unpooled.buffer();
      for (int i = 0; i < burst; i++) {
        Frame.writeRequest(buf, Frame.TYPE_REQUEST, new RequestMetadata().sessionId(42).requestId(i)
            .flags(i == 0 ? RequestMetadata.FLAG_REGISTER : 0), 1);
        buf.writeByte(i);
      }
      OutputStream out = raw.getOutputStream();
      buf.readBytes(out, buf.readableBytes());
      out.flush();
      buf.release();
      java.io.DataInputStream in = new java.io.DataInputStream(raw.getInputStream());
      ResponseMetadata answer = new ResponseMetadata();
      // The first answer is a refusal (the admitted request is held in its handler); the server
      // flushes after the batch it decoded, so by now it has decided on all it will before an answer.
      readResponse(in, answer);
      assertEquals(Status.REJECTED_NO_CREDIT, answer.status(), "only a refusal can come first");
      int served = 0;
      int refused = 1;
      assertTrue(count.applyAsInt(Status.OK) >= 1, "the registering request was admitted: " + decided);
      assertEquals(1, count.applyAsInt(Status.REJECTED_NO_CREDIT),
          "decided on more than its window and one refusal while nothing was answered: " + decided);
      assertEquals(1, server.heldConnections.get());
      release.countDown();
      while (served + refused < burst) {
        readResponse(in, answer);
        if (answer.status() == Status.OK) {
          served++;
        } else {
          assertEquals(Status.REJECTED_NO_CREDIT, answer.status());
          refused++;
        }
      }
      assertEquals(burst, count.applyAsInt(Status.OK) + count.applyAsInt(Status.REJECTED_NO_CREDIT),
          "every request decided once: " + decided);
      assertTrue(refused <= served + 1, "a refusal per answer at most: " + served + " served, " + refused + " refused");
      waitUntil(() -> scheme.leakChecked.get().outstanding() == 0);
      scheme.leakChecked.get().assertNoLeaks();
      assertEquals(0, server.heldConnections.get());
    }
  }

  /**
   * A refusal with nothing owed on its connection (here: sessions beyond the connection's cap, each
   * refused) has no answer to wait for; its hold ends by its timeout, so every refused request is
   * still answered, in order, and the registered session's request behind them is served.
   */
  @Test
  void aHoldWithNothingOwedEndsWithoutAnAnswer() throws Exception {
    int refusedCount = 20;
    try (SpillwayServer server = SpillwayServer.builder().scheme(NoControl.INSTANCE).parallelism(2)
        .maxSessionsPerConnection(1).handler((req, alloc) -> req.retainedDuplicate()).build().start();
         Socket raw = new Socket("127.0.0.1", server.port())) {
      raw.setSoTimeout((int) TimeUnit.SECONDS.toMillis(WAIT_SECONDS)); // a hold that never ends fails
      OutputStream out = raw.getOutputStream();
      java.io.DataInputStream in = new java.io.DataInputStream(raw.getInputStream());
      var buf = Unpooled.buffer();
      Frame.writeRequest(buf, Frame.TYPE_REQUEST, new RequestMetadata().sessionId(1).requestId(0), 1);
      buf.writeByte(0);
      buf.readBytes(out, buf.readableBytes());
      out.flush();
      ResponseMetadata answer = new ResponseMetadata();
      readResponse(in, answer);
      assertEquals(Status.OK, answer.status());
      for (int i = 1; i <= refusedCount; i++) {
        Frame.writeRequest(buf, Frame.TYPE_REQUEST, new RequestMetadata().sessionId(2).requestId(i), 1);
        buf.writeByte(i);
      }
      Frame.writeRequest(buf, Frame.TYPE_REQUEST, new RequestMetadata().sessionId(1).requestId(99), 1);
      buf.writeByte(99);
      buf.readBytes(out, buf.readableBytes());
      out.flush();
      buf.release();
      for (int i = 1; i <= refusedCount; i++) {
        readResponse(in, answer);
        assertEquals(Status.REJECTED_NO_CREDIT, answer.status());
        assertEquals(i, answer.requestId());
      }
      readResponse(in, answer);
      assertEquals(Status.OK, answer.status());
      assertEquals(99, answer.requestId());
      waitUntil(() -> server.heldConnections.get() == 0);
    }
  }

  /** Reads response frames from a raw connection until one of type response, into {@code into}. */
  private static void readResponse(java.io.DataInputStream in, ResponseMetadata into) throws java.io.IOException {
    byte[] header = new byte[Frame.HEADER_SIZE];
    while (true) {
      in.readFully(header);
      var h = Unpooled.wrappedBuffer(header);
      in.skipNBytes(Frame.payloadLength(h));
      if (Frame.type(h) == Frame.TYPE_RESPONSE) {
        Frame.readResponse(h, into);
        return;
      }
    }
  }

  /**
   * With no dispatcher given and the JVM opened for it (this module's tests run with {@code
   * --add-opens java.base/java.lang}), requests run on the carrier dispatcher, and a request waiting
   * for the one carrier, which another holds by spinning, is in the gate's signal: the server's
   * ticker moves 5 ms while it waits and the signal reads at least that.
   */
  @Test
  void theDefaultDispatchersQueueIsAStageOfTheGatesSignal() throws Exception {
    java.util.concurrent.atomic.AtomicLong clock = new java.util.concurrent.atomic.AtomicLong(1_000_000_000L);
    Capturing watching = new Capturing(NoControl.INSTANCE);
    java.util.concurrent.atomic.AtomicBoolean spin = new java.util.concurrent.atomic.AtomicBoolean(true);
    CountDownLatch spinning = new CountDownLatch(1);
    try (SpillwayServer server = SpillwayServer.builder().scheme(watching).parallelism(1).ticker(clock::get)
        .handler((req, alloc) -> {
          if (req.getByte(req.readerIndex()) == 0) {
            spinning.countDown();
            while (spin.get()) {
              Thread.onSpinWait(); // holds the carrier: a spinning virtual thread does not yield it
            }
          }
          return req.retainedDuplicate();
        }).build().start();
         SpillwayClient client = client(NoControl.INSTANCE, server, 1, 1)) {
      CompletableFuture<byte[]> first = client.session(0).call(new byte[] {0});
      assertTrue(spinning.await(WAIT_SECONDS, TimeUnit.SECONDS));
      CompletableFuture<byte[]> second = client.session(0).call(new byte[] {1});
      io.spillway.asqm.CarrierDispatcher carriers =
          assertInstanceOf(io.spillway.asqm.CarrierDispatcher.class, server.dispatcher());
      waitUntil(() -> carriers.queued() == 1); // the second waits for the one carrier
      clock.addAndGet(5_000_000);
      io.spillway.api.QueueDelaySignal signal = watching.environment.get().queueDelay();
      assertTrue(signal.queueingDelayNanos(clock.get()) >= 5_000_000,
          "the carrier queue's wait is not in the signal: " + signal.queueingDelayNanos(clock.get()));
      spin.set(false);
      assertArrayEquals(new byte[] {0}, first.get(WAIT_SECONDS, TimeUnit.SECONDS));
      assertArrayEquals(new byte[] {1}, second.get(WAIT_SECONDS, TimeUnit.SECONDS));
    }
  }

  @Test
  void explicitCreditsReachADrainedSession() throws Exception {
    // Demand synchronisation: after each response a session with no demand keeps no credit, so its
    // next call needs a demand message and an explicit credit back.
    OverloadScheme scheme = Breakwater.creditsOnly(BW);
    try (SpillwayServer server = echoServer(scheme, Transport.select());
         SpillwayClient client = client(scheme, server, 1, 1)) {
      for (int i = 0; i < 10; i++) {
        assertArrayEquals(new byte[] {(byte) i},
            client.session(0).call(new byte[] {(byte) i}).get(WAIT_SECONDS, TimeUnit.SECONDS));
      }
    }
  }

  @Test
  void blockingCallsFromVirtualThreads() throws Exception {
    try (SpillwayServer server = echoServer(Breakwater.of(BW), Transport.select());
         SpillwayClient client = client(Breakwater.of(BW), server, 1, 8);
         var threads = java.util.concurrent.Executors.newVirtualThreadPerTaskExecutor()) {
      List<java.util.concurrent.Future<byte[]>> results = new ArrayList<>();
      for (int i = 0; i < 64; i++) {
        int n = i;
        results.add(threads.submit(() -> client.session(n % 8).callBlocking(new byte[] {(byte) n})));
      }
      for (int i = 0; i < 64; i++) {
        assertArrayEquals(new byte[] {(byte) i}, results.get(i).get(WAIT_SECONDS, TimeUnit.SECONDS));
      }
    }
  }

  private static void waitUntil(java.util.function.BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - deadline > 0) {
        throw new AssertionError("condition not reached within " + WAIT_SECONDS + " s");
      }
      Thread.onSpinWait();
      Thread.yield();
    }
  }

  /**
   * A budget the client sent is a deadline for starting: spent while queued on the server, the
   * request is answered REJECTED_BUDGET and its handler never runs. The server's clock moves 2 ms
   * on every read, so any request waits at least 2 ms between its decode and its dispatch, whatever
   * the threads do: 1 ms of budget is always spent, an hour never is.
   */
  @ParameterizedTest
  @EnumSource(Threading.class)
  void aRequestWhoseClientBudgetIsSpentBeforeItRunsIsAbortedUnrun(Threading threading) throws Exception {
    java.util.concurrent.atomic.AtomicLong clock = new java.util.concurrent.atomic.AtomicLong();
    java.util.concurrent.atomic.AtomicInteger ran = new java.util.concurrent.atomic.AtomicInteger();
    try (SpillwayServer server = SpillwayServer.builder().scheme(NoControl.INSTANCE).threading(threading)
             .parallelism(1).ticker(() -> clock.addAndGet(2_000_000))
             .handler((req, alloc) -> {
               ran.incrementAndGet();
               return req.retainedDuplicate();
             }).build().start();
         Socket raw = new Socket("127.0.0.1", server.port())) {
      raw.setSoTimeout((int) TimeUnit.SECONDS.toMillis(WAIT_SECONDS));
      assertEquals(Status.REJECTED_BUDGET, callRaw(raw, 1, 1_000_000L));
      assertEquals(0, ran.get(), "an aborted request's handler must not run");
      assertEquals(Status.OK, callRaw(raw, 2, TimeUnit.HOURS.toNanos(1)));
      assertEquals(Status.OK, callRaw(raw, 3, Long.MAX_VALUE)); // no budget
      assertEquals(2, ran.get());
    }
  }

  /**
   * With a server budget (ASQM on), Protego's check at the run queue (protego-nsdi23 §3.2): a
   * request the queue's delay would already keep past its budget is refused before it queues,
   * {@code REJECTED_BUDGET}, its handler never run; within its budget, or with a budget header
   * alone (no server budget), it is served. The dispatcher's queueing delay is set by hand.
   */
  @Test
  void aRequestTheRunQueueWouldKeepPastItsBudgetIsRefusedBeforeItQueues() throws Exception {
    java.util.concurrent.atomic.AtomicLong delay = new java.util.concurrent.atomic.AtomicLong();
    java.util.concurrent.atomic.AtomicInteger ran = new java.util.concurrent.atomic.AtomicInteger();
    java.util.concurrent.ExecutorService workers = java.util.concurrent.Executors.newVirtualThreadPerTaskExecutor();
    RequestHandler echo = (req, alloc) -> {
      ran.incrementAndGet();
      return req.retainedDuplicate();
    };
    try (SpillwayServer server = SpillwayServer.builder().scheme(NoControl.INSTANCE).parallelism(1)
             .dispatcher(workers, now -> delay.get()).queueingBudgetNanos(5_000_000).handler(echo)
             .build().start();
         SpillwayServer headerOnly = SpillwayServer.builder().scheme(NoControl.INSTANCE).parallelism(1)
             .dispatcher(workers, now -> delay.get()).handler(echo).build().start();
         Socket raw = new Socket("127.0.0.1", server.port());
         Socket rawHeaderOnly = new Socket("127.0.0.1", headerOnly.port())) {
      raw.setSoTimeout((int) TimeUnit.SECONDS.toMillis(WAIT_SECONDS));
      rawHeaderOnly.setSoTimeout((int) TimeUnit.SECONDS.toMillis(WAIT_SECONDS));
      delay.set(3_000_000);
      assertEquals(Status.OK, callRaw(raw, 1, Long.MAX_VALUE), "3 ms of queue in a 5 ms budget");
      delay.set(6_000_000);
      assertEquals(Status.REJECTED_BUDGET, callRaw(raw, 2, Long.MAX_VALUE), "6 ms outlasts the server's 5 ms");
      delay.set(3_000_000);
      assertEquals(Status.REJECTED_BUDGET, callRaw(raw, 3, 2_000_000L), "the header's 2 ms is the smaller");
      assertEquals(1, ran.get(), "a refused request's handler never runs");
      // A second of header budget against ten of run queue: the request's own wait, measured on
      // this machine's clock, stays far inside it however busy the machine is.
      delay.set(10_000_000_000L);
      assertEquals(Status.OK, callRaw(rawHeaderOnly, 4, 1_000_000_000L),
          "without a server budget a header budget bounds only the request's own wait");
      assertEquals(2, ran.get());
    } finally {
      workers.shutdownNow();
    }
  }

  /**
   * Each admitted request's permit hears {@link ServerPermit#started} once its handler is about to
   * run, not at admission (the dispatcher's queue lies between) and not only at completion: a limit
   * on waiting requests depends on it. Requests go one at a time, so the k-th handler must find
   * exactly k permits started.
   */
  @ParameterizedTest
  @EnumSource(Threading.class)
  void aPermitIsStartedAsItsHandlerGetsTheRequest(Threading threading) throws Exception {
    java.util.concurrent.atomic.AtomicInteger admitted = new java.util.concurrent.atomic.AtomicInteger();
    java.util.concurrent.atomic.AtomicInteger started = new java.util.concurrent.atomic.AtomicInteger();
    List<String> seen = java.util.Collections.synchronizedList(new ArrayList<>());
    OverloadScheme recording = serverOnly("recording", request -> {
      admitted.incrementAndGet();
      return new AbstractServerPermit(Status.OK) {
        private volatile boolean once; // set on the worker, read on the event loop

        @Override
        public void started(long nowNanos) {
          if (!once) {
            once = true;
            started.incrementAndGet();
          }
        }

        @Override
        protected void onComplete(Outcome outcome, long now, ResponseMetadata response) {
          seen.add("completed " + (once ? "started" : "unstarted"));
        }
      };
    });
    try (SpillwayServer server = SpillwayServer.builder().scheme(recording).threading(threading)
             .parallelism(1)
             .handler((req, alloc) -> {
               seen.add("handler: " + started.get() + " started of " + admitted.get() + " admitted");
               return req.retainedDuplicate();
             }).build().start();
         SpillwayClient client = client(NoControl.INSTANCE, server, 1, 1)) {
      for (int i = 0; i < 3; i++) {
        client.session(0).call(new byte[] {1}).get(WAIT_SECONDS, TimeUnit.SECONDS);
      }
      waitUntil(() -> seen.size() == 6);
      assertEquals(List.of("handler: 1 started of 1 admitted", "completed started",
          "handler: 2 started of 2 admitted", "completed started",
          "handler: 3 started of 3 admitted", "completed started"), seen);
    }
  }

  /** A scheme whose server gate decides each request with {@code decide}; clients send at once. */
  private static OverloadScheme serverOnly(String name,
      java.util.function.Function<RequestMetadata, ServerPermit> decide) {
    return new OverloadScheme() {
      @Override
      public String name() {
        return name;
      }

      @Override
      public ServerGate newServerGate(ServerEnvironment environment) {
        return new ServerGate() {
          @Override
          public ServerPermit admit(RequestMetadata request, long nowNanos) {
            return decide.apply(request);
          }

          @Override
          public void deregister(long sessionId, long nowNanos) { }
        };
      }

      @Override
      public <R> ClientGate<R> newClientGate(ClientEnvironment environment) {
        return NoControl.INSTANCE.newClientGate(environment);
      }
    };
  }

  /** Sends one request frame with a one-byte payload and {@code budgetNanos}; returns the answer's status. */
  private static Status callRaw(Socket raw, long requestId, long budgetNanos) throws Exception {
    return callRaw(raw, 7, requestId, budgetNanos);
  }

  /** As {@link #callRaw(Socket, long, long)}, on session {@code sessionId}. */
  private static Status callRaw(Socket raw, long sessionId, long requestId, long budgetNanos) throws Exception {
    var out = Unpooled.buffer();
    Frame.writeRequest(out, Frame.TYPE_REQUEST,
        new RequestMetadata().sessionId(sessionId).requestId(requestId).budgetNanos(budgetNanos), 1);
    out.writeByte(42);
    byte[] bytes = new byte[out.readableBytes()];
    out.readBytes(bytes);
    out.release();
    raw.getOutputStream().write(bytes);
    raw.getOutputStream().flush();
    byte[] head = raw.getInputStream().readNBytes(Frame.HEADER_SIZE);
    assertEquals(Frame.HEADER_SIZE, head.length, "the server closed the connection");
    var in = Unpooled.wrappedBuffer(head);
    long payload = Frame.payloadLength(in);
    ResponseMetadata response = Frame.readResponse(in, new ResponseMetadata());
    raw.getInputStream().readNBytes((int) payload);
    assertEquals(requestId, response.requestId());
    return response.status();
  }
}
