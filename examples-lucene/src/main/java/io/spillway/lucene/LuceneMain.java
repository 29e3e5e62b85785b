package io.spillway.lucene;

import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;

/**
 * {@code ./spillway lucene [--port N] [--scheme spillway|protego|breakwater|seda|none] [--docs N]
 * [--shards N] [--target-ms T] [--updates N] [--warmup N] [--seed S] [--ghz-data FILE] [--mix single|heavy]
 * [--cancel on|off] [--threads N]}:
 * the search service in the foreground. Says on standard error how long indexing and warming up
 * took, prints {@code port N}
 * on standard output once it serves, stops on SIGTERM or Ctrl-C, and exits with status 1 if the
 * server fails (its update stream stopped on an error, {@link LuceneServer#failure}). With {@code --ghz-data FILE} it
 * also writes 10,000 requests of the query mix, as a JSON array for {@code ghz --data-file}.
 */
public final class LuceneMain {

  private static final int GHZ_REQUESTS = 10_000;

  private LuceneMain() { }

  public static void main(String[] args) throws Exception {
    LuceneServer.Builder b = LuceneServer.builder();
    Path ghzData = null;
    String mix = "single";
    long seed = 42;
    for (int i = 0; i < args.length; i++) {
      String flag = args[i];
      if (flag.equals("-h") || flag.equals("--help")) {
        System.out.println("usage: spillway lucene [--port N]"
            + " [--scheme spillway|protego|breakwater|seda|none] [--docs N]"
            + " [--shards N] [--target-ms T] [--updates DOCS_PER_S] [--warmup QUERIES] [--seed S]"
            + " [--ghz-data FILE] [--mix single|heavy] [--cancel on|off] [--threads N]");
        return;
      }
      if (i + 1 >= args.length) {
        fail("missing value after " + flag);
      }
      String v = args[++i];
      try {
        switch (flag) {
          case "--port", "-p" -> b.port(Integer.parseInt(v));
          case "--scheme" -> b.protection(LuceneServer.Protection.parse(v));
          case "--docs" -> b.docs(Integer.parseInt(v));
          case "--shards" -> b.shards(Integer.parseInt(v));
          case "--target-ms" -> b.target(Duration.ofNanos(Math.round(Double.parseDouble(v) * 1e6)));
          case "--updates" -> b.updatesPerSecond(Integer.parseInt(v));
          case "--warmup" -> b.warmup(Integer.parseInt(v));
          case "--seed" -> {
            seed = Long.parseLong(v);
            b.seed(seed);
          }
          case "--ghz-data" -> ghzData = Path.of(v);
          case "--mix" -> {
            if (!v.equals("single") && !v.equals("heavy")) {
              fail("unknown mix '" + v + "'; known: single (default), heavy");
            }
            mix = v;
          }
          case "--threads" -> b.threads(Integer.parseInt(v));
          case "--cancel" -> {
            if (!v.equals("on") && !v.equals("off")) {
              fail("--cancel takes on (default: a search stops when its budget does) or off");
            }
            b.boundedSearches(v.equals("on"));
          }
          default -> fail("unknown option " + flag + " (try --help)");
        }
      } catch (NumberFormatException e) {
        fail("not a number for " + flag + ": " + v);
      } catch (IllegalArgumentException e) {
        fail(e.getMessage());
      }
    }
    LuceneServer server = b.build().start();
    System.err.println("spillway lucene: " + server.describeIndex());
    if (ghzData != null) {
      writeGhzData(server, ghzData, mix, seed);
      System.err.println("spillway lucene: wrote " + GHZ_REQUESTS + " " + mix + " queries to "
          + ghzData);
    }
    // completes with null when the process is stopped, or with the error that failed the server
    CompletableFuture<Throwable> ended = new CompletableFuture<>();
    server.failure().thenAccept(ended::complete);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      SearchEngine engine = server.engine();
      System.err.println("spillway lucene: stopping; " + engine.cancelledSearches()
          + " searches stopped by their budget, result cache " + engine.cache().hits() + " hits, "
          + engine.cache().misses() + " misses");
      server.close();
      ended.complete(null);
    }, "lucene-shutdown"));
    System.out.println("port " + server.port());
    System.out.flush();
    Throwable failure = ended.get();
    if (failure != null) { // logged where it happened; a supervisor restarts the service
      System.err.println("spillway lucene: failed: the update stream stopped on " + failure);
      System.exit(1); // the shutdown hook closes the server
    }
  }

  /** {@code [{"query":"...","k":10}, ...]}: ghz sends an array's messages round robin. */
  static void writeGhzData(LuceneServer server, Path file, String mix, long seed)
      throws IOException {
    QueryMix queries;
    try (ShardedIndex.View view = server.index().acquire()) {
      queries = mix.equals("heavy") ? QueryMix.heavy(view.reader(), server.index().corpus())
          : QueryMix.singleTerms(view.reader());
    }
    SplittableRandom random = new SplittableRandom(seed);
    try (Writer w = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
      w.write("[\n");
      for (int i = 0; i < GHZ_REQUESTS; i++) {
        w.write("{\"query\":\"" + json(queries.next(random)) + "\",\"k\":10}");
        w.write(i + 1 < GHZ_REQUESTS ? ",\n" : "\n");
      }
      w.write("]\n");
    }
  }

  static String json(String s) {
    StringBuilder out = new StringBuilder(s.length() + 8);
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        default -> {
          if (c < 0x20) {
            out.append(String.format("\\u%04x", (int) c));
          } else {
            out.append(c);
          }
        }
      }
    }
    return out.toString();
  }

  private static void fail(String message) {
    System.err.println("spillway lucene: " + message);
    System.exit(2);
  }
}
