package io.spillway.kv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * libmemcached's conformance suite, ASCII protocol ({@code memccapable -a}), against the server as
 * {@code ./spillway kv} starts it (Spillway's default protection on). Runs when libmemcached-tools
 * is installed ({@code .ci/run} installs it); skipped otherwise.
 */
@Timeout(300)
class MemccapableTest {

  @Test
  void everyAsciiTestPasses() throws Exception {
    Path tool = Path.of("/usr/bin/memccapable");
    assumeTrue(Files.isExecutable(tool), "memccapable is not installed (apt-get install libmemcached-tools)");
    try (KvServer server = KvServer.builder().host("127.0.0.1").port(0).build().start()) {
      Process p = new ProcessBuilder(tool.toString(), "-h", "127.0.0.1", "-p",
          String.valueOf(server.port()), "-a").redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertTrue(p.waitFor(240, TimeUnit.SECONDS), "memccapable did not finish");
      assertEquals(0, p.exitValue(), out);
      assertTrue(out.contains("All tests passed"), out);
    }
  }
}
