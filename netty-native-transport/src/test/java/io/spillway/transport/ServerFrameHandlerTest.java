package io.spillway.transport;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.ReferenceCountUtil;
import io.spillway.api.AbstractServerPermit;
import io.spillway.api.ClientEnvironment;
import io.spillway.api.ClientGate;
import io.spillway.api.NoControl;
import io.spillway.api.Outcome;
import io.spillway.api.OverloadScheme;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.ServerEnvironment;
import io.spillway.api.ServerGate;
import io.spillway.api.ServerPermit;
import io.spillway.api.Status;
import io.spillway.api.testing.LeakCheckingServerGate;
import io.spillway.api.testing.VirtualClock;
import io.spillway.transport.internal.Frame;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

/**
 * One connection's {@link ServerFrameHandler} on an {@link EmbeddedChannel}: the bytes it is given
 * and the tasks it leaves are run by the test, the dispatcher is a queue the test drains and the
 * server's clock is virtual, so every step is deterministic. The server is started (its gate,
 * dispatcher and limits come from there) but no connection reaches its socket.
 */
class ServerFrameHandlerTest {

  /** The session whose requests the gate refuses ({@code REJECTED_AQM}); it admits every other. */
  private static final long REFUSED = 9;

  private final VirtualClock clock = new VirtualClock();
  /** Readings of the server's clock, which is {@link #clock}. */
  private final AtomicInteger clockReads = new AtomicInteger();
  private final ArrayDeque<Runnable> dispatched = new ArrayDeque<>();
  private final AtomicReference<LeakCheckingServerGate> gate = new AtomicReference<>();
  /** How each admitted request's permit ended, in the order they ended. */
  private final List<Outcome> ended = Collections.synchronizedList(new ArrayList<>());

  /** Admits every request but those of {@link #REFUSED}; records how admitted ones end in {@link #ended}. */
  private final OverloadScheme refusingOneSession = new OverloadScheme() {
    @Override
    public String name() {
      return "refuses-session-" + REFUSED;
    }

    @Override
    public ServerGate newServerGate(ServerEnvironment environment) {
      return new ServerGate() {
        @Override
        public ServerPermit admit(RequestMetadata request, long nowNanos) {
          if (request.sessionId() == REFUSED) {
            return new AbstractServerPermit(Status.REJECTED_AQM) {
              @Override
              protected void onComplete(Outcome outcome, long now, ResponseMetadata response) { }
            };
          }
          return new AbstractServerPermit(Status.OK) {
            @Override
            protected void onComplete(Outcome outcome, long now, ResponseMetadata response) {
              ended.add(outcome);
            }
          };
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

  /** An echo server whose requests wait in {@link #dispatched}; {@code options} sets the rest. */
  private SpillwayServer echoServer(UnaryOperator<SpillwayServer.Builder> options)
      throws Exception {
    return options.apply(SpillwayServer.builder().transport(Transport.NIO)
        .ticker(() -> {
          clockReads.incrementAndGet();
          return clock.read();
        })
        .scheme(LeakCheckingServerGate.checking(refusingOneSession, gate::set))
        .dispatcher(dispatched::add, QueueDelaySignal.NONE)
        .handler((req, alloc) -> req.retainedDuplicate())).build().start();
  }

  private static EmbeddedChannel connection(SpillwayServer server) {
    EmbeddedChannel ch = new EmbeddedChannel();
    // named as the server's pipeline names it: bind() looks the handler up by that name
    ch.pipeline().addLast("spillway-server", new ServerFrameHandler(server));
    return ch;
  }

  /**
   * Appends to {@code b} a request header declaring {@code declared} payload bytes, followed by
   * {@code sent} of them; returns {@code b}.
   */
  private static ByteBuf request(ByteBuf b, long session, long id, int declared, int sent) {
    RequestMetadata header = new RequestMetadata().sessionId(session).requestId(id);
    Frame.writeRequest(b, Frame.TYPE_REQUEST, header, declared);
    return b.writeZero(sent);
  }

  private void runDispatched() {
    Runnable next;
    while ((next = dispatched.poll()) != null) {
      next.run();
    }
  }

  private static ServerFrameHandler handler(EmbeddedChannel ch) {
    return (ServerFrameHandler) ch.pipeline().get("spillway-server");
  }

  /** {@code length} bytes that differ from their neighbours, so a slice off by one shows. */
  private static byte[] pattern(int length) {
    byte[] bytes = new byte[length];
    for (int i = 0; i < length; i++) {
      bytes[i] = (byte) (i % 251);
    }
    return bytes;
  }

  /**
   * With the payload limit at its largest, a header declaring nearly 2 GiB is decided on at once,
   * and its request then waits for its payload: no payload is sliced out of what has come, nothing
   * is dispatched, the connection keeps reading, and the permit ends when the connection closes.
   * The header size added to such a length overflows an int; a decoder that compared that sum
   * took the header for a whole frame and dispatched a request whose payload it could not read.
   */
  @Test
  void aLengthNearTheLargestLimitWaitsForItsPayload() throws Exception {
    try (SpillwayServer server = echoServer(b -> b.maxPayload(Integer.MAX_VALUE))) {
      EmbeddedChannel ch = connection(server);
      ch.writeInbound(request(Unpooled.buffer(), 1, 1, Integer.MAX_VALUE - 8, 16));
      ch.runPendingTasks();
      assertEquals(1, gate.get().issued(), "decided on at its header");
      assertTrue(ch.isOpen(), "the connection was closed over a frame still arriving");
      assertTrue(dispatched.isEmpty(), "dispatched a request whose payload has not arrived");
      assertNull(ch.readOutbound(), "answered a request whose payload has not arrived");
      ch.close();
      ch.runPendingTasks();
      gate.get().assertNoLeaks();
      assertEquals(List.of(Outcome.FAILED), ended);
      ch.finishAndReleaseAll();
    }
  }

  /**
   * A request the gate refuses is answered as soon as its header has arrived, before the rest of
   * its payload (docs/design.md, "Drop as early as possible"), and its payload is skipped as it
   * comes, none of it kept by the decoder: a refused 1 MiB request sent in pieces leaves nothing
   * held. The frame after it, in the same read as the payload's last bytes, is decoded and
   * answered as usual.
   */
  @Test
  void aRefusedRequestIsAnsweredAtItsHeaderAndItsPayloadSkippedAsItArrives() throws Exception {
    try (SpillwayServer server = echoServer(b -> b)) {
      EmbeddedChannel ch = connection(server);
      ServerFrameHandler handler = handler(ch);
      int declared = Frame.DEFAULT_MAX_PAYLOAD;
      ch.writeInbound(request(Unpooled.buffer(), REFUSED, 1, declared, 1_000));
      ch.runPendingTasks();
      ResponseMetadata refusal = readAnswer(ch, "no answer once the refused request's header had arrived");
      assertEquals(1, refusal.requestId());
      assertEquals(Status.REJECTED_AQM, refusal.status());
      assertEquals(0, handler.heldBytes(), "bytes of a refused payload held");

      int left = declared - 1_000;
      int piece = left / 4;
      for (int i = 0; i < 3; i++) {
        ch.writeInbound(Unpooled.buffer(piece).writeZero(piece));
        ch.runPendingTasks();
        assertEquals(0, handler.heldBytes(), "bytes of a refused payload held after piece " + i);
        assertNull(ch.readOutbound(), "answered again");
      }
      ByteBuf last = Unpooled.buffer().writeZero(left - 3 * piece);
      request(last, 1, 2, 3, 0).writeBytes(new byte[] {7, 8, 9});
      ch.writeInbound(last);
      assertEquals(0, handler.heldBytes(), "bytes held after the payload and the next frame");
      assertEquals(1, dispatched.size(), "the frame after the refused payload");
      runDispatched();
      ch.runPendingTasks();
      ResponseMetadata echo = readAnswer(ch, "no answer to the frame after the refused payload");
      assertEquals(2, echo.requestId());
      assertEquals(Status.OK, echo.status());
      assertArrayEquals(new byte[] {7, 8, 9}, readPayload(ch));
      assertEquals(2, gate.get().issued());
      gate.get().assertNoLeaks();
      assertEquals(List.of(Outcome.SUCCESS), ended);
      assertFalse(ch.finishAndReleaseAll(), "more written than the two answers");
    }
  }

  /**
   * A request admitted at its header, whose header and payload both arrive in pieces, runs once,
   * when its payload is whole, with its payload's bytes; nothing runs or is answered before. The
   * next frame, in the same read as the payload's end, is decided on at once.
   */
  @Test
  void anAdmittedRequestWhosePayloadArrivesInPiecesRunsOnceWhenWhole() throws Exception {
    try (SpillwayServer server = echoServer(b -> b)) {
      EmbeddedChannel ch = connection(server);
      byte[] payload = pattern(10_000);
      ByteBuf frame = request(Unpooled.buffer(), 1, 1, payload.length, 0).writeBytes(payload);
      ch.writeInbound(frame.readRetainedSlice(40)); // part of the header
      assertEquals(0, gate.get().issued(), "decided on part of a header");
      ch.writeInbound(frame.readRetainedSlice(Frame.HEADER_SIZE - 40 + 100));
      assertEquals(1, gate.get().issued(), "not decided on at its header");
      assertEquals(1, gate.get().admitted());
      while (frame.readableBytes() > 3_000) {
        ch.writeInbound(frame.readRetainedSlice(3_000));
        ch.runPendingTasks();
        assertTrue(dispatched.isEmpty(), "dispatched before its payload was whole");
        assertNull(ch.readOutbound(), "answered before its payload was whole");
      }
      ByteBuf last = frame.readRetainedSlice(frame.readableBytes());
      frame.release();
      ch.writeInbound(Unpooled.wrappedBuffer(last, request(Unpooled.buffer(), REFUSED, 2, 5, 0)));
      assertEquals(1, dispatched.size(), "dispatched once when whole");
      ch.runPendingTasks();
      ResponseMetadata refusal = readAnswer(ch, "the frame after the payload was not decided on");
      assertEquals(2, refusal.requestId());
      assertEquals(Status.REJECTED_AQM, refusal.status());

      runDispatched();
      ch.runPendingTasks();
      ResponseMetadata echo = readAnswer(ch, "no answer to the admitted request");
      assertEquals(1, echo.requestId());
      assertEquals(Status.OK, echo.status());
      assertArrayEquals(payload, readPayload(ch), "the payload it ran with");
      ch.writeInbound(Unpooled.buffer().writeZero(5)); // the refused request's payload
      assertEquals(0, handler(ch).heldBytes());
      gate.get().assertNoLeaks();
      assertEquals(List.of(Outcome.SUCCESS), ended);
      assertFalse(ch.finishAndReleaseAll(), "more written than the two answers");
    }
  }

  /**
   * A connection that closes while an admitted request's payload is still arriving ends that
   * request's permit exactly once, as {@link Outcome#FAILED}: it never ran, and its end says
   * nothing about load. Nothing is dispatched, and no hold or pause is left behind.
   */
  @Test
  void aConnectionClosedWhileAnAdmittedPayloadArrivesEndsItsPermitOnce() throws Exception {
    try (SpillwayServer server = echoServer(b -> b)) {
      EmbeddedChannel ch = connection(server);
      ch.writeInbound(request(Unpooled.buffer(), 1, 1, 4_096, 1_000));
      ch.runPendingTasks();
      assertEquals(1, gate.get().issued(), "not decided on at its header");
      assertEquals(1, gate.get().outstanding());
      ch.close();
      ch.runPendingTasks();
      gate.get().assertNoLeaks();
      assertEquals(List.of(Outcome.FAILED), ended);
      assertTrue(dispatched.isEmpty(), "dispatched a request whose payload never came");
      assertEquals(0, server.heldConnections.get(), "held connections");
      assertEquals(0, server.pausedConnections.get(), "paused connections");
      assertFalse(ch.finishAndReleaseAll(), "answered on a closed connection");
    }
  }

  /**
   * A request admitted at its header whose payload stalls holds its permit only until the payload
   * timeout: then its connection closes and the permit ends once, {@link Outcome#FAILED}, unrun.
   * Before the timeout nothing happens; the time is Netty's, frozen and moved by the test.
   */
  @Test
  void aPayloadStalledPastItsTimeoutClosesItsConnectionAndEndsItsPermitOnce() throws Exception {
    long timeout = 5_000_000;
    try (SpillwayServer server = echoServer(b -> b.payloadTimeoutNanos(timeout))) {
      EmbeddedChannel ch = connection(server);
      ch.freezeTime();
      ch.writeInbound(request(Unpooled.buffer(), 1, 1, 4_096, 1_000));
      ch.runPendingTasks();
      assertEquals(1, gate.get().outstanding(), "not decided on at its header");
      ch.advanceTimeBy(timeout - 1, java.util.concurrent.TimeUnit.NANOSECONDS);
      ch.runScheduledPendingTasks();
      assertTrue(ch.isOpen(), "closed before its timeout");
      assertEquals(1, gate.get().outstanding());
      ch.writeInbound(Unpooled.buffer().writeZero(1_000)); // progress does not restart the timeout
      ch.advanceTimeBy(1, java.util.concurrent.TimeUnit.NANOSECONDS);
      ch.runScheduledPendingTasks();
      ch.runPendingTasks();
      assertFalse(ch.isOpen(), "a stalled payload kept its connection past the timeout");
      gate.get().assertNoLeaks();
      assertEquals(List.of(Outcome.FAILED), ended);
      assertTrue(dispatched.isEmpty(), "dispatched a request whose payload never came");
      assertFalse(ch.finishAndReleaseAll(), "answered on a closed connection");
    }
  }

  /**
   * A payload that is whole before its timeout runs, and the timer it set goes with it: the
   * connection stays open past the timeout, and the request ends once, a success.
   */
  @Test
  void aPayloadWholeInTimeCancelsItsTimeout() throws Exception {
    long timeout = 5_000_000;
    try (SpillwayServer server = echoServer(b -> b.payloadTimeoutNanos(timeout))) {
      EmbeddedChannel ch = connection(server);
      ch.freezeTime();
      ch.writeInbound(request(Unpooled.buffer(), 1, 1, 4_096, 1_000));
      ch.advanceTimeBy(timeout - 1, java.util.concurrent.TimeUnit.NANOSECONDS);
      ch.writeInbound(Unpooled.buffer().writeZero(3_096));
      assertEquals(-1, ch.runScheduledPendingTasks(), "the payload's timer outlived it");
      ch.advanceTimeBy(timeout, java.util.concurrent.TimeUnit.NANOSECONDS);
      ch.runScheduledPendingTasks();
      assertTrue(ch.isOpen(), "closed a connection whose payload came in time");
      assertEquals(1, dispatched.size());
      runDispatched();
      ch.runPendingTasks();
      gate.get().assertNoLeaks();
      assertEquals(List.of(Outcome.SUCCESS), ended);
      ByteBuf answer = ch.readOutbound();
      assertNotNull(answer, "no answer");
      ReferenceCountUtil.release(answer);
      ch.finishAndReleaseAll();
    }
  }

  /**
   * A header that has begun to arrive and stalls keeps its connection only until the payload
   * timeout, counted from its first bytes: nothing was decided on, so nothing ends but the
   * connection, and the bytes held for it go with the decoder's buffer. More of the header before
   * the timeout does not restart it, as more of a payload does not.
   */
  @Test
  void aHeaderStalledPastTheTimeoutClosesItsConnection() throws Exception {
    long timeout = 5_000_000;
    try (SpillwayServer server = echoServer(b -> b.payloadTimeoutNanos(timeout))) {
      EmbeddedChannel ch = connection(server);
      ch.freezeTime();
      ByteBuf frame = request(Unpooled.buffer(), 1, 1, 8, 8);
      ch.writeInbound(frame.readRetainedSlice(Frame.HEADER_SIZE / 2));
      ch.advanceTimeBy(timeout - 1, java.util.concurrent.TimeUnit.NANOSECONDS);
      ch.runScheduledPendingTasks();
      assertTrue(ch.isOpen(), "closed before its timeout");
      ch.writeInbound(frame.readRetainedSlice(Frame.HEADER_SIZE / 4)); // progress does not restart it
      frame.release();
      assertEquals(Frame.HEADER_SIZE * 3 / 4, handler(ch).heldBytes());
      ch.advanceTimeBy(1, java.util.concurrent.TimeUnit.NANOSECONDS);
      ch.runScheduledPendingTasks();
      ch.runPendingTasks();
      assertFalse(ch.isOpen(), "a stalled header kept its connection past the timeout");
      assertEquals(0, gate.get().issued(), "decided on part of a header");
      assertTrue(ended.isEmpty());
      assertFalse(ch.finishAndReleaseAll(), "answered on a closed connection");
    }
  }

  /**
   * A header that is whole before the timeout takes its timer with it; the request it starts, its
   * payload in the same read, runs and is answered, and the connection stays open past the timeout.
   */
  @Test
  void aHeaderWholeInTimeCancelsItsTimeout() throws Exception {
    long timeout = 5_000_000;
    try (SpillwayServer server = echoServer(b -> b.payloadTimeoutNanos(timeout))) {
      EmbeddedChannel ch = connection(server);
      ch.freezeTime();
      ByteBuf frame = request(Unpooled.buffer(), 1, 1, 8, 8);
      ch.writeInbound(frame.readRetainedSlice(Frame.HEADER_SIZE / 2));
      ch.advanceTimeBy(timeout - 1, java.util.concurrent.TimeUnit.NANOSECONDS);
      ch.writeInbound(frame);
      assertEquals(-1, ch.runScheduledPendingTasks(), "the header's timer outlived it");
      ch.advanceTimeBy(timeout, java.util.concurrent.TimeUnit.NANOSECONDS);
      ch.runScheduledPendingTasks();
      assertTrue(ch.isOpen(), "closed a connection whose header came in time");
      runDispatched();
      ch.runPendingTasks();
      assertEquals(Status.OK, readAnswer(ch).status());
      readPayload(ch);
      gate.get().assertNoLeaks();
      assertEquals(List.of(Outcome.SUCCESS), ended);
      ch.finishAndReleaseAll();
    }
  }

  /**
   * A connection between requests, nothing of a next frame read, is idle, not stalled: whole
   * frames read whole set no timer, and the connection stays open however long it waits.
   */
  @Test
  void anIdleConnectionBetweenRequestsHasNoTimeout() throws Exception {
    long timeout = 5_000_000;
    try (SpillwayServer server = echoServer(b -> b.payloadTimeoutNanos(timeout))) {
      EmbeddedChannel ch = connection(server);
      ch.freezeTime();
      for (int id = 1; id <= 2; id++) {
        ch.writeInbound(request(request(Unpooled.buffer(), 1, id, 8, 8), REFUSED, 100 + id, 8, 8));
        runDispatched();
        ch.runPendingTasks();
        assertEquals(-1, ch.runScheduledPendingTasks(), "a timer set for frames read whole");
        assertEquals(0, handler(ch).heldBytes());
        ch.advanceTimeBy(100 * timeout, java.util.concurrent.TimeUnit.NANOSECONDS);
        ch.runScheduledPendingTasks();
        assertTrue(ch.isOpen(), "an idle connection closed");
      }
      gate.get().assertNoLeaks();
      assertEquals(List.of(Outcome.SUCCESS, Outcome.SUCCESS), ended);
      ch.finishAndReleaseAll();
    }
  }

  /**
   * Part of a header read just before the server stops reading its connection (held for credit,
   * an answer owed) waits on the server, not on its client: the timeout passes without closing,
   * and once the hold ends and the rest comes, the request is served.
   */
  @Test
  void aHeaderTheServerStoppedReadingIsNotCutOff() throws Exception {
    long timeout = 5_000_000;
    try (SpillwayServer server = echoServer(b -> b.payloadTimeoutNanos(timeout).maxSessionsPerConnection(1))) {
      EmbeddedChannel ch = connection(server);
      ch.freezeTime();
      ByteBuf frames = Unpooled.buffer();
      request(frames, 1, 1, 1, 1); // admitted, and waits in the dispatcher: an answer is owed
      request(frames, 2, 2, 0, 0); // a session over the cap: refused, and the connection held
      ByteBuf next = request(Unpooled.buffer(), 1, 3, 1, 1);
      frames.writeBytes(next, Frame.HEADER_SIZE / 2);
      ch.writeInbound(frames);
      ch.runPendingTasks();
      assertEquals(1, server.heldConnections.get(), "not held");
      assertEquals(Status.REJECTED_NO_CREDIT, readAnswer(ch).status());
      ch.advanceTimeBy(3 * timeout, java.util.concurrent.TimeUnit.NANOSECONDS);
      ch.runScheduledPendingTasks();
      assertTrue(ch.isOpen(), "closed on a wait the server made");

      runDispatched(); // the owed answer ends the hold
      ch.runPendingTasks();
      assertEquals(1, readAnswer(ch).requestId());
      readPayload(ch);
      ch.writeInbound(next);
      runDispatched();
      ch.runPendingTasks();
      assertEquals(3, readAnswer(ch, "no answer once the header was whole").requestId());
      readPayload(ch);
      assertEquals(-1, ch.runScheduledPendingTasks(), "the header's timer outlived it");
      gate.get().assertNoLeaks();
      assertEquals(List.of(Outcome.SUCCESS, Outcome.SUCCESS), ended);
      ch.finishAndReleaseAll();
    }
  }

  @Test
  void aPayloadTimeoutMustBePositive() {
    IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
        () -> SpillwayServer.builder().scheme(NoControl.INSTANCE).handler((req, alloc) -> req.retain())
            .payloadTimeoutNanos(0).build());
    assertTrue(e.getMessage().contains("payloadTimeoutNanos=0"), e.getMessage());
  }

  /** As when it closes, when the handler is taken off the connection: the permit ends once, FAILED. */
  @Test
  void aHandlerRemovedWhileAnAdmittedPayloadArrivesEndsItsPermitOnce() throws Exception {
    try (SpillwayServer server = echoServer(b -> b)) {
      EmbeddedChannel ch = connection(server);
      ch.writeInbound(request(Unpooled.buffer(), 1, 1, 4_096, 1_000));
      assertEquals(1, gate.get().outstanding(), "not decided on at its header");
      ch.pipeline().remove("spillway-server");
      gate.get().assertNoLeaks();
      assertEquals(List.of(Outcome.FAILED), ended);
      ch.close();
      ch.runPendingTasks();
      gate.get().assertNoLeaks();
      assertTrue(dispatched.isEmpty());
      ch.finishAndReleaseAll(); // the bytes the decoder held, passed on as it was removed
    }
  }

  /**
   * Whole frames read together, admitted and refused in turn, are answered in the order they came
   * when requests run as they are dispatched, each admitted one with its own payload.
   */
  @Test
  void pipelinedFramesAreAnsweredInOrder() throws Exception {
    try (SpillwayServer server = echoServer(b -> b.dispatcher(Runnable::run, QueueDelaySignal.NONE))) {
      EmbeddedChannel ch = connection(server);
      ByteBuf frames = Unpooled.buffer();
      request(frames, 1, 1, 1, 0).writeByte('a');
      request(frames, REFUSED, 2, 100, 100);
      request(frames, 1, 3, 0, 0);
      request(frames, REFUSED, 4, 0, 0);
      request(frames, 1, 5, 5, 0).writeBytes(new byte[] {'h', 'e', 'l', 'l', 'o'});
      request(frames, 1, 6, 3, 2); // its last byte comes later
      ch.writeInbound(frames);
      ch.runPendingTasks();
      List<String> answers = new ArrayList<>();
      ByteBuf head;
      while ((head = ch.readOutbound()) != null) {
        ResponseMetadata answer = Frame.readResponse(head, new ResponseMetadata());
        long length = Frame.payloadLength(head);
        head.release();
        answers.add(answer.requestId() + " " + answer.status()
            + (length == 0 ? "" : " " + new String(readPayload(ch), java.nio.charset.StandardCharsets.US_ASCII)));
      }
      assertEquals(List.of("1 OK a", "2 REJECTED_AQM", "3 OK", "4 REJECTED_AQM", "5 OK hello"), answers);
      ch.writeInbound(Unpooled.buffer().writeByte(0));
      ch.runPendingTasks();
      assertEquals(6, readAnswer(ch, "no answer once the last payload was whole").requestId());
      readPayload(ch);
      assertEquals(0, handler(ch).heldBytes());
      gate.get().assertNoLeaks();
      assertEquals(List.of(Outcome.SUCCESS, Outcome.SUCCESS, Outcome.SUCCESS, Outcome.SUCCESS), ended);
      ch.finishAndReleaseAll();
    }
  }

  /**
   * A request's queueing budget starts when its payload is whole and it can first run, not at its
   * header: the payload's transfer is network time, which a budget already leaves out. One whose
   * payload takes five times its budget to come, and which then waits in no queue, runs.
   */
  @Test
  void aPayloadsTransferDoesNotSpendItsQueueingBudget() throws Exception {
    try (SpillwayServer server = echoServer(b -> b)) {
      EmbeddedChannel ch = connection(server);
      ByteBuf frame = Unpooled.buffer();
      Frame.writeRequest(frame, Frame.TYPE_REQUEST,
          new RequestMetadata().sessionId(1).requestId(1).budgetNanos(1_000_000), 8);
      ch.writeInbound(frame.writeZero(4));
      clock.advance(5_000_000);
      ch.writeInbound(Unpooled.buffer().writeZero(4));
      runDispatched();
      ch.runPendingTasks();
      assertEquals(Status.OK, readAnswer(ch).status());
      readPayload(ch);
      gate.get().assertNoLeaks();
      assertEquals(List.of(Outcome.SUCCESS), ended);
      ch.finishAndReleaseAll();
    }
  }

  /**
   * A frame read whole costs the event loop one clock reading, admitted or refused; a payload that
   * comes after its header costs one more, when it is whole.
   */
  @Test
  void aWholeFrameReadsTheClockOnce() throws Exception {
    try (SpillwayServer server = echoServer(b -> b)) {
      EmbeddedChannel ch = connection(server);
      clockReads.set(0);
      ch.writeInbound(request(request(Unpooled.buffer(), 1, 1, 8, 8), REFUSED, 2, 8, 8));
      assertEquals(2, clockReads.get(), "clock readings for two whole frames");
      assertEquals(1, dispatched.size());
      clockReads.set(0);
      ch.writeInbound(request(Unpooled.buffer(), 1, 3, 8, 4));
      ch.writeInbound(Unpooled.buffer().writeZero(4));
      assertEquals(2, clockReads.get(), "clock readings for a frame whose payload came later");
      assertEquals(2, dispatched.size());
      runDispatched();
      ch.runPendingTasks();
      gate.get().assertNoLeaks();
      ch.finishAndReleaseAll();
    }
  }

  /**
   * A connection that closes while held for credit, with frames read and not yet decoded, leaves
   * no hold and no pause behind: the frames are dropped undecided (no answer could reach the
   * client), and the server's counts of held and paused connections come back to zero. The decoder
   * decodes what it holds once more as the channel goes inactive; decoded then, a frame found the
   * closed channel unwritable and counted the connection as paused for good.
   */
  @Test
  void aConnectionClosedWhileHeldLeavesNothingHeldOrPaused() throws Exception {
    try (SpillwayServer server = echoServer(b -> b.maxSessionsPerConnection(1))) {
      EmbeddedChannel ch = connection(server);
      ByteBuf frames = Unpooled.buffer();
      request(frames, 1, 1, 1, 1); // admitted, and waits in the dispatcher: an answer is owed
      request(frames, 2, 2, 1, 1); // a session over the cap: refused, and the connection held
      request(frames, 2, 3, 1, 1); // read, and not decoded while held
      ch.writeInbound(frames);
      ch.runPendingTasks();
      assertEquals(1, server.heldConnections.get());
      assertEquals(Status.REJECTED_NO_CREDIT, readAnswer(ch).status());
      assertEquals(1, gate.get().issued(), "decided on a frame read while held");

      ch.close();
      ch.runPendingTasks();
      assertEquals(0, server.heldConnections.get(), "held connections");
      assertEquals(0, server.pausedConnections.get(), "paused connections");
      assertEquals(1, gate.get().issued(), "decided on a frame after the connection closed");
      runDispatched(); // the owed answer ends its permit; the connection is gone
      gate.get().assertNoLeaks();
      ch.finishAndReleaseAll();
    }
  }

  /** The header of the next answer the handler wrote; its buffer is released. */
  private static ResponseMetadata readAnswer(EmbeddedChannel ch) {
    return readAnswer(ch, "no answer written");
  }

  /** As {@link #readAnswer(EmbeddedChannel)}, failing with {@code missing} if none was written. */
  private static ResponseMetadata readAnswer(EmbeddedChannel ch, String missing) {
    ByteBuf head = ch.readOutbound();
    assertNotNull(head, missing);
    try {
      return Frame.readResponse(head, new ResponseMetadata());
    } finally {
      head.release();
    }
  }

  /** The bytes of the next buffer the handler wrote, an answer's payload; the buffer is released. */
  private static byte[] readPayload(EmbeddedChannel ch) {
    ByteBuf payload = ch.readOutbound();
    assertNotNull(payload, "no payload written");
    try {
      return ByteBufUtil.getBytes(payload);
    } finally {
      payload.release();
    }
  }
}
