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
 * connection closes, the chunk is freed and the permit ends once. The handler runs in an {@link
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
