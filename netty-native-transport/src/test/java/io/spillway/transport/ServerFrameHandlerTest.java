package io.spillway.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.spillway.api.NoControl;
import io.spillway.api.QueueDelaySignal;
import io.spillway.api.RequestMetadata;
import io.spillway.api.ResponseMetadata;
import io.spillway.api.Status;
import io.spillway.api.testing.LeakCheckingServerGate;
import io.spillway.api.testing.VirtualClock;
import java.util.ArrayDeque;
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

  private final VirtualClock clock = new VirtualClock();
  private final ArrayDeque<Runnable> dispatched = new ArrayDeque<>();
  private final AtomicReference<LeakCheckingServerGate> gate = new AtomicReference<>();

  /** An echo server whose requests wait in {@link #dispatched}; {@code options} sets the rest. */
  private SpillwayServer echoServer(UnaryOperator<SpillwayServer.Builder> options)
      throws Exception {
    return options.apply(SpillwayServer.builder().transport(Transport.NIO).ticker(clock)
        .scheme(LeakCheckingServerGate.checking(NoControl.INSTANCE, gate::set))
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

  /**
   * With the payload limit at its largest, a header declaring nearly 2 GiB is a frame still
   * arriving: nothing is decided on it, no payload is sliced out of what has come, and the
   * connection keeps reading. The header size added to such a length overflows an int; a decoder
   * that compared that sum took the header for a whole frame and admitted a request whose payload
   * it could not read, leaving its permit open for good.
   */
  @Test
  void aLengthNearTheLargestLimitWaitsForItsPayload() throws Exception {
    try (SpillwayServer server = echoServer(b -> b.maxPayload(Integer.MAX_VALUE))) {
      EmbeddedChannel ch = connection(server);
      ch.writeInbound(request(Unpooled.buffer(), 1, 1, Integer.MAX_VALUE - 8, 16));
      ch.runPendingTasks();
      gate.get().assertNoLeaks();
      assertEquals(0, gate.get().issued(), "decided on a request whose payload has not arrived");
      assertTrue(ch.isOpen(), "the connection was closed over a frame still arriving");
      assertTrue(dispatched.isEmpty());
      ch.close();
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
    ByteBuf head = ch.readOutbound();
    try {
      return Frame.readResponse(head, new ResponseMetadata());
    } finally {
      head.release();
    }
  }
}
