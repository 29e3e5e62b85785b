package io.spillway.kv;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;

/**
 * {@code ./spillway kv [--port N] [--memory MB] [--scheme S] [--cores N] [--target-us T]}: a
 * memcached-protocol server in the foreground. Prints {@code port N} once it listens; stops on
 * SIGTERM or Ctrl-C. Any memcached client can use it.
 */
public final class KvMain {

  private KvMain() { }

  public static void main(String[] args) throws Exception {
    KvServer.Builder b = KvServer.builder();
    for (int i = 0; i < args.length; i++) {
      String flag = args[i];
      if (flag.equals("-h") || flag.equals("--help")) {
        System.out.println("usage: spillway kv [--port N] [--memory MB] [--scheme asqm|spillway|none]"
            + " [--cores N] [--target-us T] [--host H]");
        return;
      }
      if (i + 1 >= args.length) {
        fail("missing value after " + flag);
      }
      String v = args[++i];
      try {
        switch (flag) {
          case "--port", "-p" -> b.port(Integer.parseInt(v));
          case "--memory", "-m" -> b.memoryMegabytes(Long.parseLong(v));
          case "--scheme" -> b.protection(KvServer.Protection.parse(v));
          case "--cores", "-t" -> b.cores(Integer.parseInt(v));
          case "--target-us" -> b.target(Duration.ofNanos(Math.round(Double.parseDouble(v) * 1000)));
          case "--host" -> b.host(v);
          default -> fail("unknown option " + flag + " (try --help)");
        }
      } catch (NumberFormatException e) {
        fail("not a number for " + flag + ": " + v);
      } catch (IllegalArgumentException e) {
        fail(e.getMessage());
      }
    }
    KvServer built;
    try {
      built = b.build();
    } catch (IllegalArgumentException e) {
      fail(e.getMessage());
      return;
    }
    // The item memory was just allocated (as memcached -L preallocates); settle it into the old
    // generation now, before serving, rather than in the first collections under load, which
    // would copy it (hundreds of milliseconds for a GiB, measured).
    System.gc();
    KvServer server = built.start();
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      server.close();
      stopped.countDown();
    }, "kv-shutdown"));
    System.out.println("port " + server.port());
    System.out.flush();
    stopped.await();
  }

  private static void fail(String message) {
    System.err.println("spillway kv: " + message);
    System.exit(2);
  }
}
