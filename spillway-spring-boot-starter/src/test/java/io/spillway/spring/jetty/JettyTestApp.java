package io.spillway.spring.jetty;

import io.spillway.api.RequestBudget;
import io.spillway.spring.app.ManualTicker;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * A Spring MVC application on Jetty with only the starter added. Tomcat is on the starter's test
 * class path too; its auto-configuration is excluded, as an application that swaps Tomcat for
 * Jetty excludes it from its dependencies, so Boot's own Jetty auto-configuration builds the
 * server. Its one test hook is the clock, a {@link ManualTicker} bean.
 */
@SpringBootApplication(excludeName =
    "org.springframework.boot.tomcat.autoconfigure.servlet.TomcatServletWebServerAutoConfiguration")
public class JettyTestApp {

  /** Armed by a test: each {@code /work?hold=true} counts itself in, then waits on it. */
  public static final AtomicReference<CountDownLatch> HOLD = new AtomicReference<>();
  public static final AtomicInteger ENTERED = new AtomicInteger();

  @Bean
  ManualTicker ticker() {
    return new ManualTicker();
  }

  @RestController
  static class Work {

    /** With {@code hold}, waits for the test. */
    @GetMapping("/work")
    String work(@RequestParam(name = "hold", defaultValue = "false") boolean hold)
        throws InterruptedException {
      if (hold) {
        ENTERED.incrementAndGet();
        if (!HOLD.get().await(30, TimeUnit.SECONDS)) {
          throw new IllegalStateException("the test never released the handler");
        }
      }
      return "ok";
    }

    /** Whether the request runs on a virtual thread. */
    @GetMapping("/thread")
    boolean virtual() {
      return Thread.currentThread().isVirtual();
    }

    /** The remaining budget bound for this request, -1 if none. */
    @GetMapping("/budget")
    long budget() {
      RequestBudget b = RequestBudget.currentOrNull();
      return b == null ? -1 : b.remainingNanos();
    }
  }
}
