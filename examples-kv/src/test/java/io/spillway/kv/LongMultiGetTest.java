package io.spillway.kv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A {@code get}/{@code gets} line longer than {@link TextProtocolHandler#MAX_LINE}: memcached
 * answers a multi-get of any length (protocol.txt: "get <key>*"), and bulk gets of real clients
 * send one line for thousands of keys. The handler runs in an {@link EmbeddedChannel}, the line
 * cut into reads, and every admitted command must end exactly once (a leak-checking gate).
 */
@Timeout(60)
class LongMultiGetTest {

  private final FrameSchemes.LeakChecks leaks = new FrameSchemes.LeakChecks();
  private final RefuseChosen refusing = new RefuseChosen();
  private KvServer server;
  private EmbeddedChannel channel;

  @BeforeEach
  void start() throws Exception {
    server = KvServer.builder().host("127.0.0.1").port(0).memoryMegabytes(8)
        .protection(KvServer.Protection.NONE).textSchemeWrapper(s -> leaks.wrap(refusing)).build()
        .start();
    channel = new EmbeddedChannel(new TextProtocolHandler(server, null));
  }

  @AfterEach
  void stop() throws Exception {
    try {
      channel.finishAndReleaseAll();
      leaks.assertEveryRequestEndedOnce();
      SlabAllocator.Usage u = server.store().slabs().usage();
      assertEquals(server.store().items(), u.usedChunks(),
          "every used chunk belongs to a live item");
    } finally {
      server.close();
    }
  }

  /** Sends {@code input} in reads of {@code piece} bytes and returns everything answered. */
  private String exchange(String input, int piece) {
    byte[] b = input.getBytes(StandardCharsets.US_ASCII);
    StringBuilder reply = new StringBuilder();
    for (int at = 0; at < b.length && channel.isOpen(); at += piece) {
      channel.writeInbound(Unpooled.wrappedBuffer(b, at, Math.min(piece, b.length - at)));
      for (Object o; (o = channel.readOutbound()) != null; ) {
        ByteBuf buf = (ByteBuf) o;
        reply.append(buf.toString(StandardCharsets.US_ASCII));
        buf.release();
      }
    }
    return reply.toString();
  }

  private static String keys(int n) {
    StringBuilder s = new StringBuilder();
    for (int i = 0; i < n; i++) {
      s.append(" bulk-key-").append(i);
    }
    return s.toString();
  }

  @Test
  void aMultiGetLineOfThousandsOfKeysIsAnsweredInFull() {
    String keys = keys(3000); // about 40 KiB
    assertTrue(keys.length() > 2 * TextProtocolHandler.MAX_LINE);
    String want = "STORED\r\nSTORED\r\nVALUE bulk-key-7 1 1\r\na\r\n"
        + "VALUE bulk-key-2999 2 2\r\nbb\r\nEND\r\nVALUE bulk-key-7 1 1\r\na\r\nEND\r\n";
    for (int piece : new int[] {keys.length() + 100, 1000, 7}) {
      assertEquals(want, exchange("set bulk-key-7 1 0 1\r\na\r\nset bulk-key-2999 2 0 2\r\nbb\r\n"
          + "get" + keys + "\r\nget bulk-key-7\r\n", piece), "reads of " + piece + " bytes");
      assertTrue(channel.isOpen());
    }
    String gets = exchange("gets" + keys + "\nget nothing\r\n", 4096);
    assertTrue(gets.matches("VALUE bulk-key-7 1 1 [0-9]+\r\na\r\nVALUE bulk-key-2999 2 2 [0-9]+\r\n"
        + "bb\r\nEND\r\nEND\r\n"), gets);
  }

  @Test
  void aLongKeyInALongMultiGetLineIsAClientErrorAndTheRestOfTheLineIsSkipped() {
    String keys = keys(3000);
    String line = "get" + keys + " " + "k".repeat(251) + keys + "\r\nget bulk-key-7\r\n";
    exchange("set bulk-key-7 0 0 1\r\nx\r\n", 100);
    // read at once, as memcached: the error is the whole reply
    assertEquals("CLIENT_ERROR bad command line format\r\nVALUE bulk-key-7 0 1\r\nx\r\nEND\r\n",
        exchange(line, line.length()));
    // in reads: what was sent before the bad key arrived stays sent, and the error ends the reply
    assertEquals("VALUE bulk-key-7 0 1\r\nx\r\nCLIENT_ERROR bad command line format\r\n"
        + "VALUE bulk-key-7 0 1\r\nx\r\nEND\r\n", exchange(line, 1000));
    assertEquals("CLIENT_ERROR bad command line format\r\nEND\r\n",
        exchange("get" + keys(100).replace("bulk", "none") + " "
            + "k".repeat(3 * TextProtocolHandler.MAX_LINE) + keys + "\r\nget nothing\r\n", 1000));
  }

  @Test
  void aRefusedLongMultiGetIsAnsweredOnceAndTheRestOfTheLineIsSkipped() {
    refusing.refuse(1);
    String reply = exchange("get" + keys(3000) + "\r\nget nothing\r\n", 1000);
    assertEquals(server.rejectLine(io.spillway.api.Status.REJECTED_AQM).length + 5,
        reply.length(), reply);
    assertTrue(reply.startsWith("SERVER_ERROR overloaded") && reply.endsWith("\r\nEND\r\n"), reply);
    assertEquals(1, refusing.refused());
  }

  @Test
  void aLongLineThatIsNoMultiGetStillClosesTheConnection() {
    assertEquals("CLIENT_ERROR line too long\r\n",
        exchange("set" + keys(3000) + "\r\n", 1000));
    assertTrue(!channel.isOpen());
  }
}
