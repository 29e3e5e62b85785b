package io.spillway.kv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.Writer;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Byte-for-byte the same replies as the real memcached for well-formed and malformed input, each
 * case on a fresh connection to both servers and ended by {@code version} (whose reply is the only
 * line allowed to differ). Runs when {@code memcached} is installed ({@code .ci/run} installs it);
 * skipped otherwise. Deliberate differences, not cases here: flags above 2^32 - 1 are refused
 * (memcached stores them modulo 2^32) and a line over the limit is answered before the close
 * (memcached resets the connection).
 */
@Timeout(120)
class MemcachedDifferentialTest {

  private static Process memcached;
  private static int memcachedPort;
  private static KvServer kv;

  @BeforeAll
  static void startBoth() throws Exception {
    Path binary = findMemcached();
    assumeTrue(binary != null, "memcached is not installed (apt-get install memcached)");
    try (ServerSocket s = new ServerSocket(0)) {
      memcachedPort = s.getLocalPort();
    }
    // -vv: memcached says "server listening" once its socket is bound, so the test waits on that
    // line instead of retrying a connection on a timer; it also logs every command, drained below.
    List<String> cmd = new ArrayList<>(List.of(binary.toString(), "-p", String.valueOf(memcachedPort),
        "-U", "0", "-l", "127.0.0.1", "-t", "1", "-m", "64", "-vv"));
    if ("root".equals(System.getProperty("user.name"))) {
      cmd.addAll(List.of("-u", "root"));
    }
    memcached = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    kv = KvServer.builder().host("127.0.0.1").port(0).protection(KvServer.Protection.NONE).build().start();
    BufferedReader log = new BufferedReader(new InputStreamReader(memcached.getInputStream(),
        StandardCharsets.UTF_8));
    String line;
    do {
      line = log.readLine();
      if (line == null) {
        throw new IOException("memcached exited before listening");
      }
    } while (!line.contains("server listening"));
    Thread drain = new Thread(() -> {
      try {
        log.transferTo(Writer.nullWriter());
      } catch (IOException closed) {
        // memcached stopped
      }
    }, "memcached-log");
    drain.setDaemon(true);
    drain.start();
  }

  @AfterAll
  static void stopBoth() throws Exception {
    if (kv != null) {
      kv.close();
    }
    if (memcached != null) {
      memcached.destroy();
      memcached.waitFor(10, TimeUnit.SECONDS);
    }
  }

  static Path findMemcached() {
    for (String dir : System.getenv().getOrDefault("PATH", "").split(":")) {
      Path p = Path.of(dir, "memcached");
      if (Files.isExecutable(p)) {
        return p;
      }
    }
    Path p = Path.of("/usr/bin/memcached");
    return Files.isExecutable(p) ? p : null;
  }

  private static String exchange(int port, String input) throws IOException {
    try (MemcacheConnection c = new MemcacheConnection(port)) {
      c.send(input + "version\r\n");
      String reply = c.readThrough("\r\nVERSION ");
      if (!reply.endsWith("<CLOSED>")) {
        c.readThrough("\r\n");
      }
      return reply;
    }
  }

  private static void same(String input) throws IOException {
    assertEquals(exchange(memcachedPort, input), exchange(kv.port(), input), () -> "input " + input);
  }

  @Test
  void storageCommands() throws IOException {
    same("set a 5 0 3\r\nabc\r\nget a\r\ngets a\r\n".replace("gets a", "get a a"));
    same("add b 0 0 1\r\nx\r\nadd b 0 0 1\r\ny\r\nreplace b 1 0 2\r\nzz\r\nreplace nob 0 0 1\r\nq\r\nget b\r\n");
    same("set c 0 0 1\r\nm\r\nappend c 0 0 2\r\nzz\r\nprepend c 0 0 2\r\naa\r\nappend noc 0 0 1\r\nx\r\nget c\r\n");
    same("set n 0 0 2\r\n10\r\nincr n 5\r\ndecr n 100\r\nincr n 18446744073709551615\r\n"
        + "incr nosuch 1\r\nset s 0 0 3\r\nabc\r\nincr s 1\r\n");
    same("set d 0 0 1\r\nx\r\ndelete d\r\ndelete d\r\ndelete d 0\r\ndelete d 5\r\ndelete d noreply\r\n");
    same("set t 0 0 1\r\nx\r\ntouch t 100\r\ntouch nosuch 1\r\ntouch t\r\ntouch t abc\r\n");
    same("set e 0 -1 1\r\nx\r\nget e\r\nset f 0 0 1 noreply\r\ny\r\nget f\r\n");
    same("flush_all abc\r\nflush_all noreply\r\nflush_all\r\nflush_all 0\r\nget a b c\r\n");
    same("verbosity\r\nverbosity 1\r\nverbosity 1 2 3\r\n");
  }

  @Test
  void casCommands() throws IOException {
    same("cas k 0 0 1\r\nx\r\ncas k 0 0 1 abc\r\nx\r\ncas k 0 0 1 999\r\nx\r\n");
    same("cas\r\ncas k 0 0 1 1 2 3\r\nx\r\ncas k 0 0 1 1 foo\r\nx\r\n");
    same("set k 0 0 1 foo\r\nx\r\nset k 0 0 1 1 2\r\nx\r\nset k 0 0 1 noreply 2\r\nx\r\n");
  }

  @Test
  void malformedInput() throws IOException {
    same("bogus\r\nGET k\r\n\r\n \r\n");
    same("set k x 0 5\r\nhello\r\nset k 0 0 -1\r\nset k 0 0 3\r\nhello\r\n");
    same("set k 0 0 99999999999999999999\r\nset k -1 0 1\r\nx\r\n");
    same("get\r\ngets\r\nadd\r\nappend k 0 0\r\nincr\r\nincr k\r\ndecr k -1\r\n");
    same("get " + "a".repeat(251) + "\r\nset " + "a".repeat(251) + " 0 0 1\r\nx\r\n");
    same("set k 0 0 2000000\r\n" + "a".repeat(2_000_000) + "\r\nget k\r\n");
    same("\u0000\u0001\u0002\u00ff\u00fe garbage\r\nbogus noreply\r\n");
  }

  @Test
  void aMultiGetOfMoreKeysThanTheTokenTableHolds() throws IOException {
    StringBuilder keys = new StringBuilder();
    for (int i = 0; i < 400; i++) {
      keys.append(" mg").append(i);
    }
    same("set mg3 0 0 1\r\nx\r\nset mg399 0 0 1\r\ny\r\nget" + keys + "\r\n");
  }

  @Test
  void aMultiGetLineLongerThanTheLineLimit() throws IOException {
    StringBuilder keys = new StringBuilder();
    for (int i = 0; i < 3000; i++) {
      keys.append(" lg").append(i);
    }
    same("set lg5 0 0 1\r\nx\r\nset lg2999 3 0 2\r\nyy\r\nget" + keys + "\r\nget lg5\r\n");
    same("   get" + keys + "\nget lg5\r\n");
    same("get" + keys + " " + "k".repeat(251) + keys + "\r\nget lg5\r\n");
  }

  @Test
  void noreplySilencesErrorsToo() throws IOException {
    String longKey = "a".repeat(251);
    same("delete " + longKey + " noreply\r\ndelete nr 5 noreply\r\nincr " + longKey + " 1 noreply\r\n"
        + "incr nr abc noreply\r\ntouch " + longKey + " 1 noreply\r\ntouch nr abc noreply\r\n"
        + "flush_all abc noreply\r\nverbosity abc noreply\r\nget nr\r\n");
    same("set " + longKey + " 0 0 1 noreply\r\nx\r\nset nr abc 0 1 noreply\r\nx\r\n"
        + "cas nr 0 0 1 abc noreply\r\nx\r\nset nr 0 0 -1 noreply\r\n"
        + "set nr 0 0 1 noreply\r\nxy\r\nset nr 0 0 2000000 noreply\r\n" + "a".repeat(2_000_000)
        + "\r\nget nr\r\n");
  }
  @Test
  void aSetThatCannotBeStoredRemovesTheOldValue() throws IOException {
    same("set big 0 0 1\r\nx\r\nset big 0 0 2000000\r\n" + "a".repeat(2_000_000) + "\r\nget big\r\n");
  }
  @Test
  void incrAndDecrReadAndRewriteTheValueAsMemcachedDoes() throws IOException {
    same("set cn 0 0 3\r\n100\r\ndecr cn 1\r\nget cn\r\nincr cn 1\r\nget cn\r\nincr cn 900\r\nget cn\r\n");
    same("set cm 0 0 20\r\n18446744073709551615\r\nincr cm 1\r\nget cm\r\n");
    same("set c1 0 0 5\r\n5 abc\r\nincr c1 1\r\nget c1\r\nset c2 0 0 2\r\n+5\r\nincr c2 1\r\n"
        + "set c3 0 0 2\r\n 5\r\nincr c3 1\r\nset c4 0 0 23\r\n00000000000000000000001\r\nincr c4 1\r\n"
        + "set c5 0 0 2\r\n-0\r\nincr c5 1\r\nset c6 0 0 2\r\n5x\r\nincr c6 1\r\n"
        + "set c7 0 0 2\r\n-5\r\nincr c7 1\r\nset c9 0 0 3\r\n   \r\nincr c9 1\r\n");
    same("set c8 0 0 1\r\n5\r\nincr c8 +1\r\nincr c8 00000000000000000000001\r\nincr c8 -0\r\n"
        + "incr c8 1x\r\nincr c8 -1\r\nget c8\r\n");
  }
  @Test
  void commandsDispatchOnTheirTokenCountAsMemcachedDoes() throws IOException {
    String longKey = "a".repeat(251);
    same("set dt 0 0 1\r\nx\r\nincr dt 1 2\r\nincr dt 1 2 3\r\ntouch dt 1 2\r\ntouch dt 1 2 3\r\n");
    same("touch " + longKey + " 10\r\ndelete " + longKey + "\r\ndelete dt 0 noreply x\r\ndelete dt a b c d\r\n");
    same("verbosity abc\r\nverbosity 1 x\r\nflush_all x y\r\nflush_all 0 1 2\r\nflush_all 0 x\r\n");
    assertEquals(exchange(memcachedPort, "quit a b\r\n"), exchange(kv.port(), "quit a b\r\n"));
  }
  @Test
  void numbersAreReadAsMemcachedReadsThem() throws IOException {
    // exptime and length are kept in an int32_t (modulo 2^32), flags and CAS read by strtoull
    same("set e1 0 2147483648 1\r\nx\r\nget e1\r\nset e3 0 -4294967295 1\r\nx\r\nget e3\r\n"
        + "set e5 0 0 4294967297\r\nx\r\nget e5\r\nset e6 0 0 2147483648\r\nx\r\n"
        + "set e7 +5 +0 +1\r\nx\r\nget e7\r\n");
    same("set e8 0 0 1\r\nx\r\ntouch e8 2147483648\r\nget e8\r\nset e8 0 0 1\r\nx\r\n"
        + "cas e8 0 0 1 18446744073709551615\r\ny\r\ncas e8 0 0 1 +5\r\ny\r\n"
        + "cas e8 0 0 1 18446744073709551616\r\ny\r\n");
    same("set e9 0 0 1\r\nx\r\nflush_all 4294967296\r\nget e9\r\n"
        + "set ea 0 0 1\r\nx\r\nflush_all 2147483648\r\nget ea\r\n");
  }
  @Test
  void theLargestValueDependsOnTheKeyAndFlagsAsInMemcached() throws IOException {
    String longKey = "z".repeat(250);
    for (String[] c : new String[][] {{"z1", "0", "1048515"}, {"z2", "0", "1048516"},
        {"z3", "7", "1048511"}, {"z4", "7", "1048512"}, {longKey, "0", "1048267"}, {longKey, "0", "1048268"}}) {
      int n = Integer.parseInt(c[2]);
      same("set " + c[0] + " " + c[1] + " 0 " + n + "\r\n" + "v".repeat(n) + "\r\nget nothing-" + c[2] + "\r\n");
    }
  }
  @Test
  void anAppendWhoseJoinedItemIsTooLargeIsNotStored() throws IOException {
    same("set ap 0 0 1000\r\n" + "b".repeat(1000) + "\r\nappend ap 0 0 1048000\r\n" + "a".repeat(1_048_000)
        + "\r\nget nothing\r\n");
    same("set ap2 0 0 1\r\nx\r\nprepend ap2 0 0 1048515\r\n" + "a".repeat(1_048_515) + "\r\nget nothing\r\n");
    same("set ap3 5 0 1\r\nx\r\nappend ap3 0 0 1048510\r\n" + "a".repeat(1_048_510) + "\r\nget nothing\r\n");
  }
  @Test
  void noreplyIsTheLastTokenWhateverTheCount() throws IOException {
    same("add  4 2 8 noreply\r\nvvvvvvvv\r\nappend nr2 7 8 noreply\r\nx\r\ncas nr2 1 5 1 noreply\r\nx\r\n"
        + "incr nr2 noreply\r\ntouch nr2 noreply\r\nget nr2\r\n");
  }

  @Test
  void quitClosesTheConnection() throws IOException {
    assertEquals(exchange(memcachedPort, "get x\r\nquit\r\n"), exchange(kv.port(), "get x\r\nquit\r\n"));
  }
}
