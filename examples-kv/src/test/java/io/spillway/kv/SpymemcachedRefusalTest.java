package io.spillway.kv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.function.Function;
import java.util.stream.Stream;
import net.spy.memcached.ConnectionFactoryBuilder;
import net.spy.memcached.MemcachedClient;
import net.spy.memcached.ops.OperationException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * What an unmodified spymemcached client (text protocol) does when the store refuses one of its
 * commands, set up as {@link XmemcachedRefusalTest} sets it up: a command between two GETs on the
 * one connection, all three written before the server reads any, the middle one refused.
 *
 * <p>spymemcached ends the refused command with the server's error at once, but it treats every
 * {@code ERROR}, {@code CLIENT_ERROR} and {@code SERVER_ERROR} line as a broken connection: its
 * {@code OperationImpl.readFromBuffer} hands the line to {@code BaseOperationImpl.handleError},
 * which throws {@code OperationException}, and {@code MemcachedConnection.handleIO} answers that
 * exception by closing the socket and queueing a reconnect ({@code lostConnection}), which
 * cancels the commands already sent after the refused one ({@code setupResend}) and holds new
 * ones until the reconnect, seconds later. memcached's protocol.txt closes a connection only after
 * a "severe" server error and says so; the store's refusal is an ordinary per-command {@code
 * SERVER_ERROR}, the form memcached itself sends for a SET it cannot store, and spymemcached treats
 * that one the same way ({@link #memcachedsOwnStorageErrorAlsoCostsTheConnection}). These tests
 * pin that behaviour: a client's defect no reply form within the protocol avoids, documented in
 * docs/results/kv.md ("Real Java clients and refusals").
 */
@Timeout(180)
class SpymemcachedRefusalTest {

  static final long OP_TIMEOUT_MS = 20_000;

  /**
   * A command kind: how the client issues it, and how many lines it puts on the wire. A bulk GET's
   * future looks at cancellation before errors ({@code BulkGetFuture.internalGet}), and the
   * reconnect cancels the refused command too, already ended ({@code setupResend} cancels every
   * command still in the read queue, where the throw left it), so its caller may be told either.
   */
  record Kind(String name, int lines, Function<MemcachedClient, Future<?>> op, boolean mayReportCancelled) {
    Kind(String name, int lines, Function<MemcachedClient, Future<?>> op) {
      this(name, lines, op, false);
    }

    @Override
    public String toString() {
      return name;
    }
  }

  static volatile long casOfK1;

  static Stream<Kind> kinds() {
    return Stream.of(
        new Kind("get", 1, c -> c.asyncGet("k1")),
        new Kind("get of several keys", 1, c -> c.asyncGetBulk("k1", "k2", "absent"), true),
        new Kind("gets", 1, c -> c.asyncGets("k1")),
        new Kind("set", 2, c -> c.set("k1", 0, "x")),
        new Kind("add", 2, c -> c.add("new", 0, "x")),
        new Kind("replace", 2, c -> c.replace("k1", 0, "x")),
        new Kind("append", 2, c -> c.append(0, "k1", "x")),
        new Kind("prepend", 2, c -> c.prepend(0, "k1", "x")),
        new Kind("cas", 2, c -> c.asyncCAS("k1", casOfK1, "x")),
        new Kind("delete", 1, c -> c.delete("k2")),
        new Kind("incr", 1, c -> c.asyncIncr("n", 1)),
        new Kind("decr", 1, c -> c.asyncDecr("n", 1)),
        new Kind("touch", 1, c -> c.touch("k1", 100)));
  }

  static final RefuseChosen GATE = new RefuseChosen();
  static KvServer server;
  static HoldingProxy proxy;

  @BeforeAll
  static void start() throws Exception {
    server = KvServer.builder().host("127.0.0.1").port(0).memoryMegabytes(8)
        .textSchemeWrapper(s -> GATE).build().start();
    proxy = new HoldingProxy(server.port());
  }

  @AfterAll
  static void stop() throws Exception {
    proxy.close();
    server.close();
  }

  static MemcachedClient client() throws Exception {
    return new MemcachedClient(new ConnectionFactoryBuilder().setOpTimeout(OP_TIMEOUT_MS).build(),
        List.of(new InetSocketAddress("127.0.0.1", proxy.port())));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("kinds")
  void aRefusedCommandFailsAtOnceButTheClientDropsItsConnection(Kind kind) throws Exception {
    MemcachedClient c = client();
    try {
      assertTrue(c.set("a", 0, "va").get());
      assertTrue(c.set("b", 0, "vb").get());
      assertTrue(c.set("k1", 0, "v1").get());
      assertTrue(c.set("k2", 0, "v2").get());
      assertTrue(c.set("n", 0, "5").get());
      c.delete("new").get();
      casOfK1 = c.gets("k1").getCas();
      long connections = server.totalConnections();

      GATE.refuse(2);
      proxy.hold();
      Future<Object> before = c.asyncGet("a");
      Future<?> refused = kind.op.apply(c);
      Future<Object> after = c.asyncGet("b");
      proxy.awaitHeldLines(2 + kind.lines);
      proxy.release();

      assertEquals("va", before.get(), "the command before the refused one gets its own reply");
      ExecutionException e = assertThrows(ExecutionException.class, refused::get);
      if (!(kind.mayReportCancelled && e.getCause() instanceof CancellationException)) {
        OperationException error = assertInstanceOf(OperationException.class, e.getCause(),
            "the refusal ends the command with the server's error, not the client's timeout");
        assertTrue(error.getMessage().contains("SERVER_ERROR overloaded (queueing delay)"),
            error.getMessage());
      }
      ExecutionException lost = assertThrows(ExecutionException.class, after::get);
      assertInstanceOf(CancellationException.class, lost.getCause(),
          "spymemcached cancels the command sent after the refused one when it drops the connection");
      GATE.admitAll();

      assertEquals("va", c.get("a"), "the client works again once it has reconnected");
      assertEquals(connections + 1, server.totalConnections(), "the client opened a new connection");
      assertEquals("v1", c.get("k1"), "a refused write does nothing");
      assertEquals("v2", c.get("k2"));
      assertEquals("5", c.get("n"));
      assertNull(c.get("new"));
    } finally {
      GATE.admitAll();
      c.shutdown();
      proxy.reset();
    }
  }

  /**
   * A SET refused at its command line is answered while its value is still being sent (the relay
   * stalls it): spymemcached drops the connection as for any refusal. The GET queued behind the
   * SET is cancelled if the client had already put it in its write buffer, and otherwise goes out
   * on the new connection; which of the two depends on the client's writer thread.
   */
  @Test
  void aRefusalBeforeTheValueIsSentAlsoCostsTheConnection() throws Exception {
    MemcachedClient c = client();
    try {
      assertTrue(c.set("a", 0, "va").get());
      assertTrue(c.set("large", 0, "old").get());
      long connections = server.totalConnections();
      int refusedBefore = GATE.refused();
      byte[] large = new byte[900_000];
      new java.util.Random(3).nextBytes(large);
      GATE.refuse(1);
      proxy.stall();
      Future<Boolean> set = c.set("large", 0, large);
      FrameSchemes.waitUntil(() -> GATE.refused() == refusedBefore + 1); // refused, value unsent
      Future<Object> get = c.asyncGet("a");
      proxy.resume();

      ExecutionException e = assertThrows(ExecutionException.class, set::get);
      assertInstanceOf(OperationException.class, e.getCause());
      try {
        assertEquals("va", get.get(), "a GET sent after the reconnect gets its own value");
      } catch (ExecutionException lost) {
        assertInstanceOf(CancellationException.class, lost.getCause(),
            "a GET already in the write buffer is cancelled with the connection");
      }
      GATE.admitAll();
      assertEquals("old", c.get("large"), "the refused SET stored nothing");
      assertEquals(connections + 1, server.totalConnections(), "the client opened a new connection");
    } finally {
      GATE.admitAll();
      c.shutdown();
      proxy.reset();
    }
  }

  /**
   * A SET too large to store gets memcached's own {@code SERVER_ERROR object too large for cache}
   * (no gate involved), and spymemcached drops the connection for it just the same.
   */
  @Test
  void memcachedsOwnStorageErrorAlsoCostsTheConnection() throws Exception {
    MemcachedClient c = client();
    try {
      assertTrue(c.set("a", 0, "va").get());
      assertTrue(c.set("b", 0, "vb").get());
      long connections = server.totalConnections();
      byte[] tooLarge = new byte[2 << 20];
      new java.util.Random(5).nextBytes(tooLarge); // not compressible: stays over memcached's 1 MiB
      proxy.hold();
      Future<Object> before = c.asyncGet("a");
      Future<Boolean> failed = c.set("large", 0, tooLarge);
      Future<Object> after = c.asyncGet("b");
      proxy.awaitHeld(text -> text.endsWith("get b\r\n"));
      proxy.release();

      assertEquals("va", before.get());
      ExecutionException e = assertThrows(ExecutionException.class, failed::get);
      assertTrue(e.getCause().getMessage().contains("SERVER_ERROR object too large for cache"),
          e.getCause().getMessage());
      ExecutionException lost = assertThrows(ExecutionException.class, after::get);
      assertInstanceOf(CancellationException.class, lost.getCause());
      assertEquals("va", c.get("a"));
      assertEquals(connections + 1, server.totalConnections(), "the client opened a new connection");
    } finally {
      c.shutdown();
      proxy.reset();
    }
  }
}
