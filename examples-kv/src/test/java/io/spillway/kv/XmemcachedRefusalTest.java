package io.spillway.kv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;
import net.rubyeye.xmemcached.MemcachedClient;
import net.rubyeye.xmemcached.XMemcachedClientBuilder;
import net.rubyeye.xmemcached.exception.MemcachedServerException;
import net.rubyeye.xmemcached.utils.AddrUtil;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * What an unmodified xmemcached client (text protocol) does when the store refuses one of its
 * commands with {@code SERVER_ERROR overloaded (reason)}: for every command kind, the command is
 * sent between two GETs on the same connection, all three written before the server reads any
 * ({@link HoldingProxy}), and the server's gate refuses the middle one ({@link RefuseChosen}).
 * The refused command must fail with the server's error (not the client's timeout: its op timeout
 * is long, and a timeout would surface as a {@code TimeoutException}), the GETs around it must get
 * their own values, the client must keep its connection (the server's count of accepted
 * connections does not move) and go on working, and the refused write must have had no effect.
 * With {@code noreply} the server answers nothing, as memcached drops every reply of such a
 * command, and the next command still gets its own reply.
 */
@Timeout(120)
class XmemcachedRefusalTest {

  /** Long enough never to expire on a loaded machine: a refusal must end the command first. */
  static final long OP_TIMEOUT_MS = 20_000;

  interface Op {
    Object run(MemcachedClient c) throws Exception;
  }

  /** A command kind: how the client issues it, and how many lines it puts on the wire. */
  record Kind(String name, int lines, Op op, boolean noreply) {
    @Override
    public String toString() {
      return name;
    }
  }

  static Stream<Kind> kinds() {
    return Stream.of(
        new Kind("get", 1, c -> c.get("k1"), false),
        new Kind("get of several keys", 1, c -> c.get(List.of("k1", "k2", "absent")), false),
        new Kind("gets", 1, c -> c.gets("k1"), false),
        new Kind("set", 2, c -> c.set("k1", 0, "x"), false),
        new Kind("add", 2, c -> c.add("new", 0, "x"), false),
        new Kind("replace", 2, c -> c.replace("k1", 0, "x"), false),
        new Kind("append", 2, c -> c.append("k1", "x"), false),
        new Kind("prepend", 2, c -> c.prepend("k1", "x"), false),
        new Kind("cas", 2, c -> c.cas("k1", 0, "x", casOfK1), false),
        new Kind("delete", 1, c -> c.delete("k2"), false),
        new Kind("incr", 1, c -> c.incr("n", 1), false),
        new Kind("decr", 1, c -> c.decr("n", 1), false),
        new Kind("touch", 1, c -> c.touch("k1", 100), false),
        new Kind("set noreply", 2, c -> { c.setWithNoReply("k1", 0, "x"); return null; }, true),
        new Kind("add noreply", 2, c -> { c.addWithNoReply("new", 0, "x"); return null; }, true),
        new Kind("append noreply", 2, c -> { c.appendWithNoReply("k1", "x"); return null; }, true),
        new Kind("delete noreply", 1, c -> { c.deleteWithNoReply("k2"); return null; }, true),
        new Kind("incr noreply", 1, c -> { c.incrWithNoReply("n", 1); return null; }, true),
        new Kind("decr noreply", 1, c -> { c.decrWithNoReply("n", 1); return null; }, true));
  }

  /** k1's CAS value, read before the gate is armed (a gets is a command the gate would count). */
  static volatile long casOfK1;

  static final RefuseChosen GATE = new RefuseChosen();
  static KvServer server;
  static HoldingProxy proxy;
  static ExecutorService callers;

  @BeforeAll
  static void start() throws Exception {
    server = KvServer.builder().host("127.0.0.1").port(0).memoryMegabytes(8)
        .textSchemeWrapper(s -> GATE).build().start();
    proxy = new HoldingProxy(server.port());
    callers = Executors.newCachedThreadPool();
  }

  @AfterAll
  static void stop() throws Exception {
    callers.shutdownNow();
    proxy.close();
    server.close();
  }

  static MemcachedClient client() throws Exception {
    return client(OP_TIMEOUT_MS);
  }

  static MemcachedClient client(long opTimeoutMs) throws Exception {
    XMemcachedClientBuilder b = new XMemcachedClientBuilder(
        AddrUtil.getAddresses("127.0.0.1:" + proxy.port()));
    b.setConnectionPoolSize(1); // every command on one connection
    b.setOpTimeout(opTimeoutMs);
    return b.build();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("kinds")
  void aRefusedCommandFailsAloneAndTheConnectionStays(Kind kind) throws Exception {
    MemcachedClient c = client();
    try {
      c.set("a", 0, "va");
      c.set("b", 0, "vb");
      c.set("k1", 0, "v1");
      c.set("k2", 0, "v2");
      c.set("n", 0, "5");
      c.delete("new");
      long connections = server.totalConnections();
      int refusedBefore = GATE.refused();

      casOfK1 = c.gets("k1").getCas();
      GATE.refuse(2);
      proxy.hold();
      Future<Object> before = callers.submit(() -> c.get("a"));
      proxy.awaitHeldLines(1);
      Future<Object> refused = callers.submit(() -> kind.op.run(c));
      proxy.awaitHeldLines(1 + kind.lines);
      Future<Object> after = callers.submit(() -> c.get("b"));
      proxy.awaitHeldLines(2 + kind.lines);
      proxy.release();

      assertEquals("va", before.get(), "the command before the refused one gets its own reply");
      if (kind.noreply) {
        assertNull(refused.get(), "a noreply command returns at once");
      } else {
        ExecutionException e = assertThrows(ExecutionException.class, refused::get);
        MemcachedServerException error = assertInstanceOf(MemcachedServerException.class, e.getCause(),
            "the refusal ends the command with the server's error, not the client's timeout");
        assertTrue(error.getMessage().startsWith("overloaded (queueing delay)"), error.getMessage());
      }
      assertEquals("vb", after.get(), "the command after the refused one gets its own reply");
      GATE.admitAll();
      assertEquals(refusedBefore + 1, GATE.refused());

      assertEquals("va", c.get("a"), "the client goes on working");
      assertEquals(connections, server.totalConnections(), "the client kept its connection");
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
   * The store refuses a SET at its command line and skips the value, so the refusal reaches the
   * client while it is still sending a large value (the relay stalls it): the client must match
   * the early reply to the SET, and the GET queued behind it must get its own reply.
   */
  @Test
  void aRefusalThatArrivesBeforeTheValueIsSentEndsTheSetAlone() throws Exception {
    MemcachedClient c = client();
    try {
      c.set("a", 0, "va");
      c.set("large", 0, "old");
      long connections = server.totalConnections();
      int refusedBefore = GATE.refused();
      byte[] large = new byte[900_000];
      new java.util.Random(3).nextBytes(large);
      GATE.refuse(1);
      proxy.stall();
      List<Thread> waiting = new java.util.concurrent.CopyOnWriteArrayList<>();
      Future<Object> set = callers.submit(() -> c.set("large", 0, large));
      FrameSchemes.waitUntil(() -> GATE.refused() == refusedBefore + 1); // refused, value unsent
      Future<Object> get = callers.submit(() -> {
        waiting.add(Thread.currentThread());
        return c.get("a");
      });
      FrameSchemes.waitUntil(() -> !waiting.isEmpty() && java.util.Arrays.stream(
          waiting.get(0).getStackTrace()).anyMatch(f -> f.getMethodName().equals("latchWait")));
      proxy.resume();

      ExecutionException e = assertThrows(ExecutionException.class, set::get);
      assertInstanceOf(MemcachedServerException.class, e.getCause());
      assertEquals("va", get.get(), "the GET behind the refused SET gets its own reply");
      GATE.admitAll();
      assertEquals("old", c.get("large"), "the refused SET stored nothing");
      assertEquals(connections, server.totalConnections(), "the client kept its connection");
    } finally {
      GATE.admitAll();
      c.shutdown();
      proxy.reset();
    }
  }

  static final int MERGED = 10;

  /**
   * xmemcached merges single-key GETs that are queued together into multi-key GETs (its {@code
   * optimizeGet}, on by default). When the server answers such a line with {@code SERVER_ERROR}
   * (as memcached answers a multi-get it cannot complete: {@code SERVER_ERROR out of memory writing
   * get response}), the client ends only the command it built for the line ({@code
   * Command.decodeError}) and none of the GETs merged into it, so each of their callers waits for
   * its op timeout: a client's defect whatever the error says. The GETs merged into other lines,
   * admitted, are served within that timeout, so the timeouts are the refusal's doing.
   */
  @Test
  void getsMergedIntoARefusedLineWaitForTheClientsTimeout() throws Exception {
    MemcachedClient c = client(3_000);
    try {
      c.set("warm", 0, "w"); // the relay's connection to the server is accepted by now
      long connections = server.totalConnections();
      List<String> lines = new java.util.ArrayList<>();
      List<Future<Object>> gets = getsQueuedBehindAStalledWrite(c, lines);
      String[] refusedLine = lines.get(0).split(" ");
      assertTrue(refusedLine.length > 2, "the client merged GETs into the refused line: " + lines);
      java.util.Set<String> refusedKeys = java.util.Set.of(refusedLine).stream()
          .filter(k -> !k.equals("get")).collect(java.util.stream.Collectors.toSet());
      for (int i = 0; i < MERGED; i++) {
        if (refusedKeys.contains("m" + i)) {
          ExecutionException e = assertThrows(ExecutionException.class, gets.get(i)::get);
          assertInstanceOf(java.util.concurrent.TimeoutException.class, e.getCause(),
              "xmemcached leaves a GET merged into a refused line to its op timeout");
        } else {
          assertEquals("v" + i, gets.get(i).get(), "a GET in an admitted line is served");
        }
      }
      assertEquals("v0", c.get("m0"), "the client goes on working");
      assertEquals(connections, server.totalConnections(), "the client kept its connection");
    } finally {
      GATE.admitAll();
      c.shutdown();
      proxy.reset();
    }
  }

  /** With {@code optimizeGet} off, each GET is its own command, and only the refused one fails. */
  @Test
  void withoutMergingOnlyTheRefusedGetFails() throws Exception {
    MemcachedClient c = client(OP_TIMEOUT_MS);
    c.setOptimizeGet(false);
    try {
      c.set("warm", 0, "w"); // the relay's connection to the server is accepted by now
      long connections = server.totalConnections();
      List<String> lines = new java.util.ArrayList<>();
      List<Future<Object>> gets = getsQueuedBehindAStalledWrite(c, lines);
      assertEquals(MERGED, lines.size(), "one line a GET: " + lines);
      String refusedKey = lines.get(0).split(" ")[1];
      for (int i = 0; i < MERGED; i++) {
        if (refusedKey.equals("m" + i)) {
          ExecutionException e = assertThrows(ExecutionException.class, gets.get(i)::get);
          assertInstanceOf(MemcachedServerException.class, e.getCause(),
              "the refused GET ends with the server's error");
        } else {
          assertEquals("v" + i, gets.get(i).get(), "every other GET gets its own value");
        }
      }
      assertEquals("v0", c.get("m0"), "the client goes on working");
      assertEquals(connections, server.totalConnections(), "the client kept its connection");
    } finally {
      GATE.admitAll();
      c.shutdown();
      proxy.reset();
    }
  }

  /**
   * Queues {@link #MERGED} GETs, one per caller thread, behind a large {@code noreply} SET that the
   * relay does not read, so they are all in the client's queue when it writes again; the gate
   * admits the SET and refuses the next command, the first GET line. Fills {@code lines} with the
   * GET lines the client sent, in order.
   */
  private static List<Future<Object>> getsQueuedBehindAStalledWrite(MemcachedClient c,
      List<String> lines) throws Exception {
    for (int i = 0; i < MERGED; i++) {
      c.set("m" + i, 0, "v" + i);
    }
    GATE.refuse(2); // the SET, then the first GET line
    proxy.stall();
    // letters at random: no line end inside, and too random for the client's compression to
    // shrink below what the relay's and the sockets' buffers hold
    byte[] large = new byte[900_000];
    java.util.Random random = new java.util.Random(11);
    for (int i = 0; i < large.length; i++) {
      large[i] = (byte) ('a' + random.nextInt(26));
    }
    c.setWithNoReply("large", 0, large);
    List<Future<Object>> gets = new java.util.ArrayList<>();
    List<Thread> waiting = new java.util.concurrent.CopyOnWriteArrayList<>();
    for (int i = 0; i < MERGED; i++) {
      String key = "m" + i;
      gets.add(callers.submit(() -> {
        waiting.add(Thread.currentThread());
        return c.get(key);
      }));
    }
    // a caller whose command is queued waits in the client's latchWait for its reply
    FrameSchemes.waitUntil(() -> waiting.size() == MERGED && waiting.stream().allMatch(t ->
        java.util.Arrays.stream(t.getStackTrace()).anyMatch(f -> f.getMethodName().equals("latchWait"))));
    proxy.hold();
    proxy.resume();
    proxy.awaitHeld(text -> getLines(text).stream().mapToInt(l -> l.split(" ").length - 1).sum() == MERGED);
    lines.addAll(getLines(proxy.heldText()));
    proxy.release();
    return gets;
  }

  /**
   * The GET lines in what the client sent while held: it starts inside the large value, which has
   * no line end, so they follow the first one.
   */
  private static List<String> getLines(String held) {
    int end = held.indexOf("\r\n");
    if (end < 0 || !held.endsWith("\r\n")) {
      return List.of();
    }
    return List.of(held.substring(end + 2).split("\r\n")).stream()
        .filter(l -> l.startsWith("get ")).toList();
  }
}
