package io.spillway.spring.advice;

import io.spillway.api.BudgetExceededException;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.bind.annotation.RestControllerAdvice;

/**
 * A Spring MVC application with the starter and a global exception handler of its own, as many
 * Spring services have: every exception a handler throws becomes its {@code 500} JSON answer. On
 * Tomcat (the starter's tests have Jetty on the class path too).
 */
@SpringBootApplication(excludeName =
    "org.springframework.boot.jetty.autoconfigure.servlet.JettyServletWebServerAutoConfiguration")
public class AdviceTestApp {

  @RestController
  static class Handlers {
    /** A service-layer BudgetedLock that would outlast the request's budget. */
    @GetMapping("/abort")
    String abort() {
      throw new BudgetExceededException(5_000_000, 1_000_000);
    }

    @GetMapping("/fail")
    String fail() {
      throw new IllegalStateException("a bug (expected by the test)");
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
