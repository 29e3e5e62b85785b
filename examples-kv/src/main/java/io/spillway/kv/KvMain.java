package io.spillway.kv;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;

/**
 * {@code ./spillway kv [--port N] [--memory MB] [--scheme S] [--cores N] [--target-us T]
 * [--frame-port N] [--frame-scheme S] [--frame-stats]}: a memcached-protocol server in the foreground, and with
 * {@code --frame-port} the same store over Spillway's native frame for {@link KvClient}. Prints
 * {@code frame-port N} (if any), then {@code port N} once it listens ({@code port -1} with {@code
 * --port -1}: no text protocol); stops on SIGTERM or Ctrl-C. Any memcached client can use the text
 * port.
 */
public final class KvMain {

  private KvMain() { }

  public static void main(String[] args) throws Exception {
    KvServer.Builder b = KvServer.builder();
    FrameStats stats = null;
    for (int i = 0; i < args.length; i++) {
      String flag = args[i];
      if (flag.equals("--frame-stats")) {
        stats = new FrameStats();
        b.frameMetrics(stats);
        continue;
      }
      if (flag.equals("-h") || flag.equals("--help")) {
        System.out.println("usage: spillway kv [--port N] [--memory MB] [--scheme asqm|spillway|none]"
            + " [--cores N] [--target-us T] [--host H] [--frame-port N] [--frame-scheme protego|breakwater|spillway|none]"
            + " [--frame-stats]");
        System.out.println("  --port -1 serves no text protocol; --frame-port N also serves the native frame (KvClient)");
        System.out.println("  --frame-stats prints the frame gate's decisions and credit pool each second, on stderr");
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
          case "--frame-port" -> b.framePort(Integer.parseInt(v));
          case "--frame-scheme" -> b.frameScheme(KvServer.FrameScheme.parse(v));
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
    if (server.framePort() >= 0) {
      System.out.println("frame-port " + server.framePort());
    }
    System.out.println("port " + (b.hasTextPort() ? server.port() : -1));
    System.out.flush();
    if (stats != null) {
      FrameStats reading = stats;
      Thread.ofPlatform().daemon().name("kv-frame-stats").start(() -> {
        try {
          while (true) {
            Thread.sleep(1_000); // a reading a second for a person or a script to follow
            System.err.println(reading.read());
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      });
    }
    stopped.await();
  }

  private static void fail(String message) {
    System.err.println("spillway kv: " + message);
    System.exit(2);
  }
}
