package io.spillway.kv;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Seeded random input for the text parser: commands built from the protocol's grammar with
 * mutated tokens, values whose declared length lies, noreply in odd places, raw garbage, all cut
 * into random writes and abandoned at a random point. After every session the server must still
 * answer a fresh connection, no handler may have thrown, and once all sessions are closed every
 * used chunk must belong to a live item. Short by default; {@code -Dkv.fuzz.sessions=N} runs
 * longer, {@code -Dkv.fuzz.seed=S} replays a failure (the seed is in every assertion message).
 */
@Timeout(600)
class TextProtocolRandomSessionTest {

  private static final String[] COMMANDS = {"get", "gets", "set", "add", "replace", "append",
      "prepend", "cas", "delete", "incr", "decr", "touch", "flush_all", "version", "verbosity",
      "stats", "GET", "", "quit"};

  @Test
  void randomInputNeverBreaksTheServer() throws Exception {
    long seed = Long.getLong("kv.fuzz.seed", System.nanoTime());
    int sessions = Integer.getInteger("kv.fuzz.sessions", 150);
    Random random = new Random(seed);
    String tag = "seed " + seed + " (-Dkv.fuzz.seed=" + seed + ")";
    // The gate runs on a clock that never moves, so no delay it reads can refuse a probe: the
    // test is about the parser, and real time (JIT-cold first commands, this machine's stalls)
    // would otherwise make the gate's answers vary from run to run.
    long frozen = Long.MAX_VALUE - 1_000_000_000L;
    try (KvServer server = KvServer.builder().host("127.0.0.1").port(0).memoryMegabytes(4)
        .protection(KvServer.Protection.SPILLWAY).ticker(() -> frozen).build().start()) {
      for (int s = 0; s < sessions; s++) {
        byte[] input = session(random);
        try (MemcacheConnection c = new MemcacheConnection(server.port())) {
          int at = 0;
          int stop = random.nextInt(10) == 0 ? random.nextInt(input.length + 1) : input.length;
          while (at < stop) {
            int n = Math.min(stop - at, 1 + random.nextInt(64));
            try {
              c.send(java.util.Arrays.copyOfRange(input, at, at + n));
            } catch (java.io.IOException closedByServer) {
              break; // a line over the limit, or quit: the server closed this one connection
            }
            at += n;
          }
        }
        assertServes(server, tag + ", after session " + s);
      }
      assertEquals(0, server.handlerFailures(), tag + ": a handler threw");
      // closed sessions free their half-read values when their channels close, on the loop
      // (bounded by the class's @Timeout: a leak fails it there)
      while (server.store().slabs().usage().usedChunks() != server.store().items()) {
        Thread.yield();
      }
      SlabAllocator.Usage u = server.store().slabs().usage();
      assertEquals(server.store().items(), u.usedChunks(), tag + ": leaked chunks");
      assertEquals(u.totalChunks(), u.usedChunks() + u.freeChunks(), tag + ": chunk accounting");
    }
  }

  /**
   * A fresh connection is served: the server survived whatever came before. A refusal for
   * overload is an answer too, while the last session's commands still wait on the server (the
   * gate's clock is frozen, so its limit keeps its starting value): the probe is sent again, on a
   * new connection, until it is served (bounded by the class's @Timeout, as the chunk wait is).
   */
  private static void assertServes(KvServer server, String context) throws Exception {
    String want = "STORED\r\nVALUE fuzz-probe 1 2\r\nok\r\nEND\r\n";
    String got;
    do {
      try (MemcacheConnection probe = new MemcacheConnection(server.port())) {
        probe.send("set fuzz-probe 1 0 2\r\nok\r\nget fuzz-probe\r\n");
        got = probe.read(want);
      }
    } while (got.startsWith("SERVER_ERROR overloaded"));
    assertEquals(want, got, context);
  }

  private static byte[] session(Random r) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    int commands = 1 + r.nextInt(30);
    for (int i = 0; i < commands; i++) {
      if (r.nextInt(20) == 0) {
        byte[] junk = new byte[r.nextInt(r.nextInt(10) == 0 ? 20_000 : 200)];
        r.nextBytes(junk);
        out.writeBytes(junk);
        continue;
      }
      String cmd = COMMANDS[r.nextInt(COMMANDS.length)];
      if (cmd.equals("quit") && r.nextInt(4) != 0) {
        cmd = "get";
      }
      StringBuilder line = new StringBuilder(cmd);
      int args = switch (cmd) {
        case "set", "add", "replace", "append", "prepend" -> 4;
        case "cas" -> 5;
        case "incr", "decr", "touch" -> 2;
        case "get", "gets", "delete" -> 1 + r.nextInt(3);
        default -> r.nextInt(2);
      };
      args += r.nextInt(8) == 0 ? r.nextInt(3) - 1 : 0;
      int declared = -1;
      for (int a = 0; a < args; a++) {
        String token = a == 0 && args > 0 ? key(r) : number(r);
        if (a == 3 && (cmd.equals("set") || cmd.equals("cas") || cmd.equals("add")
            || cmd.equals("replace") || cmd.equals("append") || cmd.equals("prepend"))) {
          declared = r.nextInt(6) == 0 ? r.nextInt(2_000_000) : r.nextInt(3000);
          token = r.nextInt(15) == 0 ? number(r) : String.valueOf(declared);
        }
        line.append(r.nextInt(30) == 0 ? "  " : " ").append(token);
      }
      if (r.nextInt(5) == 0) {
        line.append(" noreply");
      }
      line.append(r.nextInt(15) == 0 ? "\n" : "\r\n");
      out.writeBytes(line.toString().getBytes(StandardCharsets.ISO_8859_1));
      if (declared >= 0) {
        int actual = r.nextInt(4) == 0 ? Math.max(0, declared + r.nextInt(5) - 2) : declared;
        byte[] value = new byte[Math.min(actual, 300_000)];
        r.nextBytes(value);
        out.writeBytes(value);
        out.writeBytes(r.nextInt(10) == 0 ? new byte[] {'x', 'y'} : new byte[] {'\r', '\n'});
      }
    }
    return out.toByteArray();
  }

  private static String key(Random r) {
    return switch (r.nextInt(10)) {
      case 0 -> "k".repeat(240 + r.nextInt(20));
      case 1 -> "";
      default -> "k" + r.nextInt(50);
    };
  }

  private static String number(Random r) {
    return switch (r.nextInt(10)) {
      case 0 -> "-" + r.nextInt(100);
      case 1 -> "18446744073709551616";
      case 2 -> "abc";
      case 3 -> String.valueOf(r.nextLong());
      case 4 -> "4294967296";
      default -> String.valueOf(r.nextInt(1000));
    };
  }
}
