package io.spillway.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.spillway.spring.internal.HttpCreditStreams;
import io.spillway.spring.reactive.WebFluxTestApp;
import java.io.File;
import java.net.URI;
import java.net.URL;
import java.net.URLClassLoader;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * A WebFlux application as its team builds it: {@code spring-boot-starter-webflux} brings no
 * servlet API, so nothing the starter runs for a reactive server may need one. The starter's own
 * test class path has it (Spring MVC and Jetty are there for the other tests), so the application
 * runs here in a class loader that hides {@code jakarta.servlet}, as that team's class path would.
 */
class WebFluxWithoutServletApiTest {

  @Test
  void aReactiveServerWithoutTheServletApiServesTheCreditStreamAndGatedRequests() throws Exception {
    try (URLClassLoader loader = new WithoutServletApi(testClassPath())) {
      Object app = Class.forName(ReactiveApp.class.getName(), true, loader)
          .getDeclaredConstructor().newInstance();
      try (AutoCloseable running = (AutoCloseable) app) {
        int port = ((IntSupplier) app).getAsInt();
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
            "8").DELETE().build(), HttpResponse.BodyHandlers.discarding()).statusCode())
            .isEqualTo(204);
        assertThat(CompletableFuture.supplyAsync(() -> stream.body().toList())
            .get(30, TimeUnit.SECONDS)).startsWith(": subscribed");
      }
    }
  }

  /** The test's class path (surefire's manifest-only jar included: its Class-Path is followed). */
  private static URL[] testClassPath() throws Exception {
    List<URL> urls = new ArrayList<>();
    for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
      urls.add(new File(entry).toURI().toURL());
    }
    return urls.toArray(URL[]::new);
  }

  /** Loads every class itself, from the class path, except the servlet API's. */
  private static final class WithoutServletApi extends URLClassLoader {
    WithoutServletApi(URL[] urls) {
      super("without-servlet-api", urls, ClassLoader.getPlatformClassLoader());
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
      if (name.startsWith("jakarta.servlet.")) {
        throw new ClassNotFoundException(name);
      }
      return super.loadClass(name, resolve);
    }

    @Override
    public URL getResource(String name) {
      return name.startsWith("jakarta/servlet/") ? null : super.getResource(name);
    }
  }

  /**
   * {@link WebFluxTestApp} started in the loader it was loaded by; the web application type is
   * deduced from that class path, as Boot does for the team's. Shared with the test through
   * JDK types only.
   */
  public static final class ReactiveApp implements IntSupplier, AutoCloseable {
    private ConfigurableApplicationContext context;

    @Override
    public int getAsInt() {
      Thread thread = Thread.currentThread();
      ClassLoader before = thread.getContextClassLoader();
      thread.setContextClassLoader(getClass().getClassLoader());
      try {
        context = new SpringApplicationBuilder(WebFluxTestApp.class)
            .properties("server.port=0", "spring.jmx.enabled=false")
            .run();
        return ((WebServerApplicationContext) context).getWebServer().getPort();
      } finally {
        thread.setContextClassLoader(before);
      }
    }

    @Override
    public void close() {
      if (context != null) {
        context.close();
      }
    }
  }
}
