package io.spillway.spring.credits;

import java.util.concurrent.CompletableFuture;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * A Spring MVC application with the starter and nothing else, on the system clock: credits over
 * HTTP need time to pass (a drained session waits for the server's next pool update, and a
 * request for its expiry), which the other test applications' hand-moved clock does not. On
 * Tomcat, as {@code MvcTestApp}.
 */
@SpringBootApplication(excludeName =
    "org.springframework.boot.jetty.autoconfigure.servlet.JettyServletWebServerAutoConfiguration")
public class CreditsTestApp {

  @RestController
  static class Work {
    @GetMapping("/work")
    String work() {
      return "ok";
    }

    /** Fails: the container's error page answers. */
    @GetMapping("/boom")
    String boom() {
      throw new IllegalStateException("boom");
    }

    /** Refuses with a status: Spring MVC sends the error. */
    @GetMapping("/teapot")
    String teapot() {
      throw new org.springframework.web.server.ResponseStatusException(
          org.springframework.http.HttpStatus.I_AM_A_TEAPOT);
    }

    /** Answered asynchronously, on another thread, through an async re-dispatch. */
    @GetMapping("/async")
    CompletableFuture<String> async() {
      return CompletableFuture.supplyAsync(() -> "ok");
    }

    /**
     * Answered asynchronously with no body: nothing asks for the response's stream, and the
     * container commits it as the request completes.
     */
    @GetMapping("/async-empty")
    CompletableFuture<Void> asyncEmpty() {
      return CompletableFuture.runAsync(() -> { });
    }

    /** Never answered: Spring MVC's async timeout answers for it ({@code 503}). */
    @GetMapping("/async-never")
    org.springframework.web.context.request.async.DeferredResult<String> asyncNever() {
      return new org.springframework.web.context.request.async.DeferredResult<>(50L);
    }
  }
}
