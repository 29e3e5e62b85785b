package io.spillway.kv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.management.UnixOperatingSystemMXBean;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The text protocol over real sockets: pipelining, {@code noreply}, and the bad input the module
 * README lists, each answered as memcached answers it (or, where a stream cannot be resynchronised,
 * by closing that one connection), with the server, the other connections and the slab accounting
 * intact afterwards.
 */
@Timeout(120)
class TextProtocolTest {

  private KvServer server;

  @BeforeEach
  void start() throws Exception {
    server = KvServer.builder().host("127.0.0.1").port(0).memoryMegabytes(8)
        .protection(KvServer.Protection.NONE).build().start();
  }

  @AfterEach
  void stopAndCheckMemory() {
    try {
      SlabAllocator.Usage u = server.store().slabs().usage();
      assertEquals(u.totalChunks(), u.usedChunks() + u.freeChunks(), "chunk accounting");
      assertEquals(server.store().items(), u.usedChunks(), "every used chunk belongs to a live item");
    } finally {
      server.close();
    }
  }

  private MemcacheConnection connect() throws Exception {
    return new MemcacheConnection(server.port());
  }

  /** A connection still answers a set and a get: the server survived whatever came before. */
  private void assertServes(MemcacheConnection c, String key) throws Exception {
    c.send("set " + key + " 3 0 2\r\nok\r\nget " + key + "\r\n");
    String want = "STORED\r\nVALUE " + key + " 3 2\r\nok\r\nEND\r\n";
    assertEquals(want, c.read(want));
  }

  /** {@code stats} names the transport the text port serves on, as the server chose it. */
  @Test
  void statsNameTheTransport() throws Exception {
    KvServer nio = KvServer.builder().host("127.0.0.1").port(0).memoryMegabytes(8)
        .protection(KvServer.Protection.NONE).transport(io.spillway.transport.Transport.NIO).build().start();
    try (MemcacheConnection c = new MemcacheConnection(nio.port())) {
      c.send("stats\r\n");
      assertTrue(c.readThrough("END\r\n").contains("\r\nSTAT spillway_transport nio\r\n"));
    } finally {
      nio.close();
    }
    try (MemcacheConnection c = connect()) {
      c.send("stats\r\n");
      String chosen = KvServer.defaultTransport().name().toLowerCase(java.util.Locale.ROOT);
      assertTrue(c.readThrough("END\r\n").contains("\r\nSTAT spillway_transport " + chosen + "\r\n"));
    }
  }

  @Test
  void pipelinedCommandsAreAnsweredInOrder() throws Exception {
    try (MemcacheConnection c = connect()) {
      StringBuilder in = new StringBuilder();
      StringBuilder want = new StringBuilder();
      for (int i = 0; i < 200; i++) {
        in.append("set k").append(i).append(" ").append(i).append(" 0 ").append(String.valueOf(i).length())
            .append("\r\n").append(i).append("\r\n");
        want.append("STORED\r\n");
      }
      in.append("get");
      for (int i = 0; i < 200; i += 50) {
        in.append(" k").append(i);
      }
      in.append(" missing\r\nincr k7 3\r\ndelete k0\r\ndelete k0\r\n");
      for (int i = 0; i < 200; i += 50) {
        want.append("VALUE k").append(i).append(" ").append(i).append(" ")
            .append(String.valueOf(i).length()).append("\r\n").append(i).append("\r\n");
      }
      want.append("END\r\n10\r\nDELETED\r\nNOT_FOUND\r\n");
      c.send(in.toString());
      assertEquals(want.toString(), c.read(want.toString()));
    }
  }

  @Test
  void noreplySuppressesTheReplyButNotTheEffect() throws Exception {
    try (MemcacheConnection c = connect()) {
      c.send("set a 0 0 1 noreply\r\n1\r\nincr a 4 noreply\r\nappend a 0 0 1 noreply\r\nx\r\n"
          + "delete zz noreply\r\nbogus noreply\r\nget a\r\n");
      // an unknown command is an error even with noreply, as memcached answers it
      String want = "ERROR\r\nVALUE a 0 2\r\n5x\r\nEND\r\n";
      assertEquals(want, c.read(want));
    }
  }

  @Test
  void malformedLinesGetMemcachedsErrorsAndTheConnectionGoesOn() throws Exception {
    try (MemcacheConnection c = connect()) {
      c.send("bogus\r\nset k x 0 5\r\nhello\r\nset k 0 0 -1\r\nset k 0 0 3\r\nhello\r\n"
          + "set k 0 0 99999999999999999999\r\nget\r\nincr k abc\r\n\r\n");
      String want = "ERROR\r\n"
          + "CLIENT_ERROR bad command line format\r\nERROR\r\n" // the value line is a command
          + "CLIENT_ERROR bad command line format\r\n"
          + "CLIENT_ERROR bad data chunk\r\nERROR\r\n" // memcached swallows 2 bytes after 3
          + "CLIENT_ERROR bad command line format\r\n"
          + "ERROR\r\n"
          + "CLIENT_ERROR invalid numeric delta argument\r\n"
          + "ERROR\r\n";
      assertEquals(want, c.read(want));
      assertServes(c, "after-malformed");
    }
  }

  @Test
  void aHugeDeclaredValueIsRefusedAndItsBytesSkipped() throws Exception {
    try (MemcacheConnection c = connect()) {
      c.send("set big 0 0 2000000\r\n");
      c.send(new byte[2_000_000]);
      c.send("\r\nget big\r\n");
      String want = "SERVER_ERROR object too large for cache\r\nEND\r\n";
      assertEquals(want, c.read(want));
      assertServes(c, "after-huge");
    }
  }

  @Test
  void binaryGarbageIsAnErrorNotACrash() throws Exception {
    java.util.Random random = new java.util.Random(42);
    try (MemcacheConnection c = connect()) {
      byte[] junk = new byte[4096];
      random.nextBytes(junk);
      for (int i = 0; i < junk.length; i++) {
        if (junk[i] == '\n') {
          junk[i] = 'x'; // one garbage line, under the line limit
        }
      }
      c.send(junk).send("\r\nversion\r\n");
      String reply = c.readThrough("VERSION " + KvServer.VERSION + "\r\n");
      assertTrue(reply.startsWith("ERROR\r\n") || reply.startsWith("CLIENT_ERROR"), reply);
      assertServes(c, "after-garbage");
    }
  }

  @Test
  void aLineOverTheLimitClosesOnlyItsConnection() throws Exception {
    try (MemcacheConnection bad = connect(); MemcacheConnection good = connect()) {
      bad.send("a".repeat(TextProtocolHandler.MAX_LINE + 100));
      String reply = bad.readThrough("\r\n");
      assertEquals("CLIENT_ERROR line too long\r\n", reply);
      assertTrue(bad.closedByPeer());
      assertServes(good, "after-long-line");
    }
  }

  @Test
  void aHalfSentCommandStallsOnlyItsConnection() throws Exception {
    try (MemcacheConnection slow = connect(); MemcacheConnection other = connect()) {
      slow.send("set half 0 0 10\r\nhello");
      assertServes(other, "meanwhile");
      slow.send("world\r\nget ha");
      assertServes(other, "still");
      slow.send("lf\r\n");
      String want = "STORED\r\nVALUE half 0 10\r\nhelloworld\r\nEND\r\n";
      assertEquals(want, slow.read(want));
    }
  }

  @Test
  void aClientThatLeavesMidValueLeaksNothing() throws Exception {
    try (MemcacheConnection c = connect()) {
      c.send("set gone 0 0 100000\r\n").send(new byte[5000]);
    }
    try (MemcacheConnection c = connect()) {
      assertServes(c, "after-leaver");
      // the leaver's reserved chunk is freed when its channel closes; wait for it via stats
      // (bounded by the class's @Timeout; the check itself is in stopAndCheckMemory)
      while (server.store().slabs().usage().usedChunks() != server.store().items()) {
        Thread.yield();
      }
    }
  }

  @Test
  void aClientThatDoesNotReadIsNotAnsweredWithoutBound() throws Exception {
    byte[] value = new byte[100_000];
    java.util.Arrays.fill(value, (byte) 'v');
    try (MemcacheConnection c = connect()) {
      c.send("set big 0 0 " + value.length + "\r\n").send(value).send("\r\n");
      assertEquals("STORED\r\n", c.read("STORED\r\n"));
    }
    int gets = 2_000; // 18 KB of requests asking for 200 MB of replies
    java.net.Socket s = new java.net.Socket();
    s.setReceiveBufferSize(4096);
    s.setSoTimeout(20_000); // a reply that never comes fails the test instead of hanging it
    s.connect(new InetSocketAddress("127.0.0.1", server.port()));
    try (s) {
      s.getOutputStream().write(MemcacheConnection.ascii("get big\r\n".repeat(gets)));
      s.getOutputStream().flush();
      // the server stops reading once the socket and its water marks are full; after that what
      // it holds for this client can only shrink (bounded by the class's @Timeout)
      while (server.pausedConnections() == 0) {
        Thread.yield();
      }
      long last = server.pendingOutboundBytes();
      assertTrue(last < 8L << 20, "replies held for a client that does not read: " + last + " bytes");
      try (MemcacheConnection other = connect()) {
        assertServes(other, "while-one-stalls");
      }
      // once it reads, every reply arrives, complete and in order
      java.io.InputStream in = new java.io.BufferedInputStream(s.getInputStream(), 1 << 16);
      byte[] header = MemcacheConnection.ascii("VALUE big 0 100000\r\n");
      for (int i = 0; i < gets; i++) {
        byte[] h = in.readNBytes(header.length);
        assertEquals(new String(header), new String(h), "reply " + i);
        in.skipNBytes(value.length);
        byte[] tail = in.readNBytes(7);
        assertEquals("\r\nEND\r\n", new String(tail), "reply " + i);
      }
    }
  }

  @Test
  void aMultiGetWhoseReplyPassesTheWaterMarksWaitsForItsClient() throws Exception {
    byte[] value = new byte[SlabAllocator.PAGE_SIZE - 64];
    java.util.Arrays.fill(value, (byte) 'v');
    try (MemcacheConnection c = connect()) {
      c.send("set huge 0 0 " + value.length + "\r\n").send(value).send("\r\n");
      assertEquals("STORED\r\n", c.read("STORED\r\n"));
    }
    int keys = 2_100; // one 8 KiB line asking for 2.2 GB of reply
    java.net.Socket s = new java.net.Socket();
    s.setReceiveBufferSize(4096);
    s.setSoTimeout(20_000);
    s.connect(new InetSocketAddress("127.0.0.1", server.port()));
    try (s) {
      s.getOutputStream().write(MemcacheConnection.ascii("get" + " huge".repeat(keys) + "\r\n"));
      s.getOutputStream().flush();
      // the command stops between keys once its replies pass the water marks (bounded by the
      // class's @Timeout), instead of building its whole reply in memory
      while (server.pausedConnections() == 0 && server.handlerFailures() == 0) {
        Thread.yield();
      }
      assertEquals(0, server.handlerFailures(), () -> "the handler failed: " + server.lastHandlerFailure());
      long held = server.pendingOutboundBytes();
      assertTrue(held < 8L << 20, "reply held for a client that does not read: " + held + " bytes");
      // it goes on as the client reads, in order
      java.io.InputStream in = new java.io.BufferedInputStream(s.getInputStream(), 1 << 16);
      byte[] header = MemcacheConnection.ascii("VALUE huge 0 " + value.length + "\r\n");
      for (int i = 0; i < 20; i++) {
        assertEquals(new String(header), new String(in.readNBytes(header.length)), "reply " + i);
        in.skipNBytes(value.length);
        assertEquals("\r\n", new String(in.readNBytes(2)), "reply " + i);
      }
    }
    try (MemcacheConnection other = connect()) {
      assertServes(other, "after-huge-get");
    }
  }

  @Test
  void aMultiGetStoppedForItsClientAnswersEveryKeyThenTheNextCommand() throws Exception {
    byte[] value = new byte[100_000];
    java.util.Arrays.fill(value, (byte) 'w');
    try (MemcacheConnection c = connect()) {
      c.send("set wide 0 0 " + value.length + "\r\n").send(value).send("\r\n");
      assertEquals("STORED\r\n", c.read("STORED\r\n"));
    }
    int keys = 600;
    java.net.Socket s = new java.net.Socket();
    s.setReceiveBufferSize(4096);
    s.setSoTimeout(20_000);
    s.connect(new InetSocketAddress("127.0.0.1", server.port()));
    try (s) {
      s.getOutputStream().write(MemcacheConnection.ascii("get" + " wide nokey".repeat(keys)
          + "\r\nget nokey\r\n"));
      s.getOutputStream().flush();
      java.io.InputStream in = new java.io.BufferedInputStream(s.getInputStream(), 1 << 16);
      byte[] header = MemcacheConnection.ascii("VALUE wide 0 " + value.length + "\r\n");
      for (int i = 0; i < keys; i++) {
        assertEquals(new String(header), new String(in.readNBytes(header.length)), "reply " + i);
        in.skipNBytes(value.length);
        assertEquals("\r\n", new String(in.readNBytes(2)), "reply " + i);
      }
      assertEquals("END\r\nEND\r\n", new String(in.readNBytes(10)));
    }
  }

  /**
   * The time a multi-get waits for its client to read is not service time: the server's p99
   * service estimate, from which every request's queueing budget is derived, must not take a slow
   * reader's wait. The server's clock is a manual one that moves only while the command waits.
   */
  @Test
  void aMultiGetWaitingForItsClientDoesNotCountTheWaitAsService() throws Exception {
    java.util.concurrent.atomic.AtomicLong clock = new java.util.concurrent.atomic.AtomicLong(Long.MAX_VALUE - 5_000_000_000L);
    KvServer slow = KvServer.builder().host("127.0.0.1").port(0).memoryMegabytes(8)
        .protection(KvServer.Protection.NONE).ticker(clock::get).build().start();
    try {
      byte[] value = new byte[100_000];
      java.util.Arrays.fill(value, (byte) 'w');
      byte[] key = MemcacheConnection.ascii("wide");
      KvStore store = slow.store();
      int chunk = store.reserve(value.length, clock.get());
      store.write(chunk, 0, value, 0, value.length);
      store.store(KvStore.Mode.SET, key, 0, 0, 0, chunk, value.length, clock.get()); // no service sample
      int keys = 600;
      java.net.Socket s = new java.net.Socket();
      s.setReceiveBufferSize(4096);
      s.setSoTimeout(20_000);
      s.connect(new InetSocketAddress("127.0.0.1", slow.port()));
      try (s) {
        s.getOutputStream().write(MemcacheConnection.ascii("get" + " wide".repeat(keys) + "\r\n"));
        s.getOutputStream().flush();
        // The client takes a second to start reading. The clock moves on the server's event loop
        // while the connection is paused there, so the second falls within one pause: until the
        // socket's buffers are full, a paused command may go on (and pause again) as they drain.
        boolean moved = false;
        while (!moved) { // bounded by @Timeout
          while (slow.pausedConnections() == 0 && slow.handlerFailures() == 0) {
            Thread.yield();
          }
          assertEquals(0, slow.handlerFailures(), () -> "the handler failed: " + slow.lastHandlerFailure());
          moved = slow.eventLoops().next().submit(() -> {
            if (slow.pausedConnections() == 0) {
              return false;
            }
            clock.addAndGet(1_000_000_000L);
            return true;
          }).get();
        }
        java.io.InputStream in = new java.io.BufferedInputStream(s.getInputStream(), 1 << 16);
        byte[] header = MemcacheConnection.ascii("VALUE wide 0 " + value.length + "\r\n");
        for (int i = 0; i < keys; i++) {
          assertEquals(new String(header), new String(in.readNBytes(header.length)), "reply " + i);
          in.skipNBytes(value.length + 2);
        }
        assertEquals("END\r\n", new String(in.readNBytes(5)));
      }
      try (MemcacheConnection c = new MemcacheConnection(slow.port())) {
        c.send("stats\r\n");
        String stats = c.readThrough("END\r\n");
        String line = stats.lines().filter(l -> l.startsWith("STAT spillway_p99_service_ns ")).findFirst().orElseThrow();
        long p99 = Long.parseLong(line.substring(line.lastIndexOf(' ') + 1));
        assertTrue(p99 < 1_000_000L, "the client's second of reading was taken as service: p99 " + p99 + " ns");
      }
    } finally {
      slow.close();
    }
  }

  @Test
  void thousandsOfIdleConnectionsDoNotStopService() throws Exception {
    long limit = ((UnixOperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
        .getMaxFileDescriptorCount();
    // each idle connection is two descriptors in this JVM (client and server side)
    int n = (int) Math.min(10_000, (limit - 1_000) / 2);
    List<SocketChannel> idle = new ArrayList<>(n);
    try {
      for (int i = 0; i < n; i++) {
        idle.add(SocketChannel.open(new InetSocketAddress("127.0.0.1", server.port())));
      }
      try (MemcacheConnection c = connect()) {
        assertServes(c, "among-idle");
        c.send("stats\r\n");
        String stats = c.readThrough("END\r\n");
        int open = Integer.parseInt(stats.replaceAll("(?s).*STAT curr_connections (\\d+).*", "$1"));
        assertTrue(open >= n, "curr_connections " + open + " < " + n);
      }
    } finally {
      for (SocketChannel ch : idle) {
        ch.close();
      }
    }
    assertTrue(n >= 1_000, "only " + n + " descriptors to test with");
  }
}
