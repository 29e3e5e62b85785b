package io.spillway.kv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * An admitted command whose input stalls, a value or the rest of a long multi-get line, holds its
 * permit (and a value its chunk) only until {@link KvServer.Builder#inputTimeout}: then the
 * connection closes, the chunk is freed and the permit ends once. A command line left without its
 * newline has as long. A connection between commands is not timed. The handler runs in an {@link
 * EmbeddedChannel} whose time is frozen and moved by the test.
 */
@Timeout(60)
class StalledInputTest {

  private static final long TIMEOUT = TimeUnit.MILLISECONDS.toNanos(5);

  private final FrameSchemes.LeakChecks leaks = new FrameSchemes.LeakChecks();
  private final RefuseChosen refusing = new RefuseChosen();
  private KvServer server;
  private EmbeddedChannel channel;

  @BeforeEach
  void start() throws Exception {
    server = KvServer.builder().host("127.0.0.1").port(0).memoryMegabytes(8)
        .inputTimeout(Duration.ofNanos(TIMEOUT))
        .protection(KvServer.Protection.NONE).textSchemeWrapper(s -> leaks.wrap(refusing)).build()
        .start();
    channel = new EmbeddedChannel();
    channel.freezeTime();
    channel.pipeline().addLast(new TextProtocolHandler(server, null));
  }

  @AfterEach
  void stop() throws Exception {
    try {
      channel.finishAndReleaseAll();
      leaks.assertEveryRequestEndedOnce();
      SlabAllocator.Usage u = server.store().slabs().usage();
      assertEquals(server.store().items(), u.usedChunks(), "every used chunk belongs to a live item");
    } finally {
      server.close();
    }
  }

  private String send(String input) {
    channel.writeInbound(Unpooled.copiedBuffer(input, StandardCharsets.US_ASCII));
    StringBuilder reply = new StringBuilder();
    for (Object o; (o = channel.readOutbound()) != null; ) {
      ByteBuf buf = (ByteBuf) o;
      reply.append(buf.toString(StandardCharsets.US_ASCII));
      buf.release();
    }
    return reply.toString();
  }

  private void advance(long nanos) {
    channel.advanceTimeBy(nanos, TimeUnit.NANOSECONDS);
    channel.runScheduledPendingTasks();
    channel.runPendingTasks();
  }

  @Test
  void aValueStalledPastTheTimeoutClosesTheConnectionAndFreesItsChunk() {
    assertEquals("", send("set k 0 0 4096\r\n" + "v".repeat(1000)));
    assertEquals(1, server.store().slabs().usage().usedChunks(), "the value's chunk is reserved");
    advance(TIMEOUT - 1);
    assertTrue(channel.isOpen(), "closed before the timeout");
    advance(1);
    assertFalse(channel.isOpen(), "a stalled value kept its connection past the timeout");
    assertEquals(0, server.store().slabs().usage().usedChunks(), "the stalled value's chunk");
  }

  @Test
  void aValueThatComesInTimeIsStoredAndItsTimerGoes() {
    assertEquals("", send("set k 0 0 4096\r\n" + "v".repeat(1000)));
    advance(TIMEOUT - 1);
    assertEquals("STORED\r\n", send("v".repeat(3096) + "\r\n"));
    assertEquals(-1, channel.runScheduledPendingTasks(), "the value's timer outlived it");
    advance(TIMEOUT);
    assertTrue(channel.isOpen());
    assertEquals("VALUE k 0 4096\r\n" + "v".repeat(4096) + "\r\nEND\r\n", send("get k\r\n"));
  }

  /**
   * A value the server stops reading, because its client does not read its replies, is the
   * server's wait, not the client's stall: the timeout passes without closing, and the value,
   * read again once the client drains, is stored.
   */
  @Test
  void aValueTheServerStoppedReadingIsNotCutOff() {
    assertEquals("", send("set k 0 0 4096\r\n" + "v".repeat(1000)));
    channel.unsafe().outboundBuffer().setUserDefinedWritability(1, false); // the client stops reading
    channel.runPendingTasks();
    assertEquals("", send("v".repeat(1000)));
    assertFalse(channel.config().isAutoRead(), "not paused");
    advance(3 * TIMEOUT);
    assertTrue(channel.isOpen(), "closed on a wait the server made");
    channel.unsafe().outboundBuffer().setUserDefinedWritability(1, true);
    channel.runPendingTasks();
    assertEquals("STORED\r\n", send("v".repeat(2096) + "\r\n"));
    advance(TIMEOUT);
    assertTrue(channel.isOpen());
  }

  @Test
  void aLongMultiGetLineStalledPastTheTimeoutClosesTheConnection() {
    StringBuilder keys = new StringBuilder("get");
    while (keys.length() <= TextProtocolHandler.MAX_LINE + 100) {
      keys.append(" key-").append(keys.length());
    }
    send(keys.toString()); // admitted, its line still open
    advance(TIMEOUT - 1);
    assertTrue(channel.isOpen());
    advance(1);
    assertFalse(channel.isOpen(), "a stalled multi-get line kept its connection past the timeout");
  }

  /**
   * A command line begun and left without its newline keeps its connection only until the timeout,
   * counted from the read that left it so; more of the line meanwhile does not restart it. Nothing
   * was admitted, so nothing ends but the connection, which takes the buffered bytes with it.
   */
  @Test
  void aCommandLineStalledPastTheTimeoutClosesTheConnection() {
    assertEquals("", send("set k 0 0"));
    advance(TIMEOUT - 1);
    assertTrue(channel.isOpen(), "closed before the timeout");
    assertEquals("", send(" 4")); // progress does not restart it
    advance(1);
    assertFalse(channel.isOpen(), "a command line left without its newline kept its connection past the timeout");
    assertEquals(0, server.store().slabs().usage().usedChunks());
  }

  @Test
  void aCommandLineThatCompletesInTimeRunsAndItsTimerGoes() {
    assertEquals("", send("get k"));
    advance(TIMEOUT - 1);
    assertEquals("END\r\n", send("\r\n"));
    assertEquals(-1, channel.runScheduledPendingTasks(), "the line's timer outlived it");
    advance(TIMEOUT);
    assertTrue(channel.isOpen());
  }

  /**
   * A connection between commands, no part of a next one read, is idle, not stalled: whole
   * commands read whole set no timer, and the connection stays open however long it waits.
   */
  @Test
  void anIdleConnectionBetweenCommandsHasNoTimer() {
    assertEquals("STORED\r\n", send("set k 0 0 1\r\nv\r\n"));
    assertEquals(-1, channel.runScheduledPendingTasks(), "a timer set for a command read whole");
    advance(100 * TIMEOUT);
    assertTrue(channel.isOpen(), "an idle connection closed");
    assertEquals("VALUE k 0 1\r\nv\r\nEND\r\n", send("get k\r\n"));
    assertEquals(-1, channel.runScheduledPendingTasks(), "a timer set for a command read whole");
    advance(100 * TIMEOUT);
    assertTrue(channel.isOpen(), "an idle connection closed");
  }

  /**
   * Part of a command line read while the server stops reading, because its client does not read
   * its replies, waits on the server: the timeout passes without closing, and the line, completed
   * once the client drains, is answered.
   */
  @Test
  void aCommandLineTheServerStoppedReadingIsNotCutOff() {
    assertEquals("", send("get "));
    channel.unsafe().outboundBuffer().setUserDefinedWritability(1, false); // the client stops reading
    channel.runPendingTasks();
    assertEquals("", send("k"));
    assertFalse(channel.config().isAutoRead(), "not paused");
    advance(3 * TIMEOUT);
    assertTrue(channel.isOpen(), "closed on a wait the server made");
    channel.unsafe().outboundBuffer().setUserDefinedWritability(1, true);
    channel.runPendingTasks();
    assertEquals("END\r\n", send("\r\n"));
    assertEquals(-1, channel.runScheduledPendingTasks(), "the line's timer outlived it");
    advance(TIMEOUT);
    assertTrue(channel.isOpen());
  }

  @Test
  void aRefusedCommandsValueHasNoTimer() {
    refusing.refuse(1);
    assertTrue(send("set k 0 0 4096\r\n" + "v".repeat(1000)).startsWith("SERVER_ERROR overloaded"));
    assertEquals(-1, channel.runScheduledPendingTasks(), "a refused command holds nothing to time out");
    advance(10 * TIMEOUT);
    assertTrue(channel.isOpen());
  }

  @Test
  void anInputTimeoutMustBePositive() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> KvServer.builder().inputTimeout(Duration.ZERO));
    assertTrue(e.getMessage().contains("input timeout"), e.getMessage());
  }
}
