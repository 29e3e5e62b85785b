package io.spillway.spring.reactiveadvice;

import io.spillway.api.BudgetExceededException;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.bind.annotation.RestControllerAdvice;
import reactor.core.publisher.Mono;

/**
 * A WebFlux application with the starter and a global exception handler of its own: every
 * exception a handler signals becomes its {@code 500} JSON answer. On Reactor Netty (the starter's
 * tests have Jetty on the class path too).
 */
@SpringBootApplication(excludeName =
    "org.springframework.boot.jetty.autoconfigure.reactive.JettyReactiveWebServerAutoConfiguration")
public class ReactiveAdviceTestApp {

  @RestController
  static class Handlers {
    /** A service-layer BudgetedLock that would outlast the request's budget. */
    @GetMapping("/abort")
    Mono<String> abort() {
      return Mono.error(new BudgetExceededException(5_000_000, 1_000_000));
    }

    @GetMapping("/fail")
    Mono<String> fail() {
      return Mono.error(new IllegalStateException("a bug (expected by the test)"));
    }
  }

  @RestControllerAdvice
  static class GlobalExceptionHandler {
    @ExceptionHandler(Exception.class)
    ResponseEntity<String> any(Exception e) {
      return ResponseEntity.status(500).body("{\"error\":\"handled\"}");
    }
  }
}
