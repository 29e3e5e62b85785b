package io.spillway.kv;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.DictionaryEntries;
import com.code_intelligence.jazzer.junit.FuzzTest;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.ReferenceCountUtil;
import java.nio.charset.StandardCharsets;

/**
 * The memcached text parser against arbitrary bytes, cut into reads at arbitrary points, as a
 * client's stream reaches {@link TextProtocolHandler}: every command is answered, refused or
 * makes the connection close, and the handler never throws. Once the connection is gone, every
 * used chunk belongs to a live item (a half-read value is given back) and no connection is left
 * paused. In the build Jazzer replays the corpus in {@code TextProtocolFuzzTestInputs/} and an
 * empty input; {@code ./spillway fuzz kv-text --seconds N} fuzzes.
 *
 * <p>The handler runs in an {@link EmbeddedChannel}, without sockets, so that a run reaches
 * millions of inputs; {@link TextProtocolRandomSessionTest} covers the same parser on a real
 * socket. Every input starts on a store flushed of what earlier inputs stored (their chunks are
 * still held, as memcached's flush holds them until reused), so a kept input replays alone. The
 * gate's clock never moves, so no refusal depends on how fast the fuzzer runs.
 */
class TextProtocolFuzzTest {

  private static final long FROZEN = Long.MAX_VALUE - 1_000_000_000L;
  private static final byte[] FLUSH = "flush_all\r\n".getBytes(StandardCharsets.US_ASCII);

  /** One server for every input, started by the first; its port is bound but unused. */
  private static KvServer server;

  private static synchronized KvServer server() {
    if (server == null) {
      try {
        // the clock is a method of this class, not of a holder class still being initialised:
        // the gate's timer reads it on the event loop while the server starts
        server = KvServer.builder().host("127.0.0.1").port(0).memoryMegabytes(16)
            .protection(KvServer.Protection.SPILLWAY).ticker(TextProtocolFuzzTest::frozen).build()
            .start();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
      Runtime.getRuntime().addShutdownHook(new Thread(server::close));
    }
    return server;
  }

  private static long frozen() {
    return FROZEN;
  }

  @DictionaryEntries({"get ", "gets ", "set ", "add ", "replace ", "append ", "prepend ", "cas ",
      "delete ", "incr ", "decr ", "touch ", "flush_all", "version", "verbosity ", "stats",
      "stats slabs", "stats reset", "quit", " noreply", "\\x0d\\x0a", " 0 0 ", "18446744073709551615",
      "-1", "4294967296"})
  @FuzzTest(maxDuration = "2m")
  void anyStreamIsAnsweredOrClosedNeverThrown(FuzzedDataProvider data) {
    KvServer server = server();
    long failures = server.handlerFailures();
    flush(server);
    EmbeddedChannel channel = new EmbeddedChannel(new TextProtocolHandler(server, null));
    try {
      // the cut points come from the end of the input, the stream from its start
      while (data.remainingBytes() > 0 && channel.isOpen()) {
        int read = data.consumeInt(1, 600);
        channel.writeInbound(Unpooled.wrappedBuffer(data.consumeBytes(read)));
        drain(channel);
      }
    } finally {
      channel.finishAndReleaseAll();
    }
    if (server.handlerFailures() != failures) {
      throw new AssertionError("the handler threw", server.lastHandlerFailure());
    }
    SlabAllocator.Usage u = server.store().slabs().usage();
    if (u.usedChunks() != server.store().items()) {
      throw new AssertionError(u.usedChunks() + " chunks used for " + server.store().items()
          + " items: a value's chunk was not given back");
    }
    if (server.pausedConnections() != 0) {
      throw new AssertionError("a closed connection is still counted as paused");
    }
  }

  /** memcached's flush_all on a connection of its own: what earlier inputs stored is gone. */
  private static void flush(KvServer server) {
    EmbeddedChannel channel = new EmbeddedChannel(new TextProtocolHandler(server, null));
    channel.writeInbound(Unpooled.wrappedBuffer(FLUSH));
    channel.finishAndReleaseAll();
  }

  /** Takes the replies, as a client that reads everything it is sent. */
  private static void drain(EmbeddedChannel channel) {
    for (Object reply; (reply = channel.readOutbound()) != null; ) {
      ReferenceCountUtil.release(reply);
    }
  }
}
