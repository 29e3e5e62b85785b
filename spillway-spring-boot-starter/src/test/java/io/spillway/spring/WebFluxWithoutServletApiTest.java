package io.spillway.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.spillway.spring.internal.HttpCreditStreams;
import io.spillway.spring.reactive.WebFluxTestApp;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarFile;
import java.util.jar.Manifest;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * A WebFlux application as its team builds it: {@code spring-boot-starter-webflux} brings no
 * servlet API, so nothing the starter runs for a reactive server may need one. The starter's own
 * test class path has it (Spring MVC, Tomcat and Jetty are there for the other tests), so the
 * application runs here in a JVM of its own, on the test class path less every jar that holds
 * {@code jakarta.servlet}, as that team's class path would be.
 */
class WebFluxWithoutServletApiTest {

  @Test
  void aReactiveServerWithoutTheServletApiServesTheCreditStreamAndGatedRequests() throws Exception {
    Process app = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java")
        .toString(), "-cp", String.join(File.pathSeparator, classPathWithoutServletApi()),
        ReactiveApp.class.getName()).redirectErrorStream(true).start();
    try {
      BufferedReader out = new BufferedReader(new InputStreamReader(app.getInputStream(),
          StandardCharsets.UTF_8));
      // the bound only ends a start that would otherwise never print its port
      int port = CompletableFuture.supplyAsync(() -> portOf(out)).get(120, TimeUnit.SECONDS);
      assertThat(port).as("the application's port").isPositive();
      Thread.ofPlatform().daemon().start(() -> out.lines().forEach(line -> { }));
      HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

      HttpResponse<String> gated = http.send(HttpRequest.newBuilder(
          URI.create("http://127.0.0.1:" + port + "/budget")).build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(gated.statusCode()).isEqualTo(200);

      // what a Spillway session does first: open its credit stream
      URI credits = URI.create("http://127.0.0.1:" + port + HttpCreditStreams.PATH);
      HttpResponse<Stream<String>> stream = http.send(HttpRequest.newBuilder(credits)
          .header(SpillwayHttpHeaders.SESSION, "8").GET().build(),
          HttpResponse.BodyHandlers.ofLines());
      assertThat(stream.statusCode()).isEqualTo(200);
      assertThat(http.send(HttpRequest.newBuilder(credits).header(SpillwayHttpHeaders.SESSION,
          "8").header(SpillwayHttpHeaders.STREAM_KEY, stream.headers()
              .firstValue(SpillwayHttpHeaders.STREAM_KEY).orElseThrow()).DELETE().build(),
          HttpResponse.BodyHandlers.discarding()).statusCode()).isEqualTo(204);
      assertThat(CompletableFuture.supplyAsync(() -> stream.body().toList())
          .get(30, TimeUnit.SECONDS)).startsWith(": subscribed");
    } finally {
      app.destroy();
      if (!app.waitFor(30, TimeUnit.SECONDS)) {
        app.destroyForcibly();
      }
    }
  }

  /** The port the application prints, or -1 if its output ends first. */
  private static int portOf(BufferedReader out) {
    try {
      for (String line; (line = out.readLine()) != null; ) {
        if (line.startsWith(ReactiveApp.PORT)) {
          return Integer.parseInt(line.substring(ReactiveApp.PORT.length()));
        }
      }
      return -1;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * The test's class path, the entries of surefire's manifest-only jar included, less the jars
   * that hold the servlet API (its own jar, and Tomcat's core, which bundles it).
   */
  private static List<String> classPathWithoutServletApi() throws IOException {
    List<String> entries = new ArrayList<>();
    for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
      entries.add(entry);
      if (entry.endsWith(".jar")) {
        try (JarFile jar = new JarFile(entry)) {
          Manifest manifest = jar.getManifest();
          String more = manifest == null ? null
              : manifest.getMainAttributes().getValue("Class-Path");
          if (more != null) {
            for (String url : more.trim().split("\\s+")) {
              entries.add(Path.of(URI.create(url)).toString());
            }
          }
        }
      }
    }
    List<String> kept = new ArrayList<>();
    for (String entry : entries) {
      if (!holdsServletApi(entry)) {
        kept.add(entry);
      }
    }
    return kept;
  }

  private static boolean holdsServletApi(String entry) throws IOException {
    if (!entry.endsWith(".jar")) {
      return Files.exists(Path.of(entry, "jakarta", "servlet"));
    }
    try (JarFile jar = new JarFile(entry)) {
      return jar.getEntry("jakarta/servlet/Servlet.class") != null;
    }
  }

  /** {@link WebFluxTestApp} on a free port; prints it, and runs until its input ends. */
  public static final class ReactiveApp {
    static final String PORT = "reactive-app-port=";

    public static void main(String[] args) throws IOException {
      ConfigurableApplicationContext context = new SpringApplicationBuilder(WebFluxTestApp.class)
          .properties("server.port=0", "spring.jmx.enabled=false").run(args);
      System.out.println(PORT + ((WebServerApplicationContext) context).getWebServer().getPort());
      System.out.flush();
      while (System.in.read() != -1) {
        // runs until the test closes its input or ends the process
      }
      context.close();
    }
  }
}
